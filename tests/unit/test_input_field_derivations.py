"""An input field of a memory is written in four places (the proto, engram.model.MemoryInput, the gateway's save
request, validation); everything else is derived from them. These checks name the derivation that drifted without a
node; tests/integration/test_input_fields.py round-trips every field through one."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any
from unittest.mock import MagicMock

import pytest

from engram.config import Settings
from engram.model import (
    FIXED_INPUTS,
    INPUT_ONLY,
    JSON_SUFFIX,
    STORED_INPUTS,
    UPDATABLE,
    Memory,
    MemoryInput,
    input_of,
    stored_name,
)
from engram.services.gateway.mcp.published import lean_schema
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.schemas.requests import UPDATE_FIELDS, SaveRequest, SupersedeRequest, UpdateRequest

INPUTS = [f.name for f in dataclasses.fields(MemoryInput)]


def test_the_save_request_has_one_field_per_input_field_named_as_stored() -> None:
    assert set(SaveRequest.model_fields) == {stored_name(name) for name in INPUTS}


def test_an_update_may_change_every_input_field_but_the_fixed_ones() -> None:
    assert set(UPDATABLE) == set(INPUTS) - set(FIXED_INPUTS)
    assert set(UPDATE_FIELDS) == {stored_name(name) for name in UPDATABLE}
    assert list(UpdateRequest.model_fields) == [*UPDATE_FIELDS, "expected_version"]


def test_a_memory_holds_every_input_field_but_the_input_only_ones() -> None:
    memory_fields = {f.name for f in dataclasses.fields(Memory)}
    assert set(STORED_INPUTS) == set(INPUTS) - set(INPUT_ONLY)
    assert all(stored_name(name) in memory_fields for name in STORED_INPUTS)


def test_input_of_carries_every_value_a_memory_holds() -> None:
    hints = typing.get_type_hints(Memory)
    values: dict[str, Any] = {}
    for position, name in enumerate(stored_name(name) for name in STORED_INPUTS):
        kind = hints[name]
        values[name] = (
            {"key": name} if kind == dict[str, Any]
            else [name] if kind == list[str]
            else 1000.0 + position if kind == float | None
            else f"{name}-value"
        )  # fmt: skip
    draft = input_of(Memory(id="m", namespace="n", owner_agent="a", **values))
    for name in STORED_INPUTS:
        got = getattr(draft, name)
        if name.endswith(JSON_SUFFIX):
            assert got == f'{{"key": "{stored_name(name)}"}}', name
        else:
            assert got == values[name], name


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "model", "own"),
    [("save_memory", SaveRequest, []), ("update_memory", UpdateRequest, ["id"]),
     ("supersede_memory", SupersedeRequest, ["old_id"])],
)  # fmt: skip
async def test_a_tool_that_writes_publishes_its_request_fields_as_its_arguments(
    tool: str, model: type, own: list[str]
) -> None:
    server = build_mcp(MagicMock(), MagicMock(), MagicMock(), Settings())
    schema = {t.name: t.input_schema for t in await server.list_tools()}[tool]
    published = lean_schema(model.model_json_schema())  # as tools/list publishes every schema
    assert list(schema["properties"]) == [*own, *published["properties"]]
    assert {name: schema["properties"][name] for name in published["properties"]} == published["properties"]
    assert schema.get("required", []) == [*own, *published.get("required", [])]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
