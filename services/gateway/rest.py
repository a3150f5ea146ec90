"""The REST API under /v1 (used by the CLI and the web console) and its HTTP problem responses."""

# No `from __future__ import annotations`: FastAPI resolves route annotations against module globals, and
# the routes below use a dependency alias local to build_router.

import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import Annotated, Any, get_args

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from starlette.exceptions import HTTPException as StarletteHTTPException

from engram.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, Settings
from engram.errors import DEFAULT_RETRY_AFTER_SECONDS, EngramError, ImportStopped, PayloadTooLarge, VersionConflict
from engram.model import Caller
from engram.names import DEVICE_PATTERN, IDENTITY_PATTERN, MAX_IDENTITY_CHARS, TEAM_PATTERN
from engram.services.gateway.identity import REST_SOURCE, RequestIdentity, Resolver
from engram.services.gateway.operations import Operations
from engram.services.gateway.schemas.arguments import (
    DEFAULT_CONTRADICTIONS,
    DEFAULT_LIST_LIMIT,
    MAX_SEQ,
    ContradictionLimit,
    ContradictionTopics,
    ConversationId,
    CreatedAfter,
    CreatedBefore,
    ExpectedVersion,
    FilterTags,
    FilterTopics,
    HandoffRole,
    HandoffRoleName,
    HandoffStatusArg,
    HandoffStatusChoice,
    IncludeArchived,
    JobId,
    MemoryId,
    MemoryTypeName,
    MinSeq,
    OwnerAgent,
    PackFilter,
    PageToken,
    PointInTime,
    Project,
    StatusFilter,
    StatusName,
    TeamFilter,
    TeamName,
    TeamSearch,
    TypeFilter,
)
from engram.services.gateway.schemas.requests import (
    ConsolidateRequest,
    Filters,
    HandoffListRequest,
    HandoffMoveRequest,
    HandoffRequest,
    JobRequest,
    ListRequest,
    ResolveRequest,
    SaveRequest,
    SearchRequest,
    SupersedeRequest,
    UpdateRequest,
)
from engram.services.gateway.schemas.results import (
    AgentsResult,
    ConsolidateMemoryResult,
    ConsolidateResult,
    ContradictionsResult,
    DeleteResult,
    HistoryResult,
    ImportResult,
    JobOut,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    ResolveResult,
    SaveResult,
    SearchResult,
    SupersedeResult,
    TeamsResult,
)
from engram.services.gateway.schemas.validation import describe_validation

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_PREFIX = "urn:engram:problem:"

# EngramError.code -> HTTP status. Codes the kernel may add later ("already_exists", "aborted") are mapped
# ahead of time so a new service error never turns into a 500.
STATUS_BY_CODE: dict[str, int] = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "already_exists": 409,
    "aborted": 409,
    "failed_precondition": 409,  # a stale expected_version: the answer names the current version
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "internal": 500,
    "unimplemented": 501,
    "unavailable": 503,
    "resource_exhausted": 507,
}
_CODE_BY_STATUS = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
}


class Problem(BaseModel):
    """An RFC 9457 problem: what went wrong and, in ``detail``, what to do about it."""

    type: str = Field(description="A URI naming the kind of problem, e.g. urn:engram:problem:not_found.")
    title: str
    status: int
    detail: str
    code: str = Field(description="Engram's error code, the same over gRPC, MCP and REST.")


