"""What an agent sees first: the session_context tool, and pin_memory / unpin_memory."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import (
    PIN,
    PIN_DESCRIPTION,
    READ,
    SESSION_CONTEXT_DESCRIPTION,
    UNPIN_DESCRIPTION,
)
from engram.services.gateway.mcp.tools import ToolTable, add_tools
from engram.services.gateway.operations.context import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    PROJECT_DESCRIPTION,
    QUERY_DESCRIPTION,
    TOKEN_BUDGET_DESCRIPTION,
    PinResult,
    SessionContext,
    SessionContextOut,
)
from engram.services.gateway.schemas.arguments import MemoryId
from engram.validation import MAX_FIELD_CHARS

SessionProject = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description=PROJECT_DESCRIPTION)]

SessionQuery = Annotated[str | None, Field(min_length=1, pattern=r"\S", description=QUERY_DESCRIPTION)]

TokenBudget = Annotated[int, Field(ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET, description=TOKEN_BUDGET_DESCRIPTION)]

# The session context's Markdown is what the agent reads (the text content); the rest is the structured result.
SessionContextReply = Annotated[CallToolResult, SessionContextOut]


class ContextTools:
    """The session-context and pin tools, each declared once as a method (its name and parameters are the tool's),
    with what they use given to the instance: the session context and how a call's caller is resolved."""

    def __init__(self, context: SessionContext, caller: CallerOf) -> None:
        self._context, self._caller = context, caller

    async def session_context(
        self,
        ctx: Context,
        project: SessionProject = None,
        query: SessionQuery = None,
        token_budget: TokenBudget = DEFAULT_TOKEN_BUDGET,
    ) -> SessionContextReply:
        out = await self._context.build(self._caller(ctx), project=project, query=query, token_budget=token_budget)
        return CallToolResult(
            content=[TextContent(type="text", text=out.markdown)], structured_content=out.model_dump(mode="json")
        )

    async def pin_memory(self, id: MemoryId, ctx: Context) -> PinResult:
        return await self._context.pin(self._caller(ctx), id, pinned=True)

    async def unpin_memory(self, id: MemoryId, ctx: Context) -> PinResult:
        return await self._context.pin(self._caller(ctx), id, pinned=False)


# The tools in the order tools/list gives them.
TOOLS: ToolTable = (
    (ContextTools.session_context, SESSION_CONTEXT_DESCRIPTION, READ),
    (ContextTools.pin_memory, PIN_DESCRIPTION, PIN),
    (ContextTools.unpin_memory, UNPIN_DESCRIPTION, PIN),
)


def register(server: MCPServer, context: SessionContext, caller: CallerOf) -> None:
    """Adds the session-context and pin tools to ``server``."""
    add_tools(server, ContextTools(context, caller), TOOLS)
