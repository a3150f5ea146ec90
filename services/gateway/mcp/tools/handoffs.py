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
from engram.services.gateway.mcp.tools import ToolTable, add_tools
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


class HandoffTools:
    """The handoff tools, each declared once as a method (its name and parameters are the tool's), with what they
    use given to the instance: the operations and how a call's caller is resolved."""

    def __init__(self, ops: Operations, caller: CallerOf) -> None:
        self._ops, self._caller = ops, caller

    async def create_handoff(
        self,
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
        return await self._ops.create_handoff(self._caller(ctx), request)

    async def list_handoffs(
        self,
        ctx: Context,
        status: HandoffStatusArg = "pending",
        role: HandoffRole = "to_me",
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        page_token: PageToken = None,
        detail: Detail = "compact",  # read by the MCP edge (engram.services.gateway.mcp.answers)
    ) -> ListResult:
        request = HandoffListRequest(status=status, role=role, limit=limit, page_token=page_token)
        return await self._ops.handoffs(self._caller(ctx), request)

    async def accept_handoff(
        self, id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        return await self._ops.move_handoff(self._caller(ctx), id, "accepted", request)

    async def complete_handoff(
        self, id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        return await self._ops.move_handoff(self._caller(ctx), id, "completed", request)


# The tools in the order tools/list gives them.
TOOLS: ToolTable = (
    (HandoffTools.create_handoff, CREATE_HANDOFF_DESCRIPTION, WRITE),
    (HandoffTools.list_handoffs, LIST_HANDOFFS_DESCRIPTION, READ),
    (HandoffTools.accept_handoff, ACCEPT_HANDOFF_DESCRIPTION, WRITE),
    (HandoffTools.complete_handoff, COMPLETE_HANDOFF_DESCRIPTION, WRITE),
)


def register(server: MCPServer, ops: Operations, caller: CallerOf) -> None:
    """Adds the handoff tools to ``server``."""
    add_tools(server, HandoffTools(ops, caller), TOOLS)