def problem(
    status: int,
    detail: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> Response:
    """An ``application/problem+json`` response; ``extensions`` are extra members (RFC 9457, section 3.2)."""
    code = code or _CODE_BY_STATUS.get(status, "internal" if status >= 500 else "http_error")
    body = Problem(
        type=PROBLEM_TYPE_PREFIX + code,
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        code=code,
    )
    content = {**(extensions or {}), **body.model_dump()}
    return JSONResponse(content, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def unauthenticated(detail: str) -> Response:
    """A 401 problem that tells HTTP clients which scheme to use."""
    return problem(401, detail, code="unauthenticated", headers={"WWW-Authenticate": 'Bearer realm="engram"'})


def error_response(error: EngramError) -> Response:
    """The HTTP form of a service error."""
    if error.code == "unauthenticated":
        return unauthenticated(str(error))
    headers = {}
    if error.code in ("unavailable", "resource_exhausted"):
        retry_after = getattr(error, "retry_after", DEFAULT_RETRY_AFTER_SECONDS)
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    if error.code == "payload_too_large":
        # The rest of the body is never read: closing the connection stops the client sending it.
        headers["Connection"] = "close"
    # A stopped import also says what was stored and where to resume (the fields of ImportResult); a version
    # conflict, the version to read again.
    extensions: dict[str, Any] | None = None
    if isinstance(error, ImportStopped):
        extensions = error.result
    elif isinstance(error, VersionConflict):
        extensions = {"expected_version": error.expected, "current_version": error.actual}
    status = STATUS_BY_CODE.get(error.code, 500)
    return problem(status, str(error), code=error.code, headers=headers, extensions=extensions)


def add_error_handlers(app: FastAPI) -> None:
    """Every error of the app, including FastAPI's own, answers as a problem document."""
    app.add_exception_handler(EngramError, _on_engram_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)


async def _on_engram_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, EngramError)
    return error_response(error)


async def _on_validation_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    return problem(400, _describe_validation(error), code="invalid_argument")


async def _on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    return problem(error.status_code, str(error.detail), headers=dict(error.headers or {}))


def _describe_validation(error: RequestValidationError) -> str:
    """'body.limit: Input should be less than or equal to 100; ...' — field first, like InvalidArgument."""
    return describe_validation(error.errors())


# Every answer an API route can give besides its success, documented once for all routers.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": HTTPStatus(status).phrase}
    for status in (400, 401, 403, 413, 415, 421, 503, 507)
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "No such memory in your namespace",
    }
}
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
# A maintenance job: 409 when the namespace's maintenance (or that job) is running already, or the job failed for
# a reason of state (its summary says which).
_JOB: dict[int | str, dict[str, Any]] = {
    409: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "A maintenance job of this namespace is running already (the problem names it)",
    }
}
_JOB_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "No such job in your namespace"}
}
# Replacing memories with a summary: 403 also for another agent's memory without an admin's force.
_CONSOLIDATE_MEMORIES: dict[int | str, dict[str, Any]] = {
    **_NOT_FOUND,
    403: {
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {}},
        "description": "Missing scope, or a memory of another agent without force (admin)",
    },
}
# Resolving a contradiction: the user's decision, so 403 without the admin scope.
_RESOLVE: dict[int | str, dict[str, Any]] = {
    **_NOT_FOUND,
    403: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "The key lacks the admin scope"},
}
# A change to a memory: 403 also when another agent owns it, 409 when expected_version is stale.
_CHANGE: dict[int | str, dict[str, Any]] = {
    **_NOT_FOUND,
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

_LIST_QUERY = "Comma separated (topics=a,b), or the parameter repeated."

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="EngramApiKey",
    description="An Engram API key (`engram keys create`). Optional in dev mode (loopback bind).",
)


def _field(alias: Any) -> FieldInfo:
    """The Field of one of the shared argument types of tools.py."""
    return next(m for m in get_args(alias)[1:] if isinstance(m, FieldInfo))


def _description(alias: Any) -> str | None:
    return _field(alias).description


def _query(alias: Any) -> Any:
    """A query parameter with the description and the constraints of a shared argument type."""
    info = _field(alias)
    constraints = {
        name: value
        for item in info.metadata
        for name in ("pattern", "max_length", "ge", "le")
        if (value := getattr(item, name, None)) is not None
    }
    return Query(description=info.description, json_schema_extra=info.json_schema_extra, **constraints)


def _path(alias: Any) -> Any:
    info = _field(alias)
    return Path(description=info.description, json_schema_extra=info.json_schema_extra)


def caller_dependency(resolver: Resolver) -> Callable[..., Awaitable[Caller]]:
    """A FastAPI dependency resolving the caller of a REST request (documented in OpenAPI)."""

    async def current_caller(
        request: Request,
        _credentials: Annotated[Any, Depends(_bearer)],
        _agent_header: Annotated[
            str | None,
            Header(
                alias="X-Engram-Agent-ID",
                pattern=f"^{IDENTITY_PATTERN}$",
                max_length=MAX_IDENTITY_CHARS,
                description="The agent acting, as agent or agent@device (a shared key); a key created with "
                "--agent acts as its agent and refuses another name.",
            ),
        ] = None,
        _agent_query: Annotated[
            str | None,
            Query(
                alias="agent_id",
                pattern=f"^{IDENTITY_PATTERN}$",
                max_length=MAX_IDENTITY_CHARS,
                description="The agent acting, when a header is impractical.",
            ),
        ] = None,
        _device_header: Annotated[
            str | None,
            Header(
                alias="X-Engram-Device",
                pattern=f"^{DEVICE_PATTERN}$",
                description="The device the agent runs on (its host name, e.g. laptop).",
            ),
        ] = None,
        _team_header: Annotated[
            str | None,
            Header(
                alias="X-Engram-Team",
                pattern=f"^{TEAM_PATTERN}$",
                description="The agent's team; its saves are tagged team:<name>.",
            ),
        ] = None,
    ) -> Caller:
        # The parameters document and pre-check the hints; the resolver reads them from the request itself, and
        # the raw Authorization header, not the HTTPBearer result: a non-Bearer scheme must be refused, not ignored.
        return resolver.resolve(RequestIdentity.from_request(request), default_source=REST_SOURCE)

    return current_caller


