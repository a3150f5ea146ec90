"""REST for agents working together: /v1/agents, /v1/teams (and their summaries) and /v1/handoffs."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from engram.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from engram.names import TEAM_PATTERN
from engram.services.gateway.rest.dependencies import CurrentCaller, Ops, description_of, field_of, path_of, query_of
from engram.services.gateway.rest.problems import ERROR_RESPONSES, PROBLEM_MEDIA_TYPE, Problem
from engram.services.gateway.schemas.arguments import (
    DEFAULT_LIST_LIMIT,
    MAX_SEQ,
    HandoffRole,
    HandoffRoleName,
    HandoffStatusArg,
    HandoffStatusChoice,
    MemoryId,
    MinSeq,
    PageToken,
    TeamName,
    TeamSearch,
)
from engram.services.gateway.schemas.requests import HandoffListRequest, HandoffMoveRequest, HandoffRequest
from engram.services.gateway.schemas.results import AgentsResult, ConsolidateResult, ListResult, SaveResult, TeamsResult

# Moving a handoff on: 403 also when the caller is not its target, 409 when expected_version is stale or the
# handoff cannot move to that state.
_HANDOFF_MOVE: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "No such handoff in your namespace"},
    403: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "Missing scope, or you are not the handoff's target agent",
    },
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "expected_version is stale, or the handoff is not in a state that can move there",
    },
}

# A team summary: 409 when the team has nothing to summarise or its summary is already being written.
_CONSOLIDATE: dict[int | str, dict[str, Any]] = {
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "The team has no active memories, or its summary is being written already",
    }
}


# Routes /v1/agents, /v1/teams (and their consolidation) and /v1/handoffs: agents working together. build_app
# includes them; each route takes the app's operations and caller as injected dependencies (rest/dependencies.py).
# Tagged "memories" too, as when these routes were part of the memories router: the OpenAPI document is unchanged.
router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)
HandoffId = Annotated[str, path_of(MemoryId)]


@router.get("/agents", response_model=AgentsResult, tags=["coordination"], summary="The agents of your namespace")
async def list_agents(caller: CurrentCaller, ops: Ops) -> AgentsResult:
    """Every agent that wrote to the namespace, from the log: first and last seen, active memories owned,
    devices, clients, teams and writes; most recently seen first."""
    return await ops.agents(caller)


@router.get("/teams", response_model=TeamsResult, response_model_exclude_none=True, tags=["coordination"],
            summary="The teams of your namespace")  # fmt: skip
async def list_teams(
    caller: CurrentCaller,
    ops: Ops,
    search: Annotated[str | None, query_of(TeamSearch)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Summaries to return (1-100).")] = (
        DEFAULT_SEARCH_LIMIT
    ),
) -> TeamsResult:
    """Each team with its active memories, agents, current summary and latest activity; with `search`, also
    the team summaries matching it (`summaries`, as search hits)."""
    return await ops.teams(caller, search=search, limit=limit)


@router.post("/teams/{team}/consolidate", response_model=ConsolidateResult, responses=_CONSOLIDATE,
             tags=["coordination"], summary="Summarise a team's memories")  # fmt: skip
async def consolidate_team(
    team: Annotated[str, Path(pattern=f"^{TEAM_PATTERN}$", description=field_of(TeamName).description)],
    caller: CurrentCaller,
    ops: Ops,
) -> ConsolidateResult:
    """Runs the team-summary job: a Markdown digest of the team's memories by category, saved as a
    team-summary memory that supersedes the previous one. 503 when the gateway has no consolidation service."""
    return await ops.consolidate_team(caller, team)


@router.post("/teams:consolidate", response_model=ConsolidateResult, responses=_CONSOLIDATE,
             tags=["coordination"], summary="Summarise your own team's memories")  # fmt: skip
async def consolidate_own_team(caller: CurrentCaller, ops: Ops) -> ConsolidateResult:
    """As /v1/teams/{team}/consolidate for the caller's team (X-Engram-Team or the key's); 400 without one."""
    return await ops.consolidate_team(caller)


@router.post("/handoffs", status_code=201, response_model=SaveResult, tags=["coordination"],
             summary="Hand work over to another agent")  # fmt: skip
async def create_handoff(body: HandoffRequest, caller: CurrentCaller, ops: Ops, response: Response) -> SaveResult:
    """Saves a pending handoff memory for `target_agent`: the context as Markdown with sections for the active
    files, decisions made and next steps (also in `metadata`)."""
    result = await ops.create_handoff(caller, body)
    response.headers["Location"] = f"/v1/memories/{result.id}"
    return result


@router.get("/handoffs", response_model=ListResult, tags=["coordination"], summary="List handoffs")
async def list_handoffs(
    caller: CurrentCaller,
    ops: Ops,
    status: Annotated[HandoffStatusChoice, Query(description=description_of(HandoffStatusArg))] = "pending",
    role: Annotated[HandoffRoleName, Query(description=description_of(HandoffRole))] = "to_me",
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Number of handoffs (1-100).")] = (
        DEFAULT_LIST_LIMIT
    ),
    page_token: Annotated[str | None, query_of(PageToken)] = None,
    min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=description_of(MinSeq))] = None,
) -> ListResult:
    """Handoffs to the caller (default), from it or all, in one state (default pending) or all; newest first."""
    request = HandoffListRequest(status=status, role=role, limit=limit, page_token=page_token, min_seq=min_seq)
    return await ops.handoffs(caller, request)


@router.post("/handoffs/{memory_id}/accept", response_model=SaveResult, responses=_HANDOFF_MOVE,
             tags=["coordination"], summary="Accept a handoff addressed to you")  # fmt: skip
async def accept_handoff(
    memory_id: HandoffId, caller: CurrentCaller, ops: Ops, body: HandoffMoveRequest | None = None
) -> SaveResult:
    """Moves the handoff to accepted (only its target agent may); the body is optional."""
    return await ops.move_handoff(caller, memory_id, "accepted", body or HandoffMoveRequest())


@router.post("/handoffs/{memory_id}/complete", response_model=SaveResult, responses=_HANDOFF_MOVE,
             tags=["coordination"], summary="Complete a handoff addressed to you")  # fmt: skip
async def complete_handoff(
    memory_id: HandoffId, caller: CurrentCaller, ops: Ops, body: HandoffMoveRequest | None = None
) -> SaveResult:
    """Moves the handoff to completed (only its target agent may), with an optional note on the outcome."""
    return await ops.move_handoff(caller, memory_id, "completed", body or HandoffMoveRequest())
