"""MCP resources (engram://profile, engram://recent, engram://projects, engram://memory/{id}), their update
notifications, the engram-system-prompt prompt, and the session-context and pin tools (to be filled in)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer

from engram.config import Settings
from engram.log import Log
from engram.model import Caller
from engram.services.gateway.backend import Backend
from engram.services.gateway.operations import CursorTracker


def register_context_features(
    server: MCPServer,
    *,
    backend: Backend,
    cursors: CursorTracker,
    settings: Settings,
    caller: Callable[[Context], Caller],
    event_log: Log | None,
) -> None:
    """Adds the resources, the prompt and the session-context tools to ``server``."""
