"""Checks a MemoryInput before anything is stored: required fields, sizes, types and allowed values."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

from engram.config import Settings
from engram.errors import InvalidArgument
from engram.model import (
    CONFIDENCES,
    IMPORTANCES,
    MAX_METADATA_DEPTH,
    MEMORY_TYPES,
    SENSITIVITIES,
    Caller,
    MemoryInput,
)
from engram.names import AGENT_RULE, is_valid_agent

MAX_LIST_ITEMS = 32
MAX_LABEL_CHARS = 64
MAX_SUMMARY_CHARS = 2000
MAX_FIELD_CHARS = 256
HANDOFF = "handoff"  # the memory type of a handoff
TEAM_TAG_PREFIX = "team:"  # every memory of a team carries the tag team:<team>
# The times Engram stores: what the wire (a protobuf Timestamp) carries, from 0001-01-01T00:00:00Z up to (not
# including) the year 10000. RFC 3339 also writes year 0000 and offsets that cross either end: those are refused,
# never moved to the nearest end, so a stored time is always the time given.
EARLIEST_TIME = -62135596800.0  # 0001-01-01T00:00:00Z
END_OF_TIME = 253402300800.0  # 10000-01-01T00:00:00Z, the first moment after the last one stored
TIME_RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
# The whole numbers every index adapter stores as they are: Qdrant's payload integers are signed 64-bit (Qdrant
# Edge turns a larger one into an inexact float; a Qdrant server's gRPC API cannot carry it at all).
MIN_STORED_INT = -(2**63)
MAX_STORED_INT = 2**63 - 1
# Versions and counts: exact in every JSON number (JavaScript's, a double), as the gateway's MAX_VERSION.
MAX_COUNT = 2**53 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")  # a code point JSON text decodes to only from a lone \\uD8xx escape
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
MAX_PATH_KEY_CHARS = 40  # a key named in an error is cut here: a key that long may be a pasted secret


@dataclass(slots=True)
class Limits:
    max_content_bytes: int
    max_metadata_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(max_content_bytes=settings.max_content_bytes, max_metadata_bytes=settings.max_metadata_bytes)


@dataclass(slots=True)
class CleanInput:
    """A validated input: enums resolved to their defaults, labels normalised, metadata parsed."""

    draft: MemoryInput
    metadata: dict[str, Any] = field(default_factory=dict)


def validate(draft: MemoryInput, limits: Limits) -> CleanInput:
    """Returns the cleaned input or raises InvalidArgument naming the field and what to fix."""
    for item in fields(draft):
        value = getattr(draft, item.name)
        # Texts and lists; the metadata once parsed (its paths named: metadata.x), the times by check_time.
        if isinstance(value, str | list) and item.name != "metadata_json":
            check_storable(item.name, value)
    content = draft.content.strip() if isinstance(draft.content, str) else ""
    if not content:
        raise InvalidArgument("content", "is required: the text of the memory, e.g. 'The API uses OAuth2'.")
    size = len(content.encode())
    if size > limits.max_content_bytes:
        raise InvalidArgument(
            "content",
            f"is {size} bytes; the limit is {limits.max_content_bytes}. Split it into several memories "
            "or put the details in a summary.",
        )
    if len(draft.summary) > MAX_SUMMARY_CHARS:
        raise InvalidArgument("summary", f"is longer than {MAX_SUMMARY_CHARS} characters.")
    context_size = len(draft.context.encode())
    if context_size > limits.max_content_bytes:
        raise InvalidArgument(
            "context",
            f"is {context_size} bytes; the limit is {limits.max_content_bytes}. Keep the text that situates the "
            "memory, e.g. the preceding turn.",
        )
    draft.content = content
    draft.team = draft.team.strip()
    draft.memory_type = _choice("memory_type", draft.memory_type, MEMORY_TYPES, "general")
    draft.confidence = _choice("confidence", draft.confidence, CONFIDENCES, "stated")
    draft.importance = _choice("importance", draft.importance, IMPORTANCES, "normal")
    draft.sensitivity = _choice("sensitivity", draft.sensitivity, SENSITIVITIES, "normal")
    # The team's own tag is as long as the team may be (it is added for the team, not written as a label).
    draft.tags = _labels("tags", draft.tags, exempt=team_tag(draft.team))
    draft.topics = _labels("topics", draft.topics)
    for name in ("team", "project", "conversation_id", "handoff_target"):
        value = getattr(draft, name)
        if len(value) > MAX_FIELD_CHARS:
            raise InvalidArgument(name, f"is longer than {MAX_FIELD_CHARS} characters.")
    if draft.handoff_target and not is_valid_agent(draft.handoff_target):
        # The same rule as every agent id (the X-Engram-Agent-ID header, API keys): the target must be able to act.
        raise InvalidArgument("handoff_target", f"{draft.handoff_target[:40]!r} is not an agent id: {AGENT_RULE}")
    for name in ("valid_at", "invalid_at", "expires_at"):
        check_time(name, getattr(draft, name))
    if draft.valid_at is not None and draft.invalid_at is not None and draft.invalid_at < draft.valid_at:
        raise InvalidArgument("invalid_at", "is earlier than valid_at.")
    return CleanInput(draft=draft, metadata=_metadata(draft.metadata_json, limits.max_metadata_bytes))


def check_time(field: str, moment: float | None, given: object = None) -> float | None:
    """``moment`` (epoch seconds) when it is None or a time Engram stores; otherwise raises InvalidArgument naming
    ``field`` (and quoting ``given``, the value as the caller wrote it, when there is one)."""
    if moment is None:
        return None
    if not math.isfinite(moment):
        raise InvalidArgument(field, "must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z.")
    if not EARLIEST_TIME <= moment < END_OF_TIME:
        quoted = f"{given!r} " if given is not None else ""
        raise InvalidArgument(
            field, f"{quoted}is outside the times Engram stores, {TIME_RANGE} (UTC); give a time in that range."
        )
    return moment


def check_handoff(draft: MemoryInput, caller: Caller) -> None:
    """A new memory is a handoff exactly when it names a handoff_target, and never one to the agent writing it.

    Called before validate(), which resolves an empty memory_type to the default and so hides whether one was given.
    """
    given = _normal(draft.memory_type)
    target = draft.handoff_target
    if not target:
        if given == HANDOFF:
            raise InvalidArgument(
                "handoff_target", "is required for a memory of type 'handoff': the agent that takes the work over."
            )
        return
    if given not in ("", HANDOFF):
        raise InvalidArgument(
            "memory_type",
            f"is '{given}', but a memory with a handoff_target is a handoff: leave memory_type empty or set it to "
            "'handoff' (or drop handoff_target to save a plain memory).",
        )
    if target in (caller.agent_id, caller.identity):
        raise InvalidArgument("handoff_target", f"is you ('{target}'); hand the work over to another agent.")


def team_tag(team: str) -> str:
    """The tag every memory of ``team`` carries ("" for no team)."""
    return f"{TEAM_TAG_PREFIX}{team}" if team else ""


def with_team_tag(tags: list[str], team: str, *, previous_team: str = "") -> list[str]:
    """``tags`` with the tag of ``team`` (once), without the tag of ``previous_team`` when the memory left it.

    Tags the caller wrote, other teams' included, stay as written.
    """
    left = team_tag(previous_team) if previous_team != team else ""
    out = [tag for tag in tags if not left or tag != left]
    wanted = team_tag(team)
    if wanted and wanted not in out:
        out.append(wanted)
    if len(out) > MAX_LIST_ITEMS:
        raise InvalidArgument(
            "tags",
            f"has {len(out)} items with the automatic '{wanted}' tag; at most {MAX_LIST_ITEMS} are allowed. "
            "Remove one.",
        )
    return out


def capped_context(text: str, limits: Limits) -> str:
    """A context Engram derives, cut (at a character boundary) to the size allowed for a context a caller gives."""
    data = text.encode()
    if len(data) <= limits.max_content_bytes:
        return text
    return data[: limits.max_content_bytes].decode(errors="ignore")


def _normal(value: str) -> str:
    return (value or "").strip().lower().replace("_", "-")


def _choice(name: str, value: str, allowed: tuple[str, ...], default: str) -> str:
    value = _normal(value)
    if not value:
        return default
    if value not in allowed:
        raise InvalidArgument(name, f"'{value}' is not one of: {', '.join(allowed)}.")
    return value


def _labels(name: str, values: list[str], *, exempt: str = "") -> list[str]:
    """Labels stripped, deduplicated and bounded; ``exempt`` (when not empty) may be longer than a label."""
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidArgument(name, "must be a list of strings.")
    cleaned: list[str] = []
    for position, value in enumerate(values, start=1):
        value = value.strip()
        if not value:
            continue
        if len(value) > MAX_LABEL_CHARS and not (exempt and value == exempt):
            # Named by position, not echoed: a label that long may be a pasted secret.
            raise InvalidArgument(name, f"item {position} is longer than {MAX_LABEL_CHARS} characters.")
        if value not in cleaned:
            cleaned.append(value)
    if len(cleaned) > MAX_LIST_ITEMS:
        raise InvalidArgument(name, f"has {len(cleaned)} items; at most {MAX_LIST_ITEMS} are allowed.")
    return cleaned


def _metadata(raw: str, limit: int) -> dict[str, Any]:
    if not raw:
        return {}
    if len(raw.encode()) > limit:
        raise InvalidArgument("metadata", f"is larger than {limit} bytes as JSON.")
    # Depth is checked on the text, before parsing: a deeply nested document must be refused, not stored and
    # then unreadable (and parsing it could itself exhaust the recursion limit).
    depth = raw_json_depth(raw)
    if depth > MAX_METADATA_DEPTH:
        raise InvalidArgument(
            "metadata", f"is nested {depth} levels deep; at most {MAX_METADATA_DEPTH} are allowed. Flatten it."
        )
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InvalidArgument("metadata", f"is not valid JSON ({e.msg}).") from e
    except ValueError as e:  # e.g. a whole number of more than 4300 digits, which Python refuses to read
        raise InvalidArgument("metadata", f"is not valid JSON ({e}).") from e
    if not isinstance(value, dict):
        raise InvalidArgument("metadata", "must be a JSON object of key-value pairs.")
    check_storable("metadata", value)
    return value


def check_storable(field: str, value: Any) -> None:
    """Raises InvalidArgument naming the path (``metadata.x``, ``tags[2]``) of the first value inside ``value`` (a
    JSON-like value, nested to any depth) that no index can store: a number that is not finite (NaN, Infinity,
    -Infinity, or a literal beyond the float range such as 1e400), a whole number beyond 64 bits, or text with a
    lone UTF-16 surrogate. Python's JSON parsers accept all of them, the log carries them, and the index then
    refuses the entry: refused at every edge, nothing stored can stop the index."""
    # No recursion, and a value's path is spelled out only for the one refused: each item keeps its key and its
    # parent's place, so a value nested past every limit is walked in time linear in its size.
    stack: list[tuple[Any, _Place]] = [(value, None)]
    while stack:
        item, place = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise InvalidArgument(_path(field, place), _SURROGATE_PROBLEM)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidArgument(_path(field, place), _non_finite(item))
        elif isinstance(item, int):
            if not MIN_STORED_INT <= item <= MAX_STORED_INT:
                raise InvalidArgument(
                    _path(field, place), f"is a whole number beyond 64 bits; the index stores integers from "
                    f"{MIN_STORED_INT} to {MAX_STORED_INT}. Send a larger one as a string."
                )  # fmt: skip
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and _SURROGATE.search(key):
                    raise InvalidArgument(_path(field, place), f"has a key with {_SURROGATE_PROBLEM[4:]}")
            stack.extend((child, (str(key), place)) for key, child in reversed(item.items()))
        elif isinstance(item, list | tuple):
            stack.extend((child, (index, place)) for index, child in reversed(list(enumerate(item))))


# Where a value sits: its key (or list index) and its container's place; None for the value checked itself.
_Place = tuple[str | int, "_Place"] | None
MAX_PATH_CHARS = 200  # a path longer than this is shown by its start and its end


def _path(field: str, place: _Place) -> str:
    steps: list[str | int] = []
    while place is not None:
        step, place = place
        steps.append(step)
    path = field
    for step in reversed(steps):
        path = f"{path}[{step}]" if isinstance(step, int) else child_path(path, step)
        if len(path) > 4 * MAX_PATH_CHARS:  # a path this long is cut below anyway: stop building it
            break
    if len(path) <= MAX_PATH_CHARS:
        return path
    return f"{path[: MAX_PATH_CHARS // 2]}...{_tail(field, steps)}"


def _tail(field: str, steps: list[str | int]) -> str:
    """The last steps of a path (``steps`` innermost first), as they are written at its end."""
    tail = ""
    for step in steps[:8]:
        tail = (f"[{step}]" if isinstance(step, int) else child_path("", step)) + tail
        if len(tail) > MAX_PATH_CHARS // 2:
            break
    return tail


def check_fields(path: str, value: Any) -> None:
    """Raises InvalidArgument naming ``path.field`` (``memory.access_count``) for the first field of the dataclass
    ``value``, or of one nested in it, whose value is not of the type it declares (str, int, float, bool, a list or
    dict of them, a nested dataclass, or None where allowed). A dataclass built from JSON a caller wrote (a device's
    pushed memory) holds whatever the JSON held: a float count or a list for a text is refused here, not stored and
    then unreadable."""
    hints = _hints(type(value))
    for item in fields(value):
        _check_type(f"{path}.{item.name}", getattr(value, item.name), hints[item.name])


_HINTS: dict[type, dict[str, Any]] = {}  # the field types of each dataclass checked, resolved once


def _hints(kind: type) -> dict[str, Any]:
    found = _HINTS.get(kind)
    if found is None:
        found = _HINTS[kind] = typing.get_type_hints(kind)
    return found


def _check_type(path: str, value: Any, hint: Any) -> None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        hint = next(a for a in args if a is not type(None))  # the model's unions are "X | None"
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        if not isinstance(value, list):
            raise InvalidArgument(path, f"must be a list, not {_json_type(value)}.")
        for index, item in enumerate(value):
            _check_type(f"{path}[{index}]", item, args[0] if args else Any)
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise InvalidArgument(path, f"must be a JSON object, not {_json_type(value)}.")
        return
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, hint):  # built by from_dict; anything else was not an object
            raise InvalidArgument(path, f"must be a JSON object, not {_json_type(value)}.")
        check_fields(path, value)
        return
    fits = {
        str: isinstance(value, str),
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, int | float) and not isinstance(value, bool),
    }.get(hint, True)
    if not fits:
        wanted = {str: "text", bool: "true or false", int: "a whole number", float: "a number"}[hint]
        raise InvalidArgument(path, f"must be {wanted}, not {_json_type(value)}.")


def _json_type(value: Any) -> str:
    """What a value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list | tuple) else "an object"


_SURROGATE_PROBLEM = (
    "has a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), which is not text; send valid Unicode."
)


def _non_finite(number: float) -> str:
    if math.isnan(number):
        written = "NaN"
    else:  # 1e400 and the like are read as infinite too
        written = "Infinity" if number > 0 else "-Infinity"
        written += " (or a number too large for a double, such as 1e400)"
    return (
        f"is {written}; JSON numbers are finite and the index refuses any other. Send a finite number, null, or "
        "the value as a string."
    )


def child_path(path: str, key: str) -> str:
    """The path of ``key`` in the object at ``path``: ``metadata.x``, or ``metadata["a b"]`` for a key that is not a
    plain name (quoted as JSON, cut to MAX_PATH_KEY_CHARS, so that no error quotes a control character or a secret)."""
    if len(key) <= MAX_PATH_KEY_CHARS and _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}"
    shown = key if len(key) <= MAX_PATH_KEY_CHARS else key[: MAX_PATH_KEY_CHARS - 3] + "..."
    return f"{path}[{json.dumps(shown)}]"


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def raw_json_depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON text, counted outside strings, without parsing it."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_JSON_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest
