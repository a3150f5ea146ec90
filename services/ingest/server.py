"""Builds the ingest service (build_service) and a standalone gRPC server for it (build_server)."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from engram.config import Settings
from engram.runtime import Resources, RunningServer, serve
from engram.services.ingest.servicer import IngestServicer
from engram.services.ingest.validation import Limits
from engram.services.ingest.writer import MemoryWriter
from engram.v1 import ingest_pb2_grpc


@dataclass
class IngestService:
    writer: MemoryWriter
    name: str = "engram.v1.Ingest"

    def register(self, server: grpc.aio.Server) -> None:
        ingest_pb2_grpc.add_IngestServicer_to_server(IngestServicer(self.writer), server)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


async def build_service(settings: Settings, resources: Resources) -> IngestService:
    limits = Limits(max_content_bytes=settings.max_content_bytes, max_metadata_bytes=settings.max_metadata_bytes)
    writer = MemoryWriter(
        await resources.log(),
        await resources.embedder(),
        resources.sparse,
        limits,
        device=settings.device,
        # Only a log stored on this machine fills this machine's disk (the embedded node).
        disk=resources.disk if resources.local_store else None,
    )
    return IngestService(writer)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)
