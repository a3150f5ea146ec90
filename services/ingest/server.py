"""Builds the ingest service (build_service) and a standalone gRPC server for it (build_server)."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc

from engram.config import Settings
from engram.grpc.clients import SearchClient
from engram.process.runtime import Resources, RunningServer, serve
from engram.services.ingest.conversations import Conversations
from engram.services.ingest.duplicates import Duplicates
from engram.services.ingest.lifecycle import Lifecycle
from engram.services.ingest.servicer import IngestServicer
from engram.services.ingest.writer import MemoryWriter
from engram.v1 import ingest_pb2_grpc
from engram.validation import Limits


@dataclass
class IngestService:
    """The ingest gRPC service. Changes to existing memories read their current version from the search service:
    set ``search_addr`` before start() (the embedded node knows it only once its gRPC server has bound)."""

    writer: MemoryWriter
    lifecycle: Lifecycle
    search_addr: str | None = None
    name: str = "engram.v1.Ingest"
    _search: SearchClient | None = field(default=None, init=False, repr=False)

    def register(self, server: grpc.aio.Server) -> None:
        ingest_pb2_grpc.add_IngestServicer_to_server(IngestServicer(self.writer, self.lifecycle), server)

    async def start(self) -> None:
        if self.search_addr:
            self._search = SearchClient(self.search_addr)
            self.lifecycle.state = self._search
            if self.writer.conversations is not None:  # a conversation's earlier turns are read there too
                self.writer.conversations.source = self._search
            if self.writer.duplicates is not None:  # and the memories a save repeats
                self.writer.duplicates.source = self._search

    async def stop(self) -> None:
        search, self._search = self._search, None
        if search is not None:
            await search.close()


async def build_service(settings: Settings, resources: Resources) -> IngestService:
    limits = Limits.of(settings)
    event_log = await resources.log()
    writer = MemoryWriter(
        event_log,
        await resources.embedder(),
        resources.sparse,
        limits,
        device=settings.device,
        # Only a log stored on this machine fills this machine's disk (the embedded node).
        disk=resources.disk if resources.local_store else None,
        handoff_ttl=settings.handoff_ttl_seconds,
        conversations=Conversations() if settings.derive_context else None,
        duplicates=Duplicates(),
    )
    return IngestService(writer, Lifecycle(writer, event_log), search_addr=settings.search_addr)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)
