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
from engram.services.gateway.operations import Operations
from engram.services.gateway.schemas.arguments import SearchLimit, TeamName, TeamSearch
from engram.services.gateway.schemas.results import AgentsResult, ConsolidateResult, TeamsResult


def register(server: MCPServer, ops: Operations, caller: CallerOf) -> None:
    """Adds the agent and team tools to ``server``."""

    @server.tool(description=LIST_AGENTS_DESCRIPTION, annotations=READ)
    async def list_agents(ctx: Context) -> AgentsResult:
        return await ops.agents(caller(ctx))

    @server.tool(description=LIST_TEAMS_DESCRIPTION, annotations=READ)
    async def list_teams(
        ctx: Context, search: TeamSearch = None, limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    ) -> TeamsResult:
        return await ops.teams(caller(ctx), search=search, limit=limit)

    @server.tool(description=CONSOLIDATE_DESCRIPTION, annotations=WRITE)
    async def consolidate_team(ctx: Context, team: TeamName = None) -> ConsolidateResult:
        return await ops.consolidate_team(caller(ctx), team)