IMPORT_PATH = "/v1/memories:import"
LINE_SETTING = "ENGRAM_MAX_IMPORT_LINE_BYTES"
# The routes whose body is one JSON document (the edge checks their Content-Type and nesting first).
JSON_BODY_ROUTES = (
    ("POST", re.compile(r"/v1/memories(?::search)?")),
    ("PATCH", re.compile(r"/v1/memories/[^/]+")),
    ("POST", re.compile(r"/v1/memories/[^/]+:supersede")),
    ("POST", re.compile(r"/v1/handoffs(?:/[^/]+/(?:accept|complete))?")),
    ("POST", re.compile(r"/v1/consolidation/jobs|/v1/consolidate|/v1/contradictions/resolve")),
    ("POST", re.compile(r"/v1/sync/(?:register|push)")),
    ("POST", re.compile(r"/v1/packs")),
)


def reads_json_body(method: str, path: str) -> bool:
    """True for a request to a route whose body is one JSON document."""
    return any(method == m and pattern.fullmatch(path) for m, pattern in JSON_BODY_ROUTES)


async def _numbered_lines(
    request: Request, first: int, max_line_bytes: int
) -> AsyncIterator[tuple[int, bytes | EngramError]]:
    """The request body's lines, numbered from first, read as they arrive (the body is never held whole).

    A line longer than max_line_bytes is not kept: its bytes are counted and dropped up to its end, and it is
    given as a PayloadTooLarge in place of its text, to be rejected like any other invalid line.
    """
    number = first
    buffer = bytearray()
    skipped = 0  # bytes of an over-long line dropped so far (0: not inside one)

    def too_long(size: int) -> PayloadTooLarge:
        hint = "Shorten it or split it into several memories."
        return PayloadTooLarge(size, max_line_bytes, "The line", setting=LINE_SETTING, hint=hint)

    async for chunk in request.stream():
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            if skipped or len(buffer) + stop - start > max_line_bytes:
                skipped += len(buffer) + stop - start
                buffer.clear()
            else:
                buffer += chunk[start:stop]
            if end < 0:
                break
            yield number, (too_long(skipped) if skipped else bytes(buffer))
            skipped = 0
            buffer.clear()
            number += 1
            start = end + 1
    if skipped:
        yield number, too_long(skipped)
    elif buffer:
        yield number, bytes(buffer)


