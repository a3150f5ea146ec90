"""What tools/list publishes of a tool, kept small because every agent pays for it in context on every session.

The input schema says what the SDK derives from the signature (types, limits, enums, one description per field) without
pydantic's restatements: no titles (the property names say it), no ``default: null`` (an optional argument is one
left out), and a value-or-null as one ``type`` list instead of an ``anyOf``. Annotations leave out the hints that
say what MCP assumes anyway. No output schema is published (it is optional in MCP): answers are compact JSON
(``answers``) whose fields the descriptions name.
"""

from __future__ import annotations

from typing import Any

from mcp.types import ToolAnnotations

# What MCP assumes of a tool whose annotations leave a hint out (the specification's ToolAnnotations).
_ASSUMED_HINTS = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False, "open_world_hint": True}
_NULL = {"type": "null"}
_SCHEMAS_BY_NAME = ("properties", "$defs")  # keywords whose keys are names, not keywords
_SCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` accepting the same values in fewer bytes."""
    lean: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" or (key == "default" and value is None):
            continue
        if key in _SCHEMAS_BY_NAME:
            lean[key] = {name: lean_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA and isinstance(value, dict):
            lean[key] = lean_schema(value)
        elif key in _SCHEMA_LISTS:
            lean[key] = [lean_schema(sub) for sub in value]
        else:
            lean[key] = value
    return _nullable(lean)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}]}`` as X with ``"null"`` in its type (and enum), when X has one type."""
    options = schema.get("anyOf")
    if not options or len(options) != 2 or _NULL not in options:
        return schema
    value = options[0] if options[1] == _NULL else options[1]
    if not isinstance(value.get("type"), str) or set(value) & {"anyOf", "oneOf", "allOf", "const"}:
        return schema
    merged = {**value, "type": [value["type"], "null"]}
    if "enum" in merged:
        merged["enum"] = [*merged["enum"], None]
    rest = {key: item for key, item in schema.items() if key != "anyOf"}
    return {**merged, **rest}


def lean_annotations(annotations: ToolAnnotations | None) -> ToolAnnotations | None:
    """``annotations`` without the hints MCP assumes when they are left out."""
    if annotations is None:
        return None
    assumed = {name: None for name, value in _ASSUMED_HINTS.items() if getattr(annotations, name) == value}
    return annotations.model_copy(update=assumed)
