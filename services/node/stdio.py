"""`engram mcp`: an MCP stdio server for a client that spawns it, attached to the data dir's node (started for it
when none runs, and stopped when its last stdio client leaves)."""

from __future__ import annotations

import asyncio
import faulthandler
import os

from engram.config import Settings


def run_stdio(settings: Settings) -> None:
    """Serves MCP on stdin/stdout until the client closes them."""
    faulthandler.enable()  # a native crash still leaves its stack in the log
    asyncio.run(_serve(settings))


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
