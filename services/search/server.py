"""Builds the search service (indexer + reads) and a standalone gRPC server for it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

import grpc

from engram.config import Settings
from engram.embed.cache import CachedEmbedder
from engram.errors import DiskFull
from engram.index import DENSE, QUESTIONS, SPARSE, IndexDamaged, MemoryIndex
from engram.index.qdrant_edge import EdgeIndex, move_aside
from engram.models.catalog import RERANKER
from engram.models.named import Hub, classifier_dir
from engram.models.rerank import Reranker, RerankSettings, load_reranker
from engram.process.health import MIB, disk_space
from engram.process.runtime import Resources, RunningServer, serve
from engram.services.search import latest
from engram.services.search.access import AccessRecorder
from engram.services.search.indexer import Indexer
from engram.services.search.reader import MemoryReader, PipelineConfig
from engram.services.search.servicer import SearchServicer
from engram.v1 import search_pb2_grpc

log = logging.getLogger(__name__)

INDEX_MIN_HEADROOM_MB = 64


@dataclass
class SearchService:
    index: MemoryIndex
    versions: MemoryIndex
    indexer: Indexer
    reader: MemoryReader
    embedder: CachedEmbedder
    access: AccessRecorder
    name: str = "engram.v1.Search"

    def register(self, server: grpc.aio.Server) -> None:
        search_pb2_grpc.add_SearchServicer_to_server(SearchServicer(self.reader, self.indexer), server)

    async def start(self) -> None:
        await self.indexer.start()
        await self.access.start()

    async def stop(self) -> None:
        await self.access.stop()
        await self.indexer.stop()
        await asyncio.to_thread(self.index.close)
        await asyncio.to_thread(self.versions.close)
        self.embedder.close()


class IndexSpace:
    """Free space where the Qdrant Edge shard lives: it maps its files into memory, so a full disk would crash
    the process (SIGBUS) instead of failing a write; the indexer pauses well before that."""

    def __init__(self, path: Path, reserve_bytes: int) -> None:
        self._path = path
        self._reserve = reserve_bytes

    def index_space_problem(self) -> str | None:
        space = disk_space(self._path, self._reserve)
        if space.ok:
            return None
        return (
            f"only {space.free_bytes // MIB} MiB free in {self._path} (the index needs {self._reserve // MIB} MiB "
            "of headroom); free some space, the index resumes by itself"
        )


def index_reserve_bytes(settings: Settings) -> int:
    """Headroom the Edge shard needs: it preallocates WAL segments and grows mapped files in 32 MiB steps."""
    return max(INDEX_MIN_HEADROOM_MB, settings.disk_reserve_mb // 2) * MIB


VERSIONS_SUFFIX = "-versions"


def open_index(settings: Settings, dim: int, *, versions: bool = False) -> MemoryIndex:
    """The index backend: a Qdrant server when ENGRAM_QDRANT_URL is set, else a Qdrant Edge shard in the data dir.

    ``versions`` opens the index of earlier versions: the collection ``<name>-versions`` or the shard
    ``index-versions``. An Edge shard that cannot be loaded is moved aside and a new one created: the indexer
    rebuilds it from the log.
    """
    suffix = VERSIONS_SUFFIX if versions else ""
    if settings.qdrant_url:
        from engram.index.qdrant_server import QdrantServerIndex

        return QdrantServerIndex.from_url(
            settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            collection=settings.qdrant_collection + suffix,
            dim=dim,
        )
    path = settings.home / f"index{suffix}"
    space = disk_space(path, index_reserve_bytes(settings))
    if not space.ok:
        raise DiskFull(
            f"only {space.free_bytes // MIB} MiB free in {path}; the search index needs at least "
            f"{space.reserve_bytes // MIB} MiB to start (ENGRAM_DISK_RESERVE_MB)."
        )
    try:
        return EdgeIndex(path, dim=dim, vectors=settings.index_vectors, process=settings.index_process)
    except IndexDamaged as e:
        log.warning("%s: moving it aside and rebuilding it from the log", e)
        move_aside(path)
        return EdgeIndex(path, dim=dim, vectors=settings.index_vectors, process=settings.index_process)


def pipeline_config(settings: Settings) -> PipelineConfig:
    return PipelineConfig(
        fusion=settings.fusion,
        rrf_k=settings.rrf_k,
        weights={DENSE: settings.weight_dense, SPARSE: settings.weight_bm25, QUESTIONS: settings.weight_questions},
        rerank_top_n=settings.rerank_top_n,
        rerank_by_default=settings.rerank,
        min_relevance=settings.min_relevance,
        subject_depth=latest.DEPTH if settings.subject_first else 0,
        superseded_match=settings.superseded_match,
    )


def open_reranker(settings: Settings) -> Reranker | None:
    """The installed cross-encoder, or None (search works without one; /readyz and explain say rerank is off)."""
    reranker = load_reranker(settings.model_cache_dir, settings=RerankSettings(model_dir=named_reranker(settings)))
    if reranker is None:
        log.info("rerank is off: no reranker installed (engram models pull <hub-id>)")
    else:
        log.info("rerank is on: %s (default for searches: %s)", reranker.model_id, "on" if settings.rerank else "off")
    return reranker


def named_reranker(settings: Settings) -> Path | None:
    """The reranker ENGRAM_RERANK_MODEL names (pulled once when it is one of the list), or None: the active one."""
    if not settings.rerank_model:
        return None
    return classifier_dir(settings.rerank_model, RERANKER, settings.model_cache_dir,
                          hub=Hub(settings.hf_endpoint, settings.hf_token))  # fmt: skip


async def build_service(settings: Settings, resources: Resources) -> SearchService:
    # The query cache belongs to the data dir, not the (possibly shared) model cache.
    embedder = CachedEmbedder(await resources.embedder(), settings.home / "cache" / "query-embeddings.sqlite")
    index = await asyncio.to_thread(open_index, settings, embedder.dim)
    versions = await asyncio.to_thread(lambda: open_index(settings, embedder.dim, versions=True))
    local = not settings.qdrant_url
    event_log = await resources.log()
    indexer = Indexer(
        event_log,
        index,
        versions=versions,
        health=resources.health,
        disk=IndexSpace(settings.home / "index", index_reserve_bytes(settings)) if local else None,
        verify=local,  # a Qdrant server collection may be shared by several search replicas
    )
    reranker = await asyncio.to_thread(open_reranker, settings)
    access = AccessRecorder(event_log, interval=settings.access_flush_seconds)
    reader = MemoryReader(
        index,
        indexer,
        embedder,
        resources.sparse,
        read_wait=settings.read_wait_seconds,
        config=pipeline_config(settings),
        reranker=reranker,
        versions=versions,
        access=access,
    )
    return SearchService(index, versions, indexer, reader, embedder, access)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)
