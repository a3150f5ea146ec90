"""The MCP server: EngramMCPServer (closed input schemas, arguments explained as REST does, calls counted and
timed) and build_mcp, which assembles the tools, resources, prompt and notifications of every group."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, Literal, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.inbound import X_MCP_HEADER_KEY
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from engram.config import Settings
from engram.errors import EngramError
from engram.log import Log
from engram.process import metrics
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import Resolver
from engram.services.gateway.mcp import prompts, resources, subscriptions
from engram.services.gateway.mcp.answers import answering
from engram.services.gateway.mcp.callers import caller_of
from engram.services.gateway.mcp.errors import tool_error
from engram.services.gateway.mcp.instructions import INSTRUCTIONS
from engram.services.gateway.mcp.profiles import ToolProfiles
from engram.services.gateway.mcp.published import lean_annotations, lean_schema
from engram.services.gateway.mcp.tools import consolidation, coordination, handoffs, memories
from engram.services.gateway.mcp.tools import context as session_context
from engram.services.gateway.mcp.tools import packs as pack_tools
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.context import SessionContext
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.schemas.requests import CONSOLIDATE_RULE, DELETE_RULE, SUPERSEDE_RULE, UPDATE_RULE
from engram.services.gateway.schemas.results import ENGRAM_VERSION
from engram.services.gateway.schemas.validation import describe_validation

_LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

# Rules across arguments that a tool's signature cannot state, published in its input schema (as REST does).
_INPUT_RULES = {
    "update_memory": UPDATE_RULE, "supersede_memory": SUPERSEDE_RULE, "consolidate_memory": CONSOLIDATE_RULE,
    "delete_memory": DELETE_RULE,
}  # fmt: skip


def _mcp_log_level(level: str) -> _LogLevel:
    # MCPServer configures the root logger with this level; keep it the node's level.
    upper = level.upper()
    return upper if upper in get_args(_LogLevel) else "WARNING"  # type: ignore[return-value]


class EngramMCPServer(MCPServer):
    """An MCPServer whose tools refuse unknown arguments, as REST refuses unknown fields, and explain invalid
    ones as REST does ("field: what to fix"), not as raw pydantic text.

    The SDK builds each tool's argument model from its signature and ignores extra keys; here the published
    input schemas say ``additionalProperties: false`` and calls are held to it.

    Engram's errors are translated here, once for every tool: a tool body raises the service's error, and the agent
    reads its message (what to do next) as the tool's error.
    """

    _arguments: dict[str, frozenset[str]] | None = None
    _header_routing: dict[str, bool] | None = None

    def add_tool(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Adds a tool that answers compactly (engram.services.gateway.mcp.answers)."""
        super().add_tool(answering(fn), *args, **kwargs)

    async def list_tools(self) -> list[MCPTool]:
        """The tools as tools/list publishes them: closed, lean input schemas; no output schemas
        (engram.services.gateway.mcp.published)."""
        tools = await super().list_tools()
        return [_published(tool) for tool in tools]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Calls a tool, counted and timed by tool and outcome (engram.process.metrics)."""
        tool = name if name in await self._known_arguments() else UNKNOWN_TOOL  # a bounded label
        started, outcome = time.perf_counter(), "internal"
        try:
            result = await self._checked_call(name, arguments, context)
            outcome = "error" if isinstance(result, CallToolResult) and result.is_error else "ok"
            return result
        except ToolError as e:
            outcome = tool_outcome(e)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"  # the client went away
            raise
        finally:
            metrics.MCP_TOOL_CALLS.labels(tool, outcome).inc()
            metrics.MCP_TOOL_DURATION.labels(tool).observe(time.perf_counter() - started)

    async def _checked_call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult | InputRequiredResult:
        known = (await self._known_arguments()).get(name)
        unknown = sorted(set(arguments) - known) if known is not None else []
        if unknown and known is not None:
            takes = ", ".join(sorted(known)) or "no arguments"
            problems = [f"{arg}: is not an argument of {name}; it takes {takes}." for arg in unknown]
            raise ToolError(f"Error executing tool {name}: {'; '.join(problems)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, EngramError):  # the SDK reports what a tool raises as a crash, without its text
                raise tool_error(name, cause) from cause
            if isinstance(e, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            detail = describe_validation(cause.errors(), where="arguments")
            raise ToolError(f"Error executing tool {name}: {detail}") from cause

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema the streamable HTTP transport checks a call's ``Mcp-Param-*`` headers against (2026-07-28
        and later), or None for a tool whose schema routes no argument into a header (no ``x-mcp-header``): the
        check then has nothing to compare, as it finds by walking the whole schema on every call."""
        schema = super()._tool_input_schema(name)
        if schema is None:
            return None
        if self._header_routing is None:
            self._header_routing = {}
        routes = self._header_routing.get(name)
        if routes is None:
            routes = self._header_routing[name] = X_MCP_HEADER_KEY in json.dumps(schema)
        return schema if routes else None

    async def _known_arguments(self) -> dict[str, frozenset[str]]:
        if self._arguments is None:
            tools = await super().list_tools()
            self._arguments = {t.name: frozenset(t.input_schema.get("properties", {})) for t in tools}
        return self._arguments


