"""Builds the search service (indexer + reads) and a standalone gRPC server for it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import grpc

from engram.config import Settings
from engram.embed.cache import CachedEmbedder
from engram.index import DENSE, QUESTIONS, SPARSE, MemoryIndex
from engram.index.edge import EdgeIndex
from engram.rerank import Reranker, load_reranker
from engram.runtime import Resources, RunningServer, serve
from engram.services.search.indexer import Indexer
from engram.services.search.reader import MemoryReader, PipelineConfig
from engram.services.search.servicer import SearchServicer
from engram.v1 import search_pb2_grpc

log = logging.getLogger(__name__)


@dataclass
class SearchService:
    index: MemoryIndex
    indexer: Indexer
    reader: MemoryReader
    embedder: CachedEmbedder
    name: str = "engram.v1.Search"

    def register(self, server: grpc.aio.Server) -> None:
        search_pb2_grpc.add_SearchServicer_to_server(SearchServicer(self.reader), server)

    async def start(self) -> None:
        await self.indexer.start()

    async def stop(self) -> None:
        await self.indexer.stop()
        await asyncio.to_thread(self.index.close)
        self.embedder.close()


def open_index(settings: Settings, dim: int) -> MemoryIndex:
    """The index backend: a Qdrant server when ENGRAM_QDRANT_URL is set, else a Qdrant Edge shard in the data dir."""
    if settings.qdrant_url:
        from engram.index.server import QdrantServerIndex

        return QdrantServerIndex.from_url(
            settings.qdrant_url, api_key=settings.qdrant_api_key, collection=settings.qdrant_collection, dim=dim
        )
    return EdgeIndex(settings.home / "index", dim=dim)


def pipeline_config(settings: Settings) -> PipelineConfig:
    return PipelineConfig(
        fusion=settings.fusion,
        rrf_k=settings.rrf_k,
        weights={DENSE: settings.weight_dense, SPARSE: settings.weight_bm25, QUESTIONS: settings.weight_questions},
        rerank_top_n=settings.rerank_top_n,
        rerank_by_default=settings.rerank,
    )


def open_reranker(settings: Settings) -> Reranker | None:
    """The installed cross-encoder, or None (search works without one; /readyz and explain say rerank is off)."""
    reranker = load_reranker(settings.model_cache_dir)
    if reranker is None:
        log.info("rerank is off: no reranker installed (engram models pull <hub-id>)")
    else:
        log.info("rerank is on: %s (default for searches: %s)", reranker.model_id, "on" if settings.rerank else "off")
    return reranker


async def build_service(settings: Settings, resources: Resources) -> SearchService:
    # The query cache belongs to the data dir, not the (possibly shared) model cache.
    embedder = CachedEmbedder(await resources.embedder(), settings.home / "cache" / "query-embeddings.sqlite")
    index = await asyncio.to_thread(open_index, settings, embedder.dim)
    indexer = Indexer(await resources.log(), index)
    reranker = await asyncio.to_thread(open_reranker, settings)
    reader = MemoryReader(
        index,
        indexer,
        embedder,
        resources.sparse,
        read_wait=settings.read_wait_seconds,
        config=pipeline_config(settings),
        reranker=reranker,
    )
    return SearchService(index, indexer, reader, embedder)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen)
