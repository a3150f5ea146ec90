"""The memory tools: save, search, get, list, update, delete and supersede memories (and undo a supersession), their
history, a memory at a point in time, the namespace's stats, and ping."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from engram.errors import InvalidArgument
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import (
    DELETE,
    DELETE_DESCRIPTION,
    GET_DESCRIPTION,
    HISTORY_DESCRIPTION,
    LIST_DESCRIPTION,
    MEMORY_AT_DESCRIPTION,
    PING_DESCRIPTION,
    READ,
    SAVE_DESCRIPTION,
    SEARCH_DESCRIPTION,
    STATS_DESCRIPTION,
    SUPERSEDE_DESCRIPTION,
    UNSUPERSEDE_DESCRIPTION,
    UPDATE_DESCRIPTION,
    WRITE,
)
from engram.services.gateway.mcp.signatures import flat
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.schemas.arguments import (
    Detail,
    ExpectedVersion,
    MemoryId,
    PackArg,
    PackCategoryArg,
    PackSummaryArg,
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
    ENGRAM_VERSION,
    DeleteResult,
    HistoryResult,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    PingResult,
    SaveResult,
    SearchResult,
    SupersedeResult,
    UnsupersedeResult,
)


def register(
    server: MCPServer,
    ops: Operations,
    packs: PackService,
    caller: CallerOf,
) -> None:
    """Adds the memory tools to ``server``; ``packs`` finds a pack's memory for delete_memory's pack form.

    Contexts are derived only where saves form a conversation (a ``conversation_id``: ingest does it): agents save
    unrelated facts one after another, and the previous one would only steal the next one's lookups."""

    # A tool takes its request's fields as arguments (engram.services.gateway.mcp.signatures).
    @server.tool(description=SAVE_DESCRIPTION, annotations=WRITE)
    @flat(SaveRequest)
    async def save_memory(ctx: Context, request: SaveRequest) -> SaveResult:
        return await ops.save(caller(ctx), request)

    # The reads take their request's fields as arguments too, the filters among them.
    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ)
    @flat(SearchRequest)
    async def search_memory(
        ctx: Context,
        request: SearchRequest,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> SearchResult:
        return await ops.search(caller(ctx), request)

    @server.tool(description=GET_DESCRIPTION, annotations=READ)
    async def get_memory(id: MemoryId, ctx: Context) -> MemoryOut:
        return await ops.get(caller(ctx), id)

    @server.tool(description=LIST_DESCRIPTION, annotations=READ)
    @flat(ListRequest)
    async def list_memories(
        ctx: Context,
        request: ListRequest,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> ListResult:
        return await ops.list(caller(ctx), request)

    @server.tool(description=UPDATE_DESCRIPTION, annotations=WRITE)
    @flat(UpdateRequest)
    async def update_memory(id: MemoryId, ctx: Context, request: UpdateRequest) -> SaveResult:
        return await ops.update(caller(ctx), id, request)

    @server.tool(description=DELETE_DESCRIPTION, annotations=DELETE)
    async def delete_memory(
        ctx: Context,
        id: MemoryId | None = None,
        expected_version: ExpectedVersion = None,
        name: PackArg = None,
        category: PackCategoryArg = None,
        summary: PackSummaryArg = None,
    ) -> DeleteResult:
        who = caller(ctx)
        if id is None:
            if name is None:
                raise InvalidArgument("id", "give the memory's id, or a pack's name, category and summary.")
            memory = await packs.find_entry(who, name, category or "", summary or "")
            return await ops.delete(who, memory.id, expected_version=memory.version)
        if name is not None:
            raise InvalidArgument("name", "give either id or a pack's name, category and summary, not both.")
        return await ops.delete(who, id, expected_version=expected_version)

    @server.tool(description=SUPERSEDE_DESCRIPTION, annotations=WRITE)
    @flat(SupersedeRequest)
    async def supersede_memory(old_id: MemoryId, ctx: Context, request: SupersedeRequest) -> SupersedeResult:
        return await ops.supersede(caller(ctx), old_id, request)

    @server.tool(description=UNSUPERSEDE_DESCRIPTION, annotations=WRITE)
    async def unsupersede_memory(
        id: MemoryId, ctx: Context, expected_version: ExpectedVersion = None
    ) -> UnsupersedeResult:
        return await ops.unsupersede(caller(ctx), id, UnsupersedeRequest(expected_version=expected_version))

    @server.tool(description=HISTORY_DESCRIPTION, annotations=READ)
    async def memory_history(id: MemoryId, ctx: Context) -> HistoryResult:
        return await ops.history(caller(ctx), id)

    @server.tool(description=MEMORY_AT_DESCRIPTION, annotations=READ)
    async def memory_at(id: MemoryId, time: PointInTime, ctx: Context) -> MemoryOut:
        return await ops.memory_at(caller(ctx), id, time)

    @server.tool(description=STATS_DESCRIPTION, annotations=READ)
    async def get_memory_stats(ctx: Context) -> MemoryStatsOut:
        return await ops.stats(caller(ctx))

    @server.tool(description=PING_DESCRIPTION, annotations=READ)
    async def ping(ctx: Context) -> PingResult:
        who = caller(ctx)
        return PingResult(
            ok=True, agent=who.agent_id, device=who.device, team=who.team, identity=who.identity,
            namespace=who.namespace, source=who.source, scopes=sorted(who.scopes), version=ENGRAM_VERSION,
        )  # fmt: skip
