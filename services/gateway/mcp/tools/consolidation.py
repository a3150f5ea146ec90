"""The tools that keep the shared memory tidy: consolidate_memory and detect_contradictions."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from engram.errors import InvalidArgument
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import (
    CONSOLIDATE_MEMORY_DESCRIPTION,
    DETECT_CONTRADICTIONS_DESCRIPTION,
    READ,
    WRITE,
)
from engram.services.gateway.mcp.tools import ToolTable, add_tools
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.schemas.arguments import (
    DEFAULT_CONTRADICTIONS,
    CategoryArg,
    ConsolidatedContent,
    ContradictionLimit,
    ContradictionTopics,
    ForceArg,
    JobKindArg,
    MemoryIds,
    PackArg,
    PackCategoryArg,
    PackSummaryArg,
    SelectorTag,
    SelectorTopic,
)
from engram.services.gateway.schemas.results import ConsolidateMemoryResult, ContradictionsResult, MemoryOut


class ConsolidationTools:
    """The consolidation tools, each declared once as a method (its name and parameters are the tool's), with what
    they use given to the instance: the operations, the pack service (consolidate_memory's pack form) and how a
    call's caller is resolved."""

    def __init__(self, ops: Operations, packs: PackService, caller: CallerOf) -> None:
        self._ops, self._packs, self._caller = ops, packs, caller

    async def consolidate_memory(
        self,
        ctx: Context,
        kind: JobKindArg = None,
        consolidated_content: ConsolidatedContent = None,
        memory_ids: MemoryIds = None,
        memory_type: CategoryArg = None,
        tag: SelectorTag = None,
        topic: SelectorTopic = None,
        force: ForceArg = False,
        name: PackArg = None,
        category: PackCategoryArg = None,
        summary: PackSummaryArg = None,
    ) -> ConsolidateMemoryResult:
        if name is not None:
            if kind is not None:
                raise InvalidArgument("name", "only goes with consolidated_content (a pack's category summary).")
            survivor, merged = await self._packs.consolidate(
                self._caller(ctx), name, category or "", consolidated_content or "", summary or "", force=force
            )
            return ConsolidateMemoryResult(survivor=MemoryOut.of(survivor), merged_ids=merged, seq=survivor.seq)
        return await self._ops.consolidate_memory(
            self._caller(ctx), kind=kind, consolidated_content=consolidated_content, memory_ids=memory_ids,
            memory_type=memory_type, tag=tag, topic=topic, force=force,
        )  # fmt: skip

    async def detect_contradictions(
        self, ctx: Context, topics: ContradictionTopics = None, limit: ContradictionLimit = DEFAULT_CONTRADICTIONS
    ) -> ContradictionsResult:
        return await self._ops.contradictions(self._caller(ctx), topics=topics, limit=limit)


# The tools in the order tools/list gives them.
TOOLS: ToolTable = (
    (ConsolidationTools.consolidate_memory, CONSOLIDATE_MEMORY_DESCRIPTION, WRITE),
    (ConsolidationTools.detect_contradictions, DETECT_CONTRADICTIONS_DESCRIPTION, READ),
)


def register(server: MCPServer, ops: Operations, packs: PackService, caller: CallerOf) -> None:
    """Adds the consolidation tools to ``server``; ``packs`` serves consolidate_memory's pack form."""
    add_tools(server, ConsolidationTools(ops, packs, caller), TOOLS)
