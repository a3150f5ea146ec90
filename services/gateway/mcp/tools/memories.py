"""The memory tools: save, search, get, list, update, delete and supersede memories (and undo a supersession), their
history, a memory at a point in time, the namespace's stats, and ping."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from engram.config import DEFAULT_SEARCH_LIMIT
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
    DEFAULT_LIST_LIMIT,
    DEFAULT_LIST_ORDER,
    AsOf,
    ConversationId,
    CreatedAfter,
    CreatedBefore,
    Detail,
    ExpectedVersion,
    Explain,
    FilterTags,
    FilterTopics,
    IncludeArchived,
    ListLimit,
    ListOrder,
    MemoryId,
    MinRelevance,
    MinSeq,
    OwnerAgent,
    PackArg,
    PackCategoryArg,
    PackFilter,
    PackSummaryArg,
    PageToken,
    PointInTime,
    Project,
    Query,
    Rerank,
    SearchLimit,
    Sources,
    StatusFilter,
    TeamFilter,
    TypeFilter,
)
from engram.services.gateway.schemas.requests import (
    Filters,
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

    # The tools that write a memory take their request's fields as arguments (engram.services.gateway.mcp.signatures).
    @server.tool(description=SAVE_DESCRIPTION, annotations=WRITE)
    @flat(SaveRequest)
    async def save_memory(ctx: Context, request: SaveRequest) -> SaveResult:
        return await ops.save(caller(ctx), request)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=READ)
    async def search_memory(
        query: Query,
        ctx: Context,
        limit: SearchLimit = DEFAULT_SEARCH_LIMIT,
        tags: FilterTags = None,
        topics: FilterTopics = None,
        owner_agent: OwnerAgent = None,
        memory_type: TypeFilter = None,
        project: Project = None,
        conversation_id: ConversationId = None,
        created_after: CreatedAfter = None,
        created_before: CreatedBefore = None,
        team: TeamFilter = None,
        status: StatusFilter = None,
        include_archived: IncludeArchived = False,
        as_of: AsOf = None,
        explain: Explain = False,
        rerank: Rerank = None,
        min_seq: MinSeq = None,
        sources: Sources = None,
        min_relevance: MinRelevance = None,
        pack: PackFilter = None,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> SearchResult:
        filters = Filters(
            tags=tags, topics=topics, owner_agent=owner_agent, memory_type=memory_type, project=project,
            conversation_id=conversation_id, created_after=created_after, created_before=created_before, team=team,
            status=status, include_archived=include_archived, pack=pack,
        )  # fmt: skip
        request = SearchRequest(
            query=query, limit=limit, filters=filters, as_of=as_of, explain=explain, rerank=rerank, min_seq=min_seq,
            sources=sources, min_relevance=min_relevance,
        )  # fmt: skip
        return await ops.search(caller(ctx), request)

    @server.tool(description=GET_DESCRIPTION, annotations=READ)
    async def get_memory(id: MemoryId, ctx: Context) -> MemoryOut:
        return await ops.get(caller(ctx), id)

    @server.tool(description=LIST_DESCRIPTION, annotations=READ)
    async def list_memories(
        ctx: Context,
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        tags: FilterTags = None,
        memory_type: TypeFilter = None,
        owner_agent: OwnerAgent = None,
        topics: FilterTopics = None,
        project: Project = None,
        team: TeamFilter = None,
        status: StatusFilter = None,
        include_archived: IncludeArchived = False,
        page_token: PageToken = None,
        pack: PackFilter = None,
        order: ListOrder = DEFAULT_LIST_ORDER,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> ListResult:
        filters = Filters(
            tags=tags, memory_type=memory_type, owner_agent=owner_agent, topics=topics, project=project, team=team,
            status=status, include_archived=include_archived, pack=pack,
        )  # fmt: skip
        request = ListRequest(limit=limit, filters=filters, page_token=page_token, order=order)
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
