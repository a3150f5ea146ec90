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


def register(server: MCPServer, ops: Operations, packs: PackService, caller: CallerOf) -> None:
    """Adds the consolidation tools to ``server``; ``packs`` serves consolidate_memory's pack form."""

    @server.tool(description=CONSOLIDATE_MEMORY_DESCRIPTION, annotations=WRITE)
    async def consolidate_memory(
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
            survivor, merged = await packs.consolidate(
                caller(ctx), name, category or "", consolidated_content or "", summary or "", force=force
            )
            return ConsolidateMemoryResult(survivor=MemoryOut.of(survivor), merged_ids=merged, seq=survivor.seq)
        return await ops.consolidate_memory(
            caller(ctx), kind=kind, consolidated_content=consolidated_content, memory_ids=memory_ids,
            memory_type=memory_type, tag=tag, topic=topic, force=force,
        )  # fmt: skip

    @server.tool(description=DETECT_CONTRADICTIONS_DESCRIPTION, annotations=READ)
    async def detect_contradictions(
        ctx: Context, topics: ContradictionTopics = None, limit: ContradictionLimit = DEFAULT_CONTRADICTIONS
    ) -> ContradictionsResult:
        return await ops.contradictions(caller(ctx), topics=topics, limit=limit)