def build_router(ops: Operations, resolver: Resolver, settings: Settings) -> APIRouter:
    """Routes /v1/memories (save, list), /v1/memories/{id} (get, update, delete; history, at, :supersede),
    /v1/memories:search, /v1/memories:import and /v1/stats."""
    router = APIRouter(prefix="/v1", tags=["memories"], responses=ERROR_RESPONSES)
    CurrentCaller = Annotated[Caller, Depends(caller_dependency(resolver))]

    @router.post("/memories", status_code=201, response_model=SaveResult, summary="Save a memory")
    async def save_memory(body: SaveRequest, caller: CurrentCaller, response: Response) -> SaveResult:
        """Saves a memory; secrets are redacted first and listed in `redactions`."""
        result = await ops.save(caller, body)
        response.headers["Location"] = f"/v1/memories/{result.id}"
        return result

    @router.get("/memories/{memory_id}", response_model=MemoryOut, responses=_NOT_FOUND, summary="Get a memory")
    async def get_memory(
        memory_id: Annotated[str, _path(MemoryId)],
        caller: CurrentCaller,
        min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=_description(MinSeq))] = None,
    ) -> MemoryOut:
        """One memory of the caller's namespace as it is now, with its earlier versions in `history`."""
        return await ops.get(caller, memory_id, min_seq=min_seq)

    @router.patch("/memories/{memory_id}", response_model=SaveResult, responses=_CHANGE, summary="Update a memory")
    async def update_memory(
        memory_id: Annotated[str, _path(MemoryId)], body: UpdateRequest, caller: CurrentCaller
    ) -> SaveResult:
        """Writes a new version with the fields given changed (only the owning agent may). With
        `expected_version`, only if the memory is still at that version (else 409 naming the current one)."""
        return await ops.update(caller, memory_id, body)

    @router.delete(
        "/memories/{memory_id}", response_model=DeleteResult, responses=_CHANGE, summary="Archive or purge a memory"
    )
    async def delete_memory(
        memory_id: Annotated[str, _path(MemoryId)],
        caller: CurrentCaller,
        expected_version: Annotated[int | None, _query(ExpectedVersion)] = None,
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
        memory_id: Annotated[str, _path(MemoryId)], body: SupersedeRequest, caller: CurrentCaller
    ) -> SupersedeResult:
        """Marks the memory superseded by a new memory (`content` and save fields) or by an existing one
        (`new_id`). A memory superseded already is replaced at the head of its chain."""
        return await ops.supersede(caller, memory_id, body)

    @router.get(
        "/memories/{memory_id}/history",
        response_model=HistoryResult,
        responses=_NOT_FOUND,
        summary="Every version of a memory",
    )
    async def memory_history(
        memory_id: Annotated[str, _path(MemoryId)],
        caller: CurrentCaller,
        min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=_description(MinSeq))] = None,
    ) -> HistoryResult:
        """Every version, oldest first (the last is the current one), with who wrote it, from where and when."""
        return await ops.history(caller, memory_id, min_seq=min_seq)

    @router.get(
        "/memories/{memory_id}/at",
        response_model=MemoryOut,
        responses=_NOT_FOUND,
        summary="A memory as it was at a point in time",
    )
    async def memory_at(
        memory_id: Annotated[str, _path(MemoryId)],
        caller: CurrentCaller,
        time: Annotated[str, _query(PointInTime)],
        min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=_description(MinSeq))] = None,
    ) -> MemoryOut:
        """The version that was current at `time`; 404 if the memory did not exist yet then."""
        return await ops.memory_at(caller, memory_id, time, min_seq=min_seq)

    @router.get("/memories", response_model=ListResult, summary="List memories, most recent first")
    async def list_memories(
        caller: CurrentCaller,
        limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Number of memories (1-100).")] = (
            DEFAULT_LIST_LIMIT
        ),
        tags: Annotated[list[str] | None, _query(FilterTags)] = None,
        topics: Annotated[list[str] | None, _query(FilterTopics)] = None,
        memory_type: Annotated[list[MemoryTypeName] | None, _query(TypeFilter)] = None,
        owner_agent: Annotated[str | None, _query(OwnerAgent)] = None,
        project: Annotated[str | None, _query(Project)] = None,
        conversation_id: Annotated[str | None, _query(ConversationId)] = None,
        created_after: Annotated[str | None, _query(CreatedAfter)] = None,
        created_before: Annotated[str | None, _query(CreatedBefore)] = None,
        team: Annotated[str | None, _query(TeamFilter)] = None,
        status: Annotated[list[StatusName] | None, _query(StatusFilter)] = None,
        include_archived: Annotated[bool, _query(IncludeArchived)] = False,
        page_token: Annotated[str | None, _query(PageToken)] = None,
        min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=_description(MinSeq))] = None,
        pack: Annotated[str | None, _query(PackFilter)] = None,
    ) -> ListResult:
        """Recent memories of the caller's namespace, filtered; page with `next_page_token`."""
        filters = Filters(
            tags=tags, topics=topics, memory_type=memory_type, owner_agent=owner_agent, project=project,
            conversation_id=conversation_id, created_after=created_after, created_before=created_before, team=team,
            status=status, include_archived=include_archived, pack=pack,
        )  # fmt: skip
        request = ListRequest(limit=limit, filters=filters, page_token=page_token, min_seq=min_seq)
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
        first_line: Annotated[int, Query(ge=1, le=MAX_SEQ, description="The number of the body's first line.")] = 1,
    ) -> ImportResult:
        """Stores every valid line in order and says which lines were rejected and why; resume after last_line."""
        lines = _numbered_lines(request, first_line, settings.max_import_line_bytes)
        return await ops.import_lines(caller, lines, first_line=first_line)

    @router.post("/memories:search", response_model=SearchResult, summary="Search memories")
    async def search_memories(body: SearchRequest, caller: CurrentCaller) -> SearchResult:
        """Hybrid (semantic + keyword) search of the caller's namespace; `as_of` searches it as it was then."""
        return await ops.search(caller, body)

    @router.get("/stats", response_model=MemoryStatsOut, summary="Counts of your namespace's memories")
    async def memory_stats(caller: CurrentCaller) -> MemoryStatsOut:
        """Memories of the caller's namespace by owning agent, type, status and team."""
        return await ops.stats(caller)

    add_coordination_routes(router, ops, resolver)
    add_consolidation_routes(router, ops, resolver)
    return router


