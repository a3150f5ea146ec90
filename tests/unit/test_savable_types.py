"""The memory types Engram writes itself (team summaries, pack files, hook captures) are never offered to a save, yet
stay findable."""

from __future__ import annotations

from unittest.mock import MagicMock

import pytest
from pydantic import ValidationError

from engram.cli import build_parser
from engram.config import Settings
from engram.model import INTERNAL_TYPES, MEMORY_TYPES, SAVABLE_TYPES
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.schemas.requests import SaveRequest


def test_savable_types_are_every_type_but_the_internal_ones() -> None:
    assert set(INTERNAL_TYPES) == {"team-summary", "pack-file", "observation", "session-summary"}
    assert set(SAVABLE_TYPES) == set(MEMORY_TYPES) - set(INTERNAL_TYPES)


@pytest.mark.parametrize("internal", INTERNAL_TYPES)
def test_a_save_of_an_internal_type_is_refused(internal: str) -> None:
    with pytest.raises(ValidationError):
        SaveRequest(content="A summary of my own", memory_type=internal)


@pytest.mark.anyio
async def test_save_memory_offers_no_internal_type_but_list_memories_filters_by_them() -> None:
    server = build_mcp(MagicMock(), MagicMock(), MagicMock(), Settings())
    schemas = {t.name: t.input_schema for t in await server.list_tools()}

    saved = str(schemas["save_memory"]["properties"]["memory_type"])
    listed = str(schemas["list_memories"]["properties"]["memory_type"])
    assert not any(t in saved for t in INTERNAL_TYPES) and "'decision'" in saved
    assert all(t in listed for t in INTERNAL_TYPES)


def test_engram_save_offers_no_internal_type(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["save", "text", "--type", "team-summary"])
    assert "invalid choice: 'team-summary'" in capsys.readouterr().err


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
