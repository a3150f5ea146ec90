"""Builds the sync service and a standalone gRPC server for it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import grpc

from engram.config import Settings
from engram.grpc.clients import DEFAULT_RPC_TIMEOUT, SearchClient
from engram.log.events import memory_vectors
from engram.model import Memory
from engram.models.named import vector_model_id
from engram.process.runtime import Resources, RunningServer, serve
from engram.services.sync.inbox import Inbox
from engram.services.sync.servicer import SyncServicer
from engram.v1 import sync_pb2_grpc
from engram.validation import Limits


@dataclass
class SyncService:
    """The sync gRPC service. Set `search_addr` before start(): pushed changes are applied on the current
    versions the search service reads (in the embedded node it is only known once the gRPC server has bound)."""

    settings: Settings
    resources: Resources
    search_addr: str | None = None
    name: str = "engram.v1.Sync"
    inbox: Inbox | None = field(default=None, init=False, repr=False)
    _search: SearchClient | None = field(default=None, init=False, repr=False)

    def register(self, server: grpc.aio.Server) -> None:
        sync_pb2_grpc.add_SyncServicer_to_server(SyncServicer(self), server)

    async def start(self) -> None:
        address = self.search_addr or self.settings.search_addr
        if not address:
            return  # every call answers Unavailable, saying what to set
        self._search = SearchClient(address, timeout=DEFAULT_RPC_TIMEOUT)
        settings, resources = self.settings, self.resources
        limits = Limits.of(settings)

        async def embed(memories: list[Memory]) -> list[dict[str, Any]]:
            # Only for changes whose vectors a device made with other models: the embedder loads on first use.
            return await asyncio.to_thread(memory_vectors, await resources.embedder(), resources.sparse, memories)

        model_id, dim = vector_model_id(settings.embed_model, settings.embed_precision)
        self.inbox = Inbox(
            await resources.log(), self._search, await resources.sync_store(), limits=limits,
            models=(model_id, resources.sparse.model_id), dim=dim,
            embed=embed,
        )  # fmt: skip

    async def stop(self) -> None:
        search, self._search, self.inbox = self._search, None, None
        if search is not None:
            await search.close()


async def build_service(settings: Settings, resources: Resources) -> SyncService:
    return SyncService(settings, resources)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)
