"""`engram run <service>`: one service alone, as a cluster runs it (each its own process, NATS and peers by
address); it waits for NATS as long as it takes, saying so, and stops on Ctrl-C or SIGTERM meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from engram.config import Settings, SettingsError

WAIT_NOTICE_SECONDS = 3.0  # a service still waiting for NATS after this long says so

T = TypeVar("T")


def run_service(name: str, settings: Settings) -> None:
    """Runs the service ``name`` until the process is asked to stop, with GET /metrics on ENGRAM_METRICS_LISTEN."""
    from engram.process.metrics import serving

    faulthandler.enable()  # a native crash (e.g. SIGBUS from a memory-mapped file) still leaves a line in the log
    with serving(settings.metrics_listen):
        asyncio.run(_run(name, settings))


async def _run(name: str, settings: Settings) -> None:
    from engram.services.node.node import install_stop_signals

    stop = asyncio.Event()
    install_stop_signals(stop)
    if name == "gateway":
        await _run_gateway(settings, stop)
        return
    from importlib import import_module

    from engram.process.runtime import Resources

    module = import_module(f"engram.services.{name}.server")
    resources = Resources(settings)
    running = await _until_stopped(module.build_server(settings, resources), stop, name, settings)
    if running is None:
        await resources.close()
        return
    print(f"engram {name} ready at {running.address}", flush=True)
    try:
        await stop.wait()
    finally:
        await running.stop(grace=1.0)
        await resources.close()


async def _until_stopped(
    starting: Coroutine[Any, Any, T], stop: asyncio.Event, name: str, settings: Settings
) -> T | None:
    """What ``starting`` returns, or None when the process is asked to stop first (Ctrl-C, SIGTERM): a service
    waits for NATS as long as it takes to answer (its pods may start first), saying so, and stops while it waits."""
    task = asyncio.ensure_future(starting)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({task, stopping}, timeout=WAIT_NOTICE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            print(f"engram {name}: waiting for NATS at {settings.nats_url} to answer (Ctrl-C to stop)",
                  file=sys.stderr, flush=True)  # fmt: skip
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None
    finally:
        stopping.cancel()


async def _run_gateway(settings: Settings, stop: asyncio.Event) -> None:
    from engram.keys import KeyStore
    from engram.services.gateway.server import GatewayDeps, build_server

    if not settings.ingest_addr or not settings.search_addr:
        raise SettingsError(
            "The gateway needs --ingest-addr and --search-addr (ENGRAM_INGEST_ADDR, ENGRAM_SEARCH_ADDR)."
        )
    from engram.process.runtime import Resources

    resources = Resources(settings)
    try:
        # Live events (SSE, MCP resource updates) follow the log; without NATS the gateway serves everything else.
        event_log = await _until_stopped(resources.log(), stop, "gateway", settings) if settings.nats_url else None
        if settings.nats_url and event_log is None:
            return
        deps = GatewayDeps(
            settings.ingest_addr, settings.search_addr, KeyStore(settings.keys_path),
            consolidation_addr=settings.consolidation_addr, sync_addr=settings.sync_addr, event_log=event_log,
            replicas=True,
        )  # fmt: skip
        gateway = await build_server(settings, deps)
        print(f"engram gateway ready at {gateway.url} (MCP at {gateway.url}/mcp)", flush=True)
        try:
            await stop.wait()
        finally:
            await gateway.stop()
            await gateway.close()
    finally:
        await resources.close()
