"""Engram's errors as MCP tool errors, translated once, where a tool call ends (EngramMCPServer._checked_call)."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError

from engram.errors import EngramError


def tool_error(tool: str, error: EngramError) -> ToolError:
    """The tool error an agent reads for a service error raised by ``tool``: the SDK's prefix, then the error's own
    message, which tells the agent what to do next."""
    return ToolError(f"Error executing tool {tool}: {error}")
