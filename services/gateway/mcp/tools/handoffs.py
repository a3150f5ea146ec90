"""The handoff tools: hand work over to another agent, list handoffs, accept and complete them."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import (
    ACCEPT_HANDOFF_DESCRIPTION,
    COMPLETE_HANDOFF_DESCRIPTION,
    CREATE_HANDOFF_DESCRIPTION,
    LIST_HANDOFFS_DESCRIPTION,
    READ,
    WRITE,
)
from engram.services.gateway.operations import Operations
from engram.services.gateway.schemas.arguments import (
    DEFAULT_LIST_LIMIT,
    ActiveFiles,
    DecisionsMade,
    Detail,
    ExpectedVersion,
    HandoffContext,
    HandoffNote,
    HandoffRole,
    HandoffStatusArg,
    ImportanceArg,
    ListLimit,
    MemoryId,
    NextSteps,
    PageToken,
    Project,
    Tags,
    TargetAgent,
    Team,
)
from engram.services.gateway.schemas.requests import HandoffListRequest, HandoffMoveRequest, HandoffRequest
from engram.services.gateway.schemas.results import ListResult, SaveResult


def register(server: MCPServer, ops: Operations, caller: CallerOf) -> None:
    """Adds the handoff tools to ``server``."""

    @server.tool(description=CREATE_HANDOFF_DESCRIPTION, annotations=WRITE)
    async def create_handoff(
        target_agent: TargetAgent,
        context: HandoffContext,
        ctx: Context,
        active_files: ActiveFiles = None,
        decisions_made: DecisionsMade = None,
        next_steps: NextSteps = None,
        tags: Tags = None,
        team: Team = None,
        project: Project = None,
        importance: ImportanceArg = None,
    ) -> SaveResult:
        request = HandoffRequest(
            target_agent=target_agent, context=context, active_files=active_files, decisions_made=decisions_made,
            next_steps=next_steps, tags=tags, team=team, project=project, importance=importance,
        )  # fmt: skip
        return await ops.create_handoff(caller(ctx), request)

    @server.tool(description=LIST_HANDOFFS_DESCRIPTION, annotations=READ)
    async def list_handoffs(
        ctx: Context,
        status: HandoffStatusArg = "pending",
        role: HandoffRole = "to_me",
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        page_token: PageToken = None,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> ListResult:
        request = HandoffListRequest(status=status, role=role, limit=limit, page_token=page_token)
        return await ops.handoffs(caller(ctx), request)

    @server.tool(description=ACCEPT_HANDOFF_DESCRIPTION, annotations=WRITE)
    async def accept_handoff(
        id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        return await ops.move_handoff(caller(ctx), id, "accepted", request)

    @server.tool(description=COMPLETE_HANDOFF_DESCRIPTION, annotations=WRITE)
    async def complete_handoff(
        id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        return await ops.move_handoff(caller(ctx), id, "completed", request)
