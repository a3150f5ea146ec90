"""The tools of agents working together: the agents and teams of the namespace, and a team's summary."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

from engram.config import DEFAULT_SEARCH_LIMIT
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import (
    CONSOLIDATE_DESCRIPTION,
    LIST_AGENTS_DESCRIPTION,
    LIST_TEAMS_DESCRIPTION,
    READ,
    WRITE,
)
from engram.services.gateway.mcp.tools import ToolTable, add_tools
from engram.services.gateway.operations import Operations
from engram.services.gateway.schemas.arguments import SearchLimit, TeamName, TeamSearch
from engram.services.gateway.schemas.results import AgentsResult, ConsolidateResult, TeamsResult


class CoordinationTools:
    """The agent and team tools, each declared once as a method (its name and parameters are the tool's), with what
    they use given to the instance: the operations and how a call's caller is resolved."""

    def __init__(self, ops: Operations, caller: CallerOf) -> None:
        self._ops, self._caller = ops, caller

    async def list_agents(self, ctx: Context) -> AgentsResult:
        return await self._ops.agents(self._caller(ctx))

    async def list_teams(
        self, ctx: Context, search: TeamSearch = None, limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    ) -> TeamsResult:
        return await self._ops.teams(self._caller(ctx), search=search, limit=limit)

    async def consolidate_team(self, ctx: Context, team: TeamName = None) -> ConsolidateResult:
        return await self._ops.consolidate_team(self._caller(ctx), team)


# The tools in the order tools/list gives them.
TOOLS: ToolTable = (
    (CoordinationTools.list_agents, LIST_AGENTS_DESCRIPTION, READ),
    (CoordinationTools.list_teams, LIST_TEAMS_DESCRIPTION, READ),
    (CoordinationTools.consolidate_team, CONSOLIDATE_DESCRIPTION, WRITE),
)


def register(server: MCPServer, ops: Operations, caller: CallerOf) -> None:
    """Adds the agent and team tools to ``server``."""
    add_tools(server, CoordinationTools(ops, caller), TOOLS)
