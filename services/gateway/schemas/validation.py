"""Requests that do not fit the schemas, explained: "field: what to fix" (REST, MCP and import alike)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from engram.names import AGENT_PATTERN, AGENT_RULE

# What the JSON parser's complaints mean, in the words of someone writing JSON by hand (jiter's messages start so).
JSON_PROBLEMS = (
    ("expected ident", "a word outside double quotes (text goes in double quotes; true, false and null are "
                       "lowercase)"),
    ("expected value", "something that is not a JSON value (a memory is one JSON object, such as "
                       '{"content": "Use pnpm, not npm"})'),
    ("trailing comma", "a comma before a closing } or ] (remove it)"),
    ("key must be a string", 'a field name without double quotes (write "content", not content or \'content\')'),
    ("EOF while parsing", "the end before the JSON closes (a } or a closing quote is missing, or a memory was "
                          "split over several lines; each must be one whole line)"),
    ("trailing characters", "more text after the JSON object ends (one object per line)"),
    ("expected `:`", "a field name without a colon after it"),
    ("expected `,` or `}`", "a missing comma between two fields, or a missing }"),
    ("expected `,` or `]`", "a missing comma between two list items, or a missing ]"),
    ("control character", "a tab or line break inside a string (write it as \\t or \\n)"),
    ("invalid escape", "a backslash that starts no JSON escape (write a backslash itself as \\\\)"),
    ("invalid unicode", "bytes that are not UTF-8 text (save the file as UTF-8)"),
)  # fmt: skip
_POSITION = re.compile(r" at line (\d+) column (\d+)$")
_WHOLE_VALUE_TYPES = frozenset({"model_type", "model_attributes_type", "dict_type"})


def describe_validation(errors: Sequence[Any], *, where: str = "request") -> str:
    """Pydantic errors as "field: what to fix; ..." (REST, MCP and import alike), without pydantic's URLs. A body
    that is not JSON, or not an object, is described as a whole in plain words, not in the parser's."""
    parts = []
    for item in errors:
        loc = tuple(item.get("loc", ()))
        if loc[:1] == ("body",) and len(loc) > 1:  # a REST body's fields are named as in MCP and import
            loc = loc[1:]
        if item.get("type") == "json_invalid":
            parts.append(not_json(str((item.get("ctx") or {}).get("error", "")), item.get("input"), where=where))
        elif not loc and item.get("type") in _WHOLE_VALUE_TYPES:
            parts.append(f"The {where} is JSON but not an object: write {{...}} with at least a content field.")
        else:
            location = ".".join(str(part) for part in loc) or where
            parts.append(f"{location}: {_fix(item)}")
    return "; ".join(parts) or f"The {where} is invalid."


def not_json(error: str, raw: object = None, *, where: str = "line") -> str:
    """The JSON parser's ``error`` ("expected ident at line 1 column 16") in plain words, with where it is."""
    position = _POSITION.search(error)
    problem = error[: position.start()] if position else error
    at = ""
    if position:
        line, column = position.groups()
        at = f" at column {column}" if where == "line" or line == "1" else f" at line {line}, column {column}"
    if isinstance(raw, str | bytes) and (raw[:1] == "\ufeff" or raw[:3] == b"\xef\xbb\xbf"):
        return f"The {where} is not JSON: it starts with a byte-order mark; save the file as UTF-8 without one."
    meaning = next((text for start, text in JSON_PROBLEMS if problem.startswith(start)), problem)
    return f"The {where} is not JSON{at}: {meaning}."


def _fix(item: Any) -> str:
    kind = item.get("type", "")
    if kind == "extra_forbidden":
        return "is not a known field; check its spelling against the schema, or leave it out."
    if kind == "missing":
        return "is required."
    if kind == "string_pattern_mismatch" and (item.get("ctx") or {}).get("pattern") == f"^{AGENT_PATTERN}$":
        return f"{str(item.get('input'))[:40]!r} is not an agent id: {AGENT_RULE}"
    return str(item.get("msg", "is invalid")).rstrip(".") + "."
