"""The gateway's coordination requests without a node: handoff content, the caller's team for a team summary, a
gateway without consolidation, the MCP-session memory of previous saves, the routes the edge reads as JSON, and
the CLI's requests and output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from engram.cli import build_parser
from engram.errors import InvalidArgument, PermissionDenied, Unavailable
from engram.model import Caller
from engram.services.gateway.backend import Backend
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.coordination import handoff_content, handoff_summary
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.rest.bodies import reads_json_body
from engram.services.gateway.schemas.requests import HandoffRequest
from engram.services.gateway.schemas.results import SaveResult
from engram.validation import MAX_SUMMARY_CHARS

pytestmark = pytest.mark.anyio

# Nothing listens here: every test below is answered by the gateway before any call would reach a service.
NOWHERE = "127.0.0.1:9"


@pytest.fixture
async def ops() -> AsyncIterator[Operations]:
    backend = Backend(ingest_addr=NOWHERE, search_addr=NOWHERE)  # no consolidation service
    yield Operations(backend, CursorTracker())
    await backend.close()


# --- handoffs ------------------------------------------------------------------------------------------------


def test_a_handoff_reads_as_its_context_then_a_section_per_list_given() -> None:
    request = HandoffRequest(
        target_agent="gemini-cli", context="  Half done.\nTests missing.  ", active_files=["a.py", " b.py "],
        next_steps=["Write tests"],
    )  # fmt: skip
    assert handoff_content(request) == (
        "Half done.\nTests missing.\n\n## Active files\n- a.py\n- b.py\n\n## Next steps\n- Write tests"
    )
    assert handoff_content(HandoffRequest(target_agent="x", context="Only this")) == "Only this"


def test_a_handoff_summary_names_the_target_and_the_first_line_within_the_limit() -> None:
    request = HandoffRequest(target_agent="gemini-cli", context="\n\n  Migrate the DB \nthen the rest")
    assert handoff_summary(request) == "Handoff to gemini-cli: Migrate the DB"
    long = handoff_summary(HandoffRequest(target_agent="x", context="y" * 5000))
    assert len(long) == MAX_SUMMARY_CHARS and long.endswith("…")


def test_a_handoff_refuses_unknown_fields_a_bad_target_and_an_empty_context() -> None:
    with pytest.raises(ValueError, match="colour"):
        HandoffRequest.model_validate({"target_agent": "x", "context": "y", "colour": "red"})
    with pytest.raises(ValueError, match="target_agent"):
        HandoffRequest(target_agent="two words", context="y")
    with pytest.raises(ValueError, match="context"):
        HandoffRequest(target_agent="x", context="   ")


# --- teams ---------------------------------------------------------------------------------------------------


async def test_consolidate_without_a_team_names_both_ways_to_give_one(ops: Operations) -> None:
    with pytest.raises(InvalidArgument) as refused:
        await ops.consolidate_team(Caller("default", "loner"), None)
    assert str(refused.value) == "team: name a team, or join one: X-Engram-Team header / ENGRAM_TEAM."
    with pytest.raises(InvalidArgument):
        await ops.consolidate_team(Caller("default", "loner"), "   ")


async def test_consolidate_uses_the_callers_team_and_says_what_a_gateway_without_consolidation_needs(
    ops: Operations,
) -> None:
    with pytest.raises(Unavailable) as unavailable:
        await ops.consolidate_team(Caller("default", "lead", team="auth"))
    assert "ENGRAM_CONSOLIDATION_ADDR" in str(unavailable.value)


async def test_consolidate_and_handoff_moves_need_the_write_scope(ops: Operations) -> None:
    reader = Caller("default", "reader", scopes=frozenset({"read"}), team="auth")
    with pytest.raises(PermissionDenied):
        await ops.consolidate_team(reader)
    with pytest.raises(PermissionDenied):
        await ops.create_handoff(reader, HandoffRequest(target_agent="x", context="y"))


# --- REST and the edge ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "json"),
    [
        ("POST", "/v1/handoffs", True),
        ("POST", "/v1/handoffs/0197/accept", True),
        ("POST", "/v1/handoffs/0197/complete", True),
        ("GET", "/v1/handoffs", False),
        ("POST", "/v1/handoffs/0197/reject", False),
        ("POST", "/v1/teams/auth/consolidate", False),
        ("POST", "/v1/teams:consolidate", False),
    ],
)
def test_the_edge_reads_handoff_bodies_as_json(method: str, path: str, json: bool) -> None:
    assert reads_json_body(method, path) is json


def test_a_save_answers_with_no_warnings_by_default() -> None:
    assert SaveResult.model_fields["warnings"].is_required() is False


# --- the CLI -------------------------------------------------------------------------------------------------


def call_of(*argv: str) -> Any:
    from engram.cli.common import build_call

    return build_call(build_parser().parse_args(list(argv)))


def test_cli_commands_send_the_documented_requests() -> None:
    assert (call_of("agents").method, call_of("agents").path) == ("GET", "/v1/agents")
    assert call_of("teams").params is None
    assert call_of("teams", "--search", "tokens").params == {"search": "tokens"}
    consolidate = call_of("consolidate", "--team", "auth/x")
    assert (consolidate.method, consolidate.path) == ("POST", "/v1/teams/auth%2Fx/consolidate")
    listing = call_of("handoffs")
    assert (listing.path, listing.params) == ("/v1/handoffs", {"status": "pending", "role": "to_me", "limit": 20})
    assert call_of("handoffs", "list", "--status", "all", "--role", "from_me").params["status"] == "all"
    create = call_of("handoffs", "create", "gemini-cli", "--context", "c", "--file", "a", "--file", "b", "--next", "n")
    assert create.body == {
        "target_agent": "gemini-cli",
        "context": "c",
        "active_files": ["a", "b"],
        "next_steps": ["n"],
    }
    accept = call_of("handoffs", "accept", "0197", "--note", "ok", "--expected-version", "3")
    assert (accept.path, accept.body) == ("/v1/handoffs/0197/accept", {"note": "ok", "expected_version": 3})
    assert call_of("handoffs", "complete", "0197").body == {}


def test_cli_consolidate_needs_a_team() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["consolidate"])


def test_cli_renders_handoffs_teams_and_agents_for_people() -> None:
    from engram.cli.coordination import render_agents, render_handoffs, render_teams

    memory = {
        "id": "0197", "owner_agent": "claude-code", "created_at": "2026-01-01T00:00:00.000Z",
        "summary": "Handoff to gemini-cli: Migrate", "content": "Migrate",
        "handoff": {"target_agent": "gemini-cli", "status": "pending", "expires_at": "2026-01-02T00:00:00.000Z"},
    }  # fmt: skip
    text = render_handoffs({"memories": [memory], "next_page_token": None})
    assert text.splitlines() == [
        "0197  pending  from claude-code to gemini-cli  created 2026-01-01T00:00:00.000Z  expires "
        "2026-01-02T00:00:00.000Z",
        "  Handoff to gemini-cli: Migrate",
    ]
    assert render_handoffs({"memories": []}) == "No handoffs."
    teams = render_teams({"teams": [{"team": "auth", "memories": 1, "agents": ["a"], "summary_id": ""}]})
    assert "auth  1 memory  agents a" in teams and "none (engram consolidate --team NAME)" in teams
    agents = render_agents({"agents": [{"agent_id": "a", "memories": 2, "devices": ["laptop"], "writes": 3}]})
    assert "a  2 memories" in agents and "devices laptop" in agents
    assert render_agents({"agents": []}) == "No agent has written to this namespace yet."
