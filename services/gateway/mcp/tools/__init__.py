"""The MCP tools, one module per group: a class whose methods are the tools, a module-level TOOLS table that lists
them in order, and register(server, ...), which gives the class what it uses and adds the tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

# A group's tools in the order tools/list gives them: each one's method, description and annotations.
ToolTable = tuple[tuple[Callable[..., Any], str, ToolAnnotations], ...]


def add_tools(server: MCPServer, tools: object, table: ToolTable) -> None:
    """Adds the tools of ``table`` to ``server``, each the method of ``tools`` (an instance of the group's class)."""
    for method, description, hints in table:
        server.add_tool(getattr(tools, method.__name__), description=description, annotations=hints)