def add_coordination_routes(router: APIRouter, ops: Operations, resolver: Resolver) -> None:
    """Routes /v1/agents, /v1/teams (and their consolidation) and /v1/handoffs: agents working together."""
    CurrentCaller = Annotated[Caller, Depends(caller_dependency(resolver))]
    HandoffId = Annotated[str, _path(MemoryId)]

    @router.get("/agents", response_model=AgentsResult, tags=["coordination"], summary="The agents of your namespace")
    async def list_agents(caller: CurrentCaller) -> AgentsResult:
        """Every agent that wrote to the namespace, from the log: first and last seen, active memories owned,
        devices, clients, teams and writes; most recently seen first."""
        return await ops.agents(caller)

    @router.get("/teams", response_model=TeamsResult, response_model_exclude_none=True, tags=["coordination"],
                summary="The teams of your namespace")  # fmt: skip
    async def list_teams(
        caller: CurrentCaller,
        search: Annotated[str | None, _query(TeamSearch)] = None,
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
        team: Annotated[str, Path(pattern=f"^{TEAM_PATTERN}$", description=_field(TeamName).description)],
        caller: CurrentCaller,
    ) -> ConsolidateResult:
        """Runs the team-summary job: a Markdown digest of the team's memories by category, saved as a
        team-summary memory that supersedes the previous one. 503 when the gateway has no consolidation service."""
        return await ops.consolidate_team(caller, team)

    @router.post("/teams:consolidate", response_model=ConsolidateResult, responses=_CONSOLIDATE,
                 tags=["coordination"], summary="Summarise your own team's memories")  # fmt: skip
    async def consolidate_own_team(caller: CurrentCaller) -> ConsolidateResult:
        """As /v1/teams/{team}/consolidate for the caller's team (X-Engram-Team or the key's); 400 without one."""
        return await ops.consolidate_team(caller)

    @router.post("/handoffs", status_code=201, response_model=SaveResult, tags=["coordination"],
                 summary="Hand work over to another agent")  # fmt: skip
    async def create_handoff(body: HandoffRequest, caller: CurrentCaller, response: Response) -> SaveResult:
        """Saves a pending handoff memory for `target_agent`: the context as Markdown with sections for the active
        files, decisions made and next steps (also in `metadata`)."""
        result = await ops.create_handoff(caller, body)
        response.headers["Location"] = f"/v1/memories/{result.id}"
        return result

    @router.get("/handoffs", response_model=ListResult, tags=["coordination"], summary="List handoffs")
    async def list_handoffs(
        caller: CurrentCaller,
        status: Annotated[HandoffStatusChoice, Query(description=_description(HandoffStatusArg))] = "pending",
        role: Annotated[HandoffRoleName, Query(description=_description(HandoffRole))] = "to_me",
        limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Number of handoffs (1-100).")] = (
            DEFAULT_LIST_LIMIT
        ),
        page_token: Annotated[str | None, _query(PageToken)] = None,
        min_seq: Annotated[int | None, Query(ge=0, le=MAX_SEQ, description=_description(MinSeq))] = None,
    ) -> ListResult:
        """Handoffs to the caller (default), from it or all, in one state (default pending) or all; newest first."""
        request = HandoffListRequest(status=status, role=role, limit=limit, page_token=page_token, min_seq=min_seq)
        return await ops.handoffs(caller, request)

    @router.post("/handoffs/{memory_id}/accept", response_model=SaveResult, responses=_HANDOFF_MOVE,
                 tags=["coordination"], summary="Accept a handoff addressed to you")  # fmt: skip
    async def accept_handoff(
        memory_id: HandoffId, caller: CurrentCaller, body: HandoffMoveRequest | None = None
    ) -> SaveResult:
        """Moves the handoff to accepted (only its target agent may); the body is optional."""
        return await ops.move_handoff(caller, memory_id, "accepted", body or HandoffMoveRequest())

    @router.post("/handoffs/{memory_id}/complete", response_model=SaveResult, responses=_HANDOFF_MOVE,
                 tags=["coordination"], summary="Complete a handoff addressed to you")  # fmt: skip
    async def complete_handoff(
        memory_id: HandoffId, caller: CurrentCaller, body: HandoffMoveRequest | None = None
    ) -> SaveResult:
        """Moves the handoff to completed (only its target agent may), with an optional note on the outcome."""
        return await ops.move_handoff(caller, memory_id, "completed", body or HandoffMoveRequest())


