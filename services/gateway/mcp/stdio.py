"""The MCP tools over stdio, for clients that spawn `engram mcp`: identity comes from ENGRAM_* settings."""

from __future__ import annotations

import logging
import os

from engram import claudeteams
from engram.config import Settings
from engram.errors import EngramError
from engram.keys import KeyStore
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import LocalTeam, Resolver
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.operations.cursors import CursorTracker

log = logging.getLogger(__name__)


async def serve_stdio(settings: Settings, backend: Backend, *, keys: KeyStore | None = None) -> None:
    """Serves MCP on stdin/stdout until stdin closes. The caller owns ``backend`` and closes it afterwards.

    Acts with ``settings.api_key`` (ENGRAM_API_KEY); without one, only in dev mode, anonymously in the
    ``default`` namespace. The agent's team is ENGRAM_TEAM, else the Claude Code team it runs in. Nothing may be
    printed to stdout here: it is the protocol channel.
    """
    resolver = Resolver(
        settings, keys or KeyStore(settings.keys_path), stdio=True, local_team=claude_code_team(settings)
    )
    _warn_if_unusable(resolver)
    server = build_mcp(backend, resolver, CursorTracker(), settings)
    await server.run_stdio_async()


def claude_code_team(settings: Settings) -> LocalTeam:
    """ENGRAM_TEAM, else the Claude Code agent team this process was spawned in.

    The variables read here belong to Claude Code, not to Engram's settings: CLAUDE_TEAM_NAME (and the
    CLAUDE_CODE_TEAM_NAME Claude Code gives its teammates), and CLAUDE_CONFIG_DIR, which moves ~/.claude.
    """
    return LocalTeam(settings.team, environ=os.environ, claude_dir=claudeteams.claude_dir(os.environ))


def _warn_if_unusable(resolver: Resolver) -> None:
    # Refusing to start would only show the user "server disconnected"; every tool call reports the problem
    # with instructions instead, and stderr (the client's server log) gets it once up front.
    try:
        resolver.authenticate(None)
    except EngramError as e:
        log.warning("engram mcp: %s", e)
