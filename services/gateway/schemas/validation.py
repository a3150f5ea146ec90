"""Requests that do not fit the schemas, explained: "field: what to fix" (REST, MCP and import alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.names import AGENT_PATTERN, AGENT_RULE


def describe_validation(errors: Sequence[Any], *, where: str = "request") -> str:
    """Pydantic errors as "field: what to fix; ..." (REST, MCP and import alike), without pydantic's URLs."""
    parts = []
    for item in errors:
        loc = tuple(item.get("loc", ()))
        if loc[:1] == ("body",) and len(loc) > 1:  # a REST body's fields are named as in MCP and import
            loc = loc[1:]
        location = ".".join(str(part) for part in loc) or where
        parts.append(f"{location}: {_fix(item)}")
    return "; ".join(parts) or f"The {where} is invalid."


def _fix(item: Any) -> str:
    kind = item.get("type", "")
    if kind == "extra_forbidden":
        return "is not a known field; check its spelling against the schema, or leave it out."
    if kind == "missing":
        return "is required."
    if kind == "string_pattern_mismatch" and (item.get("ctx") or {}).get("pattern") == f"^{AGENT_PATTERN}$":
        return f"{str(item.get('input'))[:40]!r} is not an agent id: {AGENT_RULE}"
    return str(item.get("msg", "is invalid")).rstrip(".") + "."