def add_consolidation_routes(router: APIRouter, ops: Operations, resolver: Resolver) -> None:
    """Routes /v1/consolidation/jobs (run one, read one), /v1/consolidate (a summary replaces memories) and
    /v1/contradictions (list, resolve): keeping the shared memory tidy."""
    CurrentCaller = Annotated[Caller, Depends(caller_dependency(resolver))]

    @router.post("/consolidation/jobs", response_model=JobOut, responses=_JOB, tags=["consolidation"],
                 summary="Run a maintenance job on your namespace")  # fmt: skip
    async def run_job(body: JobRequest, caller: CurrentCaller) -> JobOut:
        """Runs the job to its end and answers it (progress: done of total, phase; its summary and result). A job
        that fails answers its error (e.g. 409 while another runs). 503 without a consolidation service."""
        return await ops.run_job(caller, body.kind, body.options)

    @router.get("/consolidation/jobs/{job_id}", response_model=JobOut, responses=_JOB_NOT_FOUND,
                tags=["consolidation"], summary="A job of your namespace, running or ended")  # fmt: skip
    async def get_job(job_id: Annotated[str, _path(JobId)], caller: CurrentCaller) -> JobOut:
        """The job's state (running, succeeded, failed), progress, summary and result; jobs are kept a week."""
        return await ops.get_job(caller, job_id)

    @router.post("/consolidate", status_code=201, response_model=ConsolidateMemoryResult,
                 responses=_CONSOLIDATE_MEMORIES, tags=["consolidation"],
                 summary="Replace memories with your summary of them")  # fmt: skip
    async def consolidate(
        body: ConsolidateRequest, caller: CurrentCaller, response: Response
    ) -> ConsolidateMemoryResult:
        """Saves `consolidated_content` as a new memory and archives the memories named (`memory_ids`) or selected
        (`memory_type`, `tag`, `topic`: at most 100) with a merged-into relation to it."""
        result = await ops.consolidate(caller, body)
        if result.survivor is not None:
            response.headers["Location"] = f"/v1/memories/{result.survivor.id}"
        return result

    @router.get("/contradictions", response_model=ContradictionsResult, tags=["consolidation"],
                summary="The open contradictions of your namespace")  # fmt: skip
    async def list_contradictions(
        caller: CurrentCaller,
        topics: Annotated[
            list[str] | None, Query(description=f"{_description(ContradictionTopics)} {_LIST_QUERY}")
        ] = None,
        limit: Annotated[int, _query(ContradictionLimit)] = DEFAULT_CONTRADICTIONS,
    ) -> ContradictionsResult:
        """Pairs of active memories that seem to disagree, flagged by the contradictions job, most likely first;
        resolve them with POST /v1/contradictions/resolve (admin)."""
        wanted = [topic.strip() for value in topics or [] for topic in value.split(",") if topic.strip()]
        return await ops.contradictions(caller, topics=wanted, limit=limit)

    @router.post("/contradictions/resolve", response_model=ResolveResult, responses=_RESOLVE,
                 tags=["consolidation"], summary="Resolve a contradiction (admin)")  # fmt: skip
    async def resolve_contradiction(body: ResolveRequest, caller: CurrentCaller) -> ResolveResult:
        """The user's decision on a flagged pair: keep_both (with `context` and `other_context`: when each holds),
        keep_newer (the older is archived), merge (`content` replaces both) or override (`winner_id` supersedes the
        other). Needs an admin key."""
        return await ops.resolve(caller, body)
