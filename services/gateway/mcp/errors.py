"""Engram's errors as MCP tool errors, whose message tells the agent what to do next."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mcp.server.mcpserver.exceptions import ToolError

from engram.errors import EngramError


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Service errors become tool errors, whose message tells the agent what to do next."""
    try:
        yield
    except EngramError as e:
        raise ToolError(str(e)) from e
