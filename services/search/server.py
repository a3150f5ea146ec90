"""Builds the search service (indexer + reads) and a standalone gRPC server for it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import grpc

from engram.config import Settings
from engram.index import MemoryIndex
from engram.index.edge import EdgeIndex
from engram.runtime import Resources, RunningServer, serve
from engram.services.search.indexer import Indexer
from engram.services.search.reader import MemoryReader
from engram.services.search.servicer import SearchServicer
from engram.v1 import search_pb2_grpc


@dataclass
class SearchService:
    index: MemoryIndex
    indexer: Indexer
    reader: MemoryReader
    name: str = "engram.v1.Search"

    def register(self, server: grpc.aio.Server) -> None:
        search_pb2_grpc.add_SearchServicer_to_server(SearchServicer(self.reader), server)

    async def start(self) -> None:
        await self.indexer.start()

    async def stop(self) -> None:
        await self.indexer.stop()
        await asyncio.to_thread(self.index.close)


def open_index(settings: Settings, dim: int) -> MemoryIndex:
    """The index backend for this deployment: a Qdrant Edge shard in the data dir."""
    if settings.qdrant_url:
        raise NotImplementedError("ENGRAM_QDRANT_URL (the Qdrant server backend) is not available yet.")
    return EdgeIndex(settings.home / "index", dim=dim)


async def build_service(settings: Settings, resources: Resources) -> SearchService:
    embedder = await resources.embedder()
    index = await asyncio.to_thread(open_index, settings, embedder.dim)
    indexer = Indexer(await resources.log(), index)
    reader = MemoryReader(index, indexer, embedder, resources.sparse, read_wait=settings.read_wait_seconds)
    return SearchService(index, indexer, reader)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen)
