"""What the services of one process share: settings, the log connection, the embedders; and how they are served."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import grpc

from engram.config import Settings
from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import Unavailable
from engram.log import EventLog
from engram.rpc import add_health, bind, mark_serving

log = logging.getLogger(__name__)

DEFAULT_GRACE_SECONDS = 5.0


class Service(Protocol):
    """A gRPC service with a lifecycle; every service package builds one."""

    name: str  # the full gRPC service name, e.g. "engram.v1.Ingest"

    def register(self, server: grpc.aio.Server) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class Resources:
    """Created once per process and shared, so the embedded node loads the model and connects to NATS once."""

    settings: Settings
    _log: EventLog | None = None
    _embedder: Embedder | None = None
    _sparse: Bm25Encoder = field(default_factory=Bm25Encoder)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def log(self) -> EventLog:
        async with self._lock:
            if self._log is None:
                if not self.settings.nats_url:
                    raise Unavailable("No NATS address: set ENGRAM_NATS_URL or pass --nats-url.")
                self._log = await EventLog.connect(self.settings.nats_url, stream=self.settings.stream)
            return self._log

    async def embedder(self) -> Embedder:
        async with self._lock:
            if self._embedder is None:
                from engram.embed import OnnxEmbedder

                cache = self.settings.model_cache_dir
                self._embedder = await asyncio.to_thread(
                    OnnxEmbedder.from_package, cache, precision=self.settings.embed_precision
                )
            return self._embedder

    @property
    def sparse(self) -> Bm25Encoder:
        return self._sparse

    async def close(self) -> None:
        if self._log is not None:
            await self._log.close()
            self._log = None


@dataclass
class RunningServer:
    server: grpc.aio.Server
    address: str
    services: list[Service]

    async def stop(self, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        await self.server.stop(grace)
        for service in reversed(self.services):
            await service.stop()


async def serve(
    services: list[Service],
    listen: str,
    *,
    extra: list[Service] | None = None,
    on_bound: Callable[[str], None] | None = None,
) -> RunningServer:
    """Starts the services, then one gRPC server hosting all of them plus the health service.

    on_bound receives the bound address before any service starts (the embedded node's services call each
    other through it).
    """
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)])
    health = add_health(server)
    everything = [*services, *(extra or [])]
    for service in everything:
        service.register(server)
    address = bind(server, listen)
    if on_bound is not None:
        on_bound(address)
    started: list[Service] = []
    try:
        for service in everything:
            await service.start()
            started.append(service)
        await server.start()
    except BaseException:
        for service in reversed(started):
            await service.stop()
        await server.stop(0)
        raise
    await mark_serving(health, [s.name for s in everything])
    log.info("gRPC listening on %s: %s", address, ", ".join(s.name for s in everything))
    return RunningServer(server, address, everything)
