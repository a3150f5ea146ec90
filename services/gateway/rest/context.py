"""REST for session context: GET /v1/session-context, and POST / DELETE /v1/memories/{id}/pin."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from engram.services.gateway.operations.context import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    PROJECT_DESCRIPTION,
    QUERY_DESCRIPTION,
    TOKEN_BUDGET_DESCRIPTION,
    PinResult,
    SessionContextOut,
)
from engram.services.gateway.rest.dependencies import Context, CurrentCaller
from engram.services.gateway.rest.problems import ERROR_RESPONSES, PROBLEM_MEDIA_TYPE, Problem
from engram.validation import MAX_FIELD_CHARS

MEMORY_ID_DESCRIPTION = "The memory's id (a UUID), as returned by save or search."


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": description}


_PIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    403: _problem("Missing scope, or the memory is owned by another agent (read all, write own)"),
    404: _problem("No such memory in your namespace"),
    409: _problem("The memory kept changing while it was being pinned; try again"),
}


# Routes /v1/session-context and /v1/memories/{id}/pin. build_app includes them; each takes the app's session
# context service and the caller as injected dependencies (rest/dependencies.py).
router = APIRouter(prefix="/v1", tags=["session context"], responses=ERROR_RESPONSES)
PinnedId = Annotated[str, Path(description=MEMORY_ID_DESCRIPTION, json_schema_extra={"format": "uuid"})]


@router.get("/session-context", response_model=SessionContextOut, summary="What to see first in a session")
async def session_context(
    caller: CurrentCaller,
    context: Context,
    project: Annotated[str | None, Query(max_length=MAX_FIELD_CHARS, description=PROJECT_DESCRIPTION)] = None,
    query: Annotated[str | None, Query(min_length=1, pattern=r"\S", description=QUERY_DESCRIPTION)] = None,
    token_budget: Annotated[
        int, Query(ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET, description=TOKEN_BUDGET_DESCRIPTION)
    ] = DEFAULT_TOKEN_BUDGET,
) -> SessionContextOut:
    """The memories to read at the start of a session, as Markdown within `token_budget` tokens: pinned ones
    first (at most 5, in full), then the 3 most useful in full (importance, confidence, reads, recency; plus
    relevance to `query`), then the rest as one-line titles with their ids."""
    return await context.build(caller, project=project, query=query, token_budget=token_budget)


@router.post("/memories/{memory_id}/pin", response_model=PinResult, responses=_PIN_RESPONSES,
             summary="Pin one of your memories")  # fmt: skip
async def pin_memory(memory_id: PinnedId, caller: CurrentCaller, context: Context) -> PinResult:
    """Tags the memory "pinned" (a new version; only its owner may), so session context shows it first."""
    return await context.pin(caller, memory_id, pinned=True)


@router.delete("/memories/{memory_id}/pin", response_model=PinResult, responses=_PIN_RESPONSES,
               summary="Unpin one of your memories")  # fmt: skip
async def unpin_memory(memory_id: PinnedId, caller: CurrentCaller, context: Context) -> PinResult:
    """Removes the tag "pinned" (a new version; only its owner may)."""
    return await context.pin(caller, memory_id, pinned=False)
