"""Bounds on what a hook takes in: the bytes read from the agent, each field of the payload, its nesting.

An agent may hand a hook anything (a 50 MB tool output, JSON nested 100,000 deep): the hook reads at most
MAX_INPUT_BYTES (the rest is read and dropped, so the agent's write never blocks), keeps the complete fields of a
payload cut there, and cuts every string, list and nesting level beyond its bound with a marker saying so. Standard
library only, imported before the hook forks."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported: it costs the hook ~2 ms
if TYPE_CHECKING:
    from typing import Any, BinaryIO

MAX_INPUT_BYTES = 4 * 1024 * 1024  # of one payload; an agent's real ones are a few KB, a large Write a few MB
MAX_FIELD_CHARS = 64 * 1024  # of one string (its start and end are kept: an error is usually at the end)
MAX_ITEMS = 1000  # of one list or object
MAX_DEPTH = 32  # nesting levels
DRAIN_CHUNK = 1024 * 1024
CUT = "[cut by Engram's hook: {what}]"
INPUT_CUT = "_engram_input_cut"  # set in a payload read only in part (over MAX_INPUT_BYTES, or nested too deeply)


def read_input(stream: BinaryIO) -> tuple[bytes, int]:
    """The first MAX_INPUT_BYTES + 1 bytes of the stream (one more than the bound: the caller sees the cut), and its
    whole size; the rest is read in chunks and dropped."""
    head = stream.read(MAX_INPUT_BYTES + 1) or b""
    total = len(head)
    while len(head) > MAX_INPUT_BYTES and (chunk := stream.read(DRAIN_CHUNK)):
        total += len(chunk)
    return head, total


def payload(raw: bytes, total: int | None = None) -> dict[str, Any]:
    """The hook's JSON object, bounded ({} for anything that is no object). A payload over MAX_INPUT_BYTES, or one
    too deeply nested to parse, keeps its complete top-level fields; the field where it was cut says so."""
    import json  # here, not at the top: json imports re (milliseconds the agent would wait for read_input)

    size = len(raw) if total is None else total
    text = raw[:MAX_INPUT_BYTES].decode("utf-8", errors="replace")
    if not text.strip():
        return {}
    data: Any
    if size > MAX_INPUT_BYTES:
        data = salvage(text, f"the input was {size} bytes, over {MAX_INPUT_BYTES}") | {INPUT_CUT: True}
    else:
        try:
            data = json.loads(text)
        except RecursionError:
            data = salvage(text, "nested too deeply to read") | {INPUT_CUT: True}
        except ValueError:
            return {}
    return bounded(data) if isinstance(data, dict) else {}


def salvage(text: str, why: str) -> dict[str, Any]:
    """The complete top-level fields of a JSON object that cannot be read whole; the first one that cannot be read
    becomes a marker, and reading stops there."""
    import json

    decoder = json.JSONDecoder()
    out: dict[str, Any] = {}
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return out
    at += 1
    while True:
        at = _skip(text, at)
        try:
            key, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return out
        at = _skip(text, at)
        if not isinstance(key, str) or not text.startswith(":", at):
            return out
        try:
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
        except (ValueError, RecursionError):
            out[key] = CUT.format(what=why)
            return out
        out[key] = value
        at = _skip(text, at)
        if not text.startswith(",", at):
            return out
        at += 1


def bounded(value: Any, depth: int = 0) -> Any:
    """The value with every string over MAX_FIELD_CHARS, list or object over MAX_ITEMS and level over MAX_DEPTH cut,
    each cut said by a marker."""
    if isinstance(value, str):
        return cut_text(_encodable(value))
    if isinstance(value, dict | list) and depth >= MAX_DEPTH:
        return CUT.format(what=f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        items = list(value.items())
        out = {_encodable(str(k)[:MAX_FIELD_CHARS]): bounded(v, depth + 1) for k, v in items[:MAX_ITEMS]}
        if len(items) > MAX_ITEMS:
            out["_cut"] = CUT.format(what=f"{len(items) - MAX_ITEMS} more fields")
        return out
    if isinstance(value, list):
        kept = [bounded(v, depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            kept.append(CUT.format(what=f"{len(value) - MAX_ITEMS} more items"))
        return kept
    return value


def _encodable(text: str) -> str:
    """The text with lone surrogates (JSON's "\\ud800", which json.loads keeps) as "?": written as UTF-8 they raised
    in the session file and the spool, and the capture was lost."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode()
    return text


def cut_text(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """The text within ``limit`` characters: its start and its end, the middle replaced by a marker."""
    if len(text) <= limit:
        return text
    marker = "\n" + CUT.format(what=f"{len(text) - limit} characters") + "\n"
    head = max(limit // 4, 0)
    tail = max(limit - head - len(marker), 0)
    return text[:head] + marker + (text[-tail:] if tail else "")


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
