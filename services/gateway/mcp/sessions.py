"""What the server remembers of each MCP session: the latest memory saved through it, as the context of the next."""

from __future__ import annotations

import threading
from collections import OrderedDict

from mcp.server.mcpserver import Context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from engram.model import SENSITIVITIES, Caller

# Saves through one MCP session remember the previous memory's content, as the context of the next save that has
# none (issue 8: the previous turn lifts recall); these bound what the gateway keeps for it.
MAX_REMEMBERED_SESSIONS = 1024

MAX_REMEMBERED_CHARS = 4000

STDIO_SESSION = "stdio"  # a stdio server serves one client: its whole life is one session


class PreviousSaves:
    """The latest memory saved through each MCP session (least recently used sessions forgotten), as the context
    of the session's next save.

    Keyed by (session, namespace, agent), so a session whose requests change key or agent never passes one
    caller's memory to another."""

    def __init__(self, *, capacity: int = MAX_REMEMBERED_SESSIONS) -> None:
        self._latest: OrderedDict[tuple[str, str, str], tuple[str, str]] = OrderedDict()  # -> content, sensitivity
        self._capacity = capacity
        self._lock = threading.Lock()  # stdio and HTTP tools may run in worker threads

    def context_for(self, key: tuple[str, str, str], sensitivity: str | None) -> str | None:
        """The latest content of the session, unless it is more sensitive than the memory it would situate (its
        text would leave with that memory: a secret must never)."""
        with self._lock:
            latest = self._latest.get(key)
        if latest is None or _rank(latest[1]) > _rank(sensitivity or SENSITIVITIES[0]):
            return None
        return latest[0]

    def remember(self, key: tuple[str, str, str], content: str, sensitivity: str) -> None:
        with self._lock:
            self._latest[key] = (content[:MAX_REMEMBERED_CHARS], sensitivity)
            self._latest.move_to_end(key)
            while len(self._latest) > self._capacity:
                self._latest.popitem(last=False)


def _rank(sensitivity: str) -> int:
    """normal < private < secret; anything unknown counts as the most sensitive."""
    return SENSITIVITIES.index(sensitivity) if sensitivity in SENSITIVITIES else len(SENSITIVITIES)


def session_key(ctx: Context, who: Caller) -> tuple[str, str, str] | None:
    """The MCP session of a request (stdio: the process), None when it has none (stateless, 2026-07-28 requests)."""
    request = ctx.request_context.request
    session = STDIO_SESSION if request is None else getattr(request, "headers", {}).get(MCP_SESSION_ID_HEADER)
    return (session, who.namespace, who.agent_id) if session else None
