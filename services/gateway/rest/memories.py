"""REST for memories: /v1/memories (save, list, get, update, delete; history, at, :supersede, :unsupersede, :search,
:import) and /v1/stats."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from engram.services.gateway.rest.bodies import numbered_lines
from engram.services.gateway.rest.dependencies import (
    CurrentCaller,
    CurrentSettings,
    Ops,
    description_of,
    path_of,
    query_of,
    query_parameters,
)
from engram.services.gateway.rest.problems import ERROR_RESPONSES, NOT_FOUND, PROBLEM_MEDIA_TYPE, Problem
from engram.services.gateway.schemas.arguments import (
    MAX_SEQ,
    ExpectedVersion,
    MemoryId,
    MinSeq,
    PointInTime,
)
from engram.services.gateway.schemas.requests import (
    ListRequest,
    SaveRequest,
    SearchRequest,
    SupersedeRequest,
    UnsupersedeRequest,
    UpdateRequest,
)
from engram.services.gateway.schemas.results import (
    DeleteResult,
    HistoryResult,
    ImportResult,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    SaveResult,
    SearchResult,
    SupersedeResult,
    UnsupersedeResult,
)

# A change to a memory: 403 also when another agent owns it, 409 when expected_version is stale.
_CHANGE: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    403: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "Missing scope, or the memory is owned by another agent (read all, write own)",
    },
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "expected_version is stale: the problem's current_version is the memory's version now",
    },
}

# Undoing a supersession: 403 unless the caller owns the superseded memory (or is an admin).
_UNDO: dict[int | str, dict[str, Any]] = {
    **_CHANGE,
    403: {**_CHANGE[403], "description": "Missing scope, or the memory is owned by another agent (only its owner "
          "or an admin undoes its supersession)"},
}  # fmt: skip


# The listing's query parameters: the fields of its request (filters among them), as list_memories takes them.
_LIST = query_parameters(ListRequest)


# Routes /v1/memories (save, list), /v1/memories/{id} (get, update, delete; history, at, :supersede,
# :unsupersede), /v1/memories:search, /v1/memories:import and /v1/stats; build_app includes them, and each route takes
# the app's operations (and caller, settings) as injected dependencies (rest/dependencies.py).
router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)


@router.post(
    "/memories", status_code=201, response_model=SaveResult, summary="Save a memory",
    responses={200: {"model": SaveResult, "description": "Already saved: your active memory with the same "
                     "content (`duplicate_of`); nothing new was stored"}},
)  # fmt: skip
async def save_memory(body: SaveRequest, caller: CurrentCaller, ops: Ops, response: Response) -> SaveResult:
    """Saves a memory; secrets are redacted first and listed in `redactions`. Saving the same content again
    (normalized: case, whitespace, trailing punctuation) in the same scope answers 200 with your existing
    memory and `duplicate_of`, and stores nothing."""
    result = await ops.save(caller, body)
    response.headers["Location"] = f"/v1/memories/{result.id}"
    if result.duplicate_of:
        response.status_code = 200
    return result


@router.get("/memories/{memory_id}", response_model=MemoryOut, responses=NOT_FOUND, summary="Get a memory")
async def get_memory(
    memory_id: Annotated[str, path_of(MemoryId)],
    caller: CurrentCaller,
    ops: Ops,
    min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=description_of(MinSeq))] = None,
) -> MemoryOut:
    """One memory of the caller's namespace as it is now, with its earlier versions in `history`."""
    return await ops.get(caller, memory_id, min_seq=min_seq)


@router.patch("/memories/{memory_id}", response_model=SaveResult, responses=_CHANGE, summary="Update a memory")
async def update_memory(
    memory_id: Annotated[str, path_of(MemoryId)], body: UpdateRequest, caller: CurrentCaller, ops: Ops
) -> SaveResult:
    """Writes a new version with the fields given changed (only the owning agent may). With
    `expected_version`, only if the memory is still at that version (else 409 naming the current one)."""
    return await ops.update(caller, memory_id, body)


@router.delete(
    "/memories/{memory_id}", response_model=DeleteResult, responses=_CHANGE, summary="Archive or purge a memory"
)
async def delete_memory(
    memory_id: Annotated[str, path_of(MemoryId)],
    caller: CurrentCaller,
    ops: Ops,
    expected_version: Annotated[int | None, query_of(ExpectedVersion)] = None,
    purge: Annotated[
        bool,
        Query(description="Erase the memory and every version of it for good (needs an admin key)."),
    ] = False,
) -> DeleteResult:
    """Archives the memory: hidden from search and lists, still readable by id and in its history (only the
    owning agent may). With `purge=true` (admin scope) it is erased from the index and the log instead."""
    return await ops.delete(caller, memory_id, expected_version=expected_version, purge=purge)