UNKNOWN_TOOL = "unknown"


def tool_outcome(error: ToolError) -> str:
    """What a failed tool call counts as: the kind of the Engram error behind it (not_found, permission_denied, ...),
    invalid_argument for arguments that do not fit, internal for a crash."""
    if isinstance(error, UnexpectedToolError):
        return "internal"
    cause: BaseException | None = error.__cause__
    while cause is not None:
        if isinstance(cause, EngramError):
            return cause.code
        cause = cause.__cause__
    return "invalid_argument"  # unknown tools and arguments, values that fail validation


def _published(tool: MCPTool) -> MCPTool:
    schema = lean_schema(_closed(tool.name, tool.input_schema))
    description = " ".join((tool.description or "").split())  # a docstring's indentation costs as much as words
    return tool.model_copy(
        update={
            "description": description, "input_schema": schema, "output_schema": None,
            "annotations": lean_annotations(tool.annotations),
        }
    )  # fmt: skip


def _closed(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's input schema refusing unknown arguments, with its rules across arguments (the operations
    enforce the same rules)."""
    return {**schema, **_INPUT_RULES.get(tool, {}), "additionalProperties": False}


def build_mcp(
    backend: Backend, resolver: Resolver, cursors: CursorTracker, settings: Settings, *, event_log: Log | None = None
) -> MCPServer:
    """The Engram MCP server: save, search, get, list, update, delete and supersede memories, their history,
    a memory at a point in time, the namespace's stats, ping; the agents, teams and handoffs of the namespace; its
    consolidation (maintenance jobs, summaries that replace memories) and open contradictions; session context and
    pins, the resources and their update notifications (with ``event_log``), the prompt, and the expert packs.

    A connection lists the tools of its profile: the one it asks for over HTTP, else ``settings.mcp_tools``
    (engram.services.gateway.mcp.profiles)."""
    server: MCPServer = EngramMCPServer(
        name="engram",
        title="Engram shared memory",
        instructions=INSTRUCTIONS,
        version=ENGRAM_VERSION,
        log_level=_mcp_log_level(settings.log_level),
        middleware=[ToolProfiles(settings.mcp_tools)],
    )
    ops = Operations(backend, cursors, settings)
    packs = PackService(backend, cursors)
    context = SessionContext(backend, cursors, settings)
    caller = caller_of(resolver)
    memories.register(server, ops, packs, caller)
    coordination.register(server, ops, caller)
    consolidation.register(server, ops, packs, caller)
    handoffs.register(server, ops, caller)
    session_context.register(server, context, caller)
    resources.register(server, context, caller)
    prompts.register(server, caller, packs)
    if event_log is not None:
        subscriptions.register(server, event_log, caller)
    pack_tools.register(server, packs, settings, caller)
    return server
