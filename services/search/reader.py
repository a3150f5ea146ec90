"""Every read: hybrid search (dense + BM25, fused by RRF), get, list recent, stats."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field

from engram.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import InvalidArgument, NotFound
from engram.ids import is_uuid
from engram.index import DENSE, SPARSE, MemoryIndex, SearchRequest
from engram.model import Caller, Memory, SearchFilter
from engram.services.search.fusion import DEFAULT_RRF_K, rrf
from engram.services.search.indexer import Indexer

MAX_QUERY_CHARS = 4000
DEFAULT_CANDIDATES = 50  # per source, before fusion
DEFAULT_LIST_LIMIT = 20
QUERY_CACHE_SIZE = 1024


@dataclass(slots=True)
class Hit:
    memory: Memory
    score: float
    explain: dict[str, tuple[int, float]] = field(default_factory=dict)  # stage -> (rank, score)


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    applied_seq: int
    reranked: bool = False
    rerank_note: str = "rerank is off: no reranker model installed"


class MemoryReader:
    def __init__(
        self,
        index: MemoryIndex,
        indexer: Indexer,
        embedder: Embedder,
        sparse: Bm25Encoder,
        *,
        read_wait: float,
        rrf_k: float = DEFAULT_RRF_K,
        candidates: int = DEFAULT_CANDIDATES,
    ) -> None:
        self._index = index
        self._indexer = indexer
        self._embedder = embedder
        self._sparse = sparse
        self._read_wait = read_wait
        self._rrf_k = rrf_k
        self._candidates = candidates
        self._embed_query = functools.lru_cache(maxsize=QUERY_CACHE_SIZE)(self._embed_one)

    @property
    def applied_seq(self) -> int:
        return self._indexer.applied_seq

    @property
    def embedding_model(self) -> str:
        return self._embedder.model_id

    async def search(
        self, caller: Caller, query: str, *, limit: int, flt: SearchFilter, min_seq: int = 0, explain: bool = False
    ) -> SearchResult:
        query = query.strip()
        if not query:
            raise InvalidArgument("query", "is required. To browse without a query, use list_memories.")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidArgument("query", f"is longer than {MAX_QUERY_CHARS} characters; shorten it.")
        limit = _limit(limit, DEFAULT_SEARCH_LIMIT)
        await self._indexer.wait_for(min_seq, timeout=self._read_wait)
        dense = await asyncio.to_thread(self._embed_query, query)
        request = SearchRequest(
            namespace=caller.namespace,
            filter=flt,
            limit=max(self._candidates, limit),
            dense=list(dense),
            sparse=self._sparse.query(query),
        )
        lists = await asyncio.to_thread(self._index.search, request)
        payloads = {s.id: s.payload for ranked in lists.values() for s in ranked}
        fused = rrf({name: [(s.id, s.score) for s in ranked] for name, ranked in lists.items()}, k=self._rrf_k)
        hits = []
        for rank, item in enumerate(fused[:limit], start=1):
            stages: dict[str, tuple[int, float]] = {}
            if explain:
                for source in (DENSE, SPARSE):
                    stages[source] = (item.ranks.get(source, 0), item.scores.get(source, 0.0))
                stages["fused"] = (rank, item.score)
            hits.append(Hit(Memory.from_dict(payloads[item.id]), item.score, stages))
        return SearchResult(hits, self._indexer.applied_seq)

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> Memory:
        memory_id = memory_id.strip().lower()
        if not is_uuid(memory_id):
            raise InvalidArgument("id", f"'{memory_id[:40]}' is not a memory id (a UUID as returned by save_memory).")
        await self._indexer.wait_for(min_seq, timeout=self._read_wait)
        found = await asyncio.to_thread(self._index.retrieve, caller.namespace, [memory_id])
        if not found:
            raise NotFound(memory_id)  # also for other namespaces' ids: never confirm they exist
        return Memory.from_dict(found[0])

    async def list_recent(
        self, caller: Caller, *, limit: int, flt: SearchFilter, page_token: str = "", min_seq: int = 0
    ) -> tuple[list[Memory], str]:
        limit = _limit(limit, DEFAULT_LIST_LIMIT)
        before = _page(page_token)
        await self._indexer.wait_for(min_seq, timeout=self._read_wait)
        payloads = await asyncio.to_thread(self._index.recent, caller.namespace, flt, limit, before)
        memories = [Memory.from_dict(p) for p in payloads]
        next_token = ""
        if len(payloads) == limit:
            next_token = repr(payloads[-1].get("_created_ts", 0.0))
        return memories, next_token

    async def count(self, caller: Caller) -> int:
        return await asyncio.to_thread(self._index.count, caller.namespace, None)

    def _embed_one(self, text: str) -> tuple[float, ...]:
        return tuple(float(x) for x in self._embedder.embed([text])[0])


def _limit(limit: int, default: int) -> int:
    if limit == 0:
        return default
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidArgument("limit", f"must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}.")
    return limit


def _page(token: str) -> float | None:
    if not token:
        return None
    try:
        return float(token)
    except ValueError as e:
        raise InvalidArgument("page_token", "is not a token returned by list_memories; omit it to start over.") from e
