"""The memory tools: save, search, get, list, update, delete and supersede memories (and undo a supersession), their
history, a memory at a point in time, the namespace's stats, and ping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

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


class MemoryTools:
    """The memory tools, each declared once as a method (its name and parameters are the tool's; a request model's
    fields become its arguments through ``flat``, engram.services.gateway.mcp.signatures), with what they use given to
    the instance: the operations, the pack service (delete_memory's pack form finds a pack's memory) and how a call's
    caller is resolved.

    Contexts are derived only where saves form a conversation (a ``conversation_id``: ingest does it): agents save
    unrelated facts one after another, and the previous one would only steal the next one's lookups."""

    def __init__(self, ops: Operations, packs: PackService, caller: CallerOf) -> None:
        self._ops, self._packs, self._caller = ops, packs, caller

    async def save_memory(self, ctx: Context, request: SaveRequest) -> SaveResult:
        return await self._ops.save(self._caller(ctx), request)

    async def search_memory(
        self,
        ctx: Context,
        request: SearchRequest,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> SearchResult:
        return await self._ops.search(self._caller(ctx), request)

    async def get_memory(self, id: MemoryId, ctx: Context) -> MemoryOut:
        return await self._ops.get(self._caller(ctx), id)

    async def list_memories(
        self,
        ctx: Context,
        request: ListRequest,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> ListResult:
        return await self._ops.list(self._caller(ctx), request)

    async def update_memory(self, id: MemoryId, ctx: Context, request: UpdateRequest) -> SaveResult:
        return await self._ops.update(self._caller(ctx), id, request)

    async def delete_memory(
        self,
        ctx: Context,
        id: MemoryId | None = None,
        expected_version: ExpectedVersion = None,
        name: PackArg = None,
        category: PackCategoryArg = None,
        summary: PackSummaryArg = None,
    ) -> DeleteResult:
        who = self._caller(ctx)
        if id is None:
            if name is None:
                raise InvalidArgument("id", "give the memory's id, or a pack's name, category and summary.")
            memory = await self._packs.find_entry(who, name, category or "", summary or "")
            return await self._ops.delete(who, memory.id, expected_version=memory.version)
        if name is not None:
            raise InvalidArgument("name", "give either id or a pack's name, category and summary, not both.")
        return await self._ops.delete(who, id, expected_version=expected_version)

    async def supersede_memory(self, old_id: MemoryId, ctx: Context, request: SupersedeRequest) -> SupersedeResult:
        return await self._ops.supersede(self._caller(ctx), old_id, request)

    async def unsupersede_memory(
        self, id: MemoryId, ctx: Context, expected_version: ExpectedVersion = None
    ) -> UnsupersedeResult:
        request = UnsupersedeRequest(expected_version=expected_version)
        return await self._ops.unsupersede(self._caller(ctx), id, request)

    async def memory_history(self, id: MemoryId, ctx: Context) -> HistoryResult:
        return await self._ops.history(self._caller(ctx), id)

    async def memory_at(self, id: MemoryId, time: PointInTime, ctx: Context) -> MemoryOut:
        return await self._ops.memory_at(self._caller(ctx), id, time)

    async def get_memory_stats(self, ctx: Context) -> MemoryStatsOut:
        return await self._ops.stats(self._caller(ctx))

    async def ping(self, ctx: Context) -> PingResult:
        who = self._caller(ctx)
        return PingResult(
            ok=True, agent=who.agent_id, device=who.device, team=who.team, identity=who.identity,
            namespace=who.namespace, source=who.source, scopes=sorted(who.scopes), version=ENGRAM_VERSION,
        )  # fmt: skip


# Each tool in the order tools/list gives them: its method, description, annotations, and the request model whose
# fields are its arguments (None: the method's own parameters are).
TOOLS: tuple[tuple[Callable[..., Any], str, ToolAnnotations, type[BaseModel] | None], ...] = (
    (MemoryTools.save_memory, SAVE_DESCRIPTION, WRITE, SaveRequest),
    (MemoryTools.search_memory, SEARCH_DESCRIPTION, READ, SearchRequest),
    (MemoryTools.get_memory, GET_DESCRIPTION, READ, None),
    (MemoryTools.list_memories, LIST_DESCRIPTION, READ, ListRequest),
    (MemoryTools.update_memory, UPDATE_DESCRIPTION, WRITE, UpdateRequest),
    (MemoryTools.delete_memory, DELETE_DESCRIPTION, DELETE, None),
    (MemoryTools.supersede_memory, SUPERSEDE_DESCRIPTION, WRITE, SupersedeRequest),
    (MemoryTools.unsupersede_memory, UNSUPERSEDE_DESCRIPTION, WRITE, None),
    (MemoryTools.memory_history, HISTORY_DESCRIPTION, READ, None),
    (MemoryTools.memory_at, MEMORY_AT_DESCRIPTION, READ, None),
    (MemoryTools.get_memory_stats, STATS_DESCRIPTION, READ, None),
    (MemoryTools.ping, PING_DESCRIPTION, READ, None),
)


def register(server: MCPServer, ops: Operations, packs: PackService, caller: CallerOf) -> None:
    """Adds the memory tools to ``server``."""
    tools = MemoryTools(ops, packs, caller)
    for method, description, hints, request in TOOLS:
        tool = getattr(tools, method.__name__)
        server.add_tool(tool if request is None else flat(request)(tool), description=description, annotations=hints)
