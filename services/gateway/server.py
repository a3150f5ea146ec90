"""The gateway as a server like the others: build_server(settings, deps) starts its HTTP app (MCP, REST, SSE)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import uvicorn

from engram.config import Settings
from engram.grpc.local import Searcher
from engram.keys import KeyStore
from engram.log import Log
from engram.process.heap import freeze_startup_objects
from engram.process.ports import listen_socket
from engram.services.gateway.app import build_app
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import check_bind
from engram.services.gateway.sse.streams import EventStreams

STOP_GRACE_SECONDS = 5.0  # how long stopping waits for running requests before it drops their connections


@dataclass(frozen=True, slots=True)
class GatewayDeps:
    """What the gateway needs: where the services answer, the key store, the log (for live events), and optionally
    its bound socket."""

    ingest_addr: str
    search_addr: str
    keys: KeyStore
    sock: socket.socket | None = None  # bound early with listen_socket, so a taken port is reported first
    consolidation_addr: str | None = None  # team summaries; None: those tools answer "unavailable"
    sync_addr: str | None = None  # edge devices push and pull here; None: /v1/sync answers "unavailable"
    event_log: Log | None = None  # live events (SSE, MCP resource updates); None: those answer "unavailable"
    replicas: bool = False  # other gateway replicas acknowledge writes too (the cluster): reads wait for theirs too
    searcher: Searcher | None = None  # the search service of this process (the embedded node): searches skip gRPC


class RunningGateway:
    """A started gateway: ``stop()`` stops taking requests, ``close()`` then closes its clients of the services."""

    def __init__(
        self, server: _Uvicorn, task: asyncio.Task[None], url: str, backend: Backend, streams: EventStreams
    ) -> None:
        self._server, self._task, self.url, self._backend, self._streams = server, task, url, backend, streams

    async def stop(self) -> None:
        self._streams.stop()  # live event streams never end by themselves, and uvicorn waits for open responses
        await stop_http(self._server, self._task)

    async def close(self) -> None:
        await self._backend.close()


async def build_server(settings: Settings, deps: GatewayDeps) -> RunningGateway:
    """Starts the gateway on settings.host:settings.port (or deps.sock) in front of the given services."""
    check_bind(settings, deps.keys)
    backend = Backend(
        ingest_addr=deps.ingest_addr,
        search_addr=deps.search_addr,
        consolidation_addr=deps.consolidation_addr,
        sync_addr=deps.sync_addr,
        searcher=deps.searcher,
    )
    try:
        app = build_app(settings, backend, deps.keys, event_log=deps.event_log, replicas=deps.replicas)
        server, task, url = await start_http(app, settings.host, settings.port, sock=deps.sock)
    except BaseException:
        await backend.close()
        raise
    return RunningGateway(server, task, url, backend, app.state.event_streams)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: the node owns SIGINT/SIGTERM and stops everything in order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def start_http(
    app: Any, host: str, port: int, *, sock: socket.socket | None = None
) -> tuple[_Uvicorn, asyncio.Task[None], str]:
    """Starts uvicorn for app and returns it once it listens, with its URL (port 0 picks one).

    ``sock``: a socket already bound with ``listen_socket`` (so a taken port was reported before anything started);
    without one it is bound here, raising PortInUse if the port is taken.
    """
    if sock is None:
        sock = listen_socket(host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    server = _Uvicorn(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()  # raises the startup error
            raise OSError(f"the HTTP server did not start on {host}:{port}")
        await asyncio.sleep(0.01)
    freeze_startup_objects()
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return server, task, f"http://{shown}:{bound}"


async def stop_http(server: _Uvicorn, task: asyncio.Task[None], *, grace: float = STOP_GRACE_SECONDS) -> None:
    """Stops taking requests, lets running ones finish for up to ``grace`` seconds, then drops their connections.

    A client that stopped reading never lets its response finish (its writes wait for a drain that never comes),
    and uvicorn waits for every open connection: without the drop, such a client would keep the node running.
    """
    server.should_exit = True
    done, _ = await asyncio.wait({task}, timeout=grace)
    if not done:
        for connection in list(server.server_state.connections):
            connection.transport.abort()
    with contextlib.suppress(asyncio.CancelledError):
        await task
