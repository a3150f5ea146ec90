"""`engram mcp`: an MCP stdio server for a client that spawns it, attached to the data dir's node. When the node
runs, stdio is relayed to its /mcp (engram.services.node.relay, standard library only: the session starts at
once); otherwise it is served in-process, by a node started for it that stops when its last stdio client leaves."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.config import Settings


def run_stdio(settings: Settings, *, before_serving: Callable[[], None] = lambda: None) -> None:
    """Serves MCP on stdin/stdout until the client closes them; ``before_serving`` runs first when the session is
    served in-process (the relay logs nothing: whatever goes wrong is the answer to a request)."""
    unread = _relayed(settings)
    if unread is None:
        return
    if unread:
        sys.stdin = _replaying(unread)
    from engram.plainhttp import forget_plain

    forget_plain()  # the relay's http.client has no ssl; what serves in-process needs urllib.request's https
    before_serving()
    import asyncio
    import faulthandler

    faulthandler.enable()  # a native crash still leaves its stack in the log
    asyncio.run(_serve(settings))


def _relayed(settings: Settings) -> bytes | None:
    """Relays the session to the running node: None once done; else what the relay read of stdin (maybe b"")."""
    if not settings.api_key and not settings.dev:
        return b""  # no key where one is needed: the in-process server explains it at every tool call
    from engram.services.node.relay import local_team, relay, relay_headers

    headers = relay_headers(
        api_key=settings.api_key, tools=settings.mcp_tools, agent=settings.agent_id, device=settings.device
    )
    return relay(settings.home, headers, team=lambda: local_team(settings.team, os.environ))


def _replaying(unread: bytes) -> io.TextIOWrapper:
    """Standard input as the in-process server reads it: what the relay read first, then the rest of fd 0."""
    return io.TextIOWrapper(io.BufferedReader(_Replay(unread, sys.stdin.buffer.fileno())), encoding="utf-8")


class _Replay(io.RawIOBase):
    def __init__(self, first: bytes, fd: int) -> None:
        self._first = first
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._first:
            n = min(len(buffer), len(self._first))
            buffer[:n], self._first = self._first[:n], self._first[n:]
            return n
        data = os.read(self._fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)


async def _serve(settings: Settings) -> None:
    from engram.process.launcher import attached, find_or_start
    from engram.services.gateway.backend import Backend
    from engram.services.gateway.mcp.stdio import serve_stdio

    info = await find_or_start(settings.home)
    if not info.dev:
        settings = settings.replace(dev_mode=False)  # the node's policy holds for its stdio clients too
    async with attached(info, client=f"engram mcp (pid {os.getpid()})"):
        backend = Backend(
            ingest_addr=info.grpc_address, search_addr=info.grpc_address, consolidation_addr=info.grpc_address
        )
        try:
            await serve_stdio(settings, backend)
        finally:
            await backend.close()