@router.post(
    "/memories/{memory_id}:supersede",
    response_model=SupersedeResult,
    responses=_CHANGE,
    summary="Replace a memory with a new or an existing one",
)
async def supersede_memory(
    memory_id: Annotated[str, path_of(MemoryId)], body: SupersedeRequest, caller: CurrentCaller, ops: Ops
) -> SupersedeResult:
    """Marks the memory superseded by a new memory (`content` and save fields) or by an existing one
    (`new_id`); any agent of the namespace may (its owner may undo it), an open handoff only its owner. A memory
    superseded already is replaced at the head of its chain."""
    return await ops.supersede(caller, memory_id, body)


@router.post(
    "/memories/{memory_id}:unsupersede",
    response_model=UnsupersedeResult,
    responses=_UNDO,
    summary="Undo a memory's supersession",
)
async def unsupersede_memory(
    memory_id: Annotated[str, path_of(MemoryId)],
    caller: CurrentCaller,
    ops: Ops,
    body: UnsupersedeRequest | None = None,
) -> UnsupersedeResult:
    """Makes a superseded memory active again and drops its replacement's `supersedes` relation to it (only
    the memory's owner, or an admin, may). 400 when the memory is not superseded. The body is optional."""
    return await ops.unsupersede(caller, memory_id, body or UnsupersedeRequest())


@router.get(
    "/memories/{memory_id}/history",
    response_model=HistoryResult,
    responses=NOT_FOUND,
    summary="Every version of a memory",
)
async def memory_history(
    memory_id: Annotated[str, path_of(MemoryId)],
    caller: CurrentCaller,
    ops: Ops,
    min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=description_of(MinSeq))] = None,
) -> HistoryResult:
    """Every version, oldest first (the last is the current one), with who wrote it, from where and when."""
    return await ops.history(caller, memory_id, min_seq=min_seq)


@router.get(
    "/memories/{memory_id}/at",
    response_model=MemoryOut,
    responses=NOT_FOUND,
    summary="A memory as it was at a point in time",
)
async def memory_at(
    memory_id: Annotated[str, path_of(MemoryId)],
    caller: CurrentCaller,
    ops: Ops,
    time: Annotated[str, query_of(PointInTime)],
    min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=description_of(MinSeq))] = None,
) -> MemoryOut:
    """The version that was current at `time`; 404 if the memory did not exist yet then."""
    return await ops.memory_at(caller, memory_id, time, min_seq=min_seq)


@router.get("/memories", response_model=ListResult, summary="List memories, most recent first")
async def list_memories(request: Annotated[ListRequest, Depends(_LIST)], caller: CurrentCaller, ops: Ops) -> ListResult:
    """Recent memories of the caller's namespace, filtered, newest first by creation or (order=updated) by last
    change; page with `next_page_token`."""
    return await ops.list(caller, request)


@router.post(
    "/memories:import",
    response_model=ImportResult,
    summary="Bulk-import memories from JSON lines",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}},
            "description": "One save_memory object per line (plus an optional `source_id` idempotency key).",
        }
    },
)
async def import_memories(
    request: Request,
    caller: CurrentCaller,
    ops: Ops,
    settings: CurrentSettings,
    first_line: Annotated[int, Query(ge=1, le=MAX_SEQ, description="The number of the body's first line.")] = 1,
) -> ImportResult:
    """Stores every valid line in order and says which lines were rejected and why; resume after last_line."""
    lines = numbered_lines(request, first_line, settings.max_import_line_bytes)
    return await ops.import_lines(caller, lines, first_line=first_line)


@router.post("/memories:search", response_model=SearchResult, summary="Search memories")
async def search_memories(body: SearchRequest, caller: CurrentCaller, ops: Ops) -> SearchResult:
    """Hybrid (semantic + keyword) search of the caller's namespace; `as_of` searches it as it was then."""
    return await ops.search(caller, body)


@router.get("/stats", response_model=MemoryStatsOut, summary="Counts of your namespace's memories")
async def memory_stats(caller: CurrentCaller, ops: Ops) -> MemoryStatsOut:
    """Memories of the caller's namespace by owning agent, type, status and team."""
    return await ops.stats(caller)
