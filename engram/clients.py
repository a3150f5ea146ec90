"""One gRPC client per service, shared by every caller (the gateway, consolidation, tools): they speak the domain
model, return the result types of engram.results and raise the same EngramError classes the services raised."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc

from engram import errors, wire
from engram.model import Caller, Memory, MemoryInput, SearchFilter
from engram.results import Hit, ImportItem, ImportSummary, Page, SaveResult, SearchResult
from engram.rpc import channel, error_from_rpc
from engram.scrub import Redaction
from engram.v1 import ingest_pb2, ingest_pb2_grpc, readiness_pb2, readiness_pb2_grpc, search_pb2, search_pb2_grpc

DEFAULT_RPC_TIMEOUT = 30.0
IMPORT_TIMEOUT = 3600.0  # one import stream may carry many thousands of memories
READINESS_TIMEOUT = 2.0


class _Client:
    """A channel (owned, or shared with another client of the same process) and error translation."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float) -> None:
        self._owned = isinstance(target, str)
        self.channel: grpc.aio.Channel = channel(target) if isinstance(target, str) else target
        self._timeout = timeout

    async def _call(self, method: Any, request: Any, **options: Any) -> Any:
        try:
            return await method(request, timeout=options.pop("timeout", self._timeout), **options)
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e) from e

    async def readiness(self) -> readiness_pb2.GetReadinessResponse:
        """What the process behind this channel says about its services (engram.v1.Readiness)."""
        stub = readiness_pb2_grpc.ReadinessStub(self.channel)
        return await self._call(stub.GetReadiness, readiness_pb2.GetReadinessRequest(), timeout=READINESS_TIMEOUT)

    async def close(self) -> None:
        if self._owned:
            await self.channel.close()


def _redactions(messages: Any) -> tuple[Redaction, ...]:
    return tuple(Redaction(r.kind, r.count) for r in messages)


class IngestClient(_Client):
    """The ingest service: every write."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        super().__init__(target, timeout=timeout)
        self._stub = ingest_pb2_grpc.IngestStub(self.channel)

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveResult:
        request = ingest_pb2.SaveMemoryRequest(caller=wire.caller_to_proto(caller), memory=wire.input_to_proto(draft))
        response = await self._call(self._stub.SaveMemory, request)
        return SaveResult(wire.memory_from_proto(response.memory), response.seq, _redactions(response.redactions))

    async def import_memories(self, caller: Caller, items: AsyncIterator[ImportItem]) -> ImportSummary:
        """Streams items to ImportMemories (client streaming); one summary for the whole stream."""
        context = wire.caller_to_proto(caller)

        async def requests() -> AsyncIterator[ingest_pb2.ImportMemoriesRequest]:
            async for item in items:
                yield ingest_pb2.ImportMemoriesRequest(
                    caller=context, memory=wire.input_to_proto(item.draft), line=item.line, source_id=item.source_id
                )

        response = await self._call(self._stub.ImportMemories, requests(), timeout=IMPORT_TIMEOUT)
        stopped = None
        if response.stopped:
            stopped = errors.RemoteError(response.stopped_code or "internal", response.stopped)
        return ImportSummary(
            imported=[(i.line, i.id, i.seq) for i in response.items if not i.already_present],
            present=[(i.line, i.id, i.seq) for i in response.items if i.already_present],
            rejected=[(r.line, r.reason) for r in response.rejected],
            redactions=list(_redactions(response.redactions)),
            last_line=response.last_line,
            last_seq=response.last_seq,
            stopped=stopped,
        )

    async def enrich(self, caller: Caller, memory_id: str, questions: list[str], *, model: str) -> int:
        """Adds reverse-HyDE questions to a memory; returns the log sequence of the write."""
        request = ingest_pb2.EnrichMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, questions=questions, model=model
        )
        # wait_for_ready: in the embedded node a worker may start just before the gRPC server does.
        response = await self._call(self._stub.EnrichMemory, request, wait_for_ready=True)
        return int(response.seq)


@dataclass(frozen=True, slots=True)
class IndexStats:
    memories: int
    applied_seq: int
    log_last_seq: int
    embedding_model: str
    reranker_model: str


class SearchClient(_Client):
    """The search service: every read."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        super().__init__(target, timeout=timeout)
        self._stub = search_pb2_grpc.SearchStub(self.channel)

    async def search(
        self,
        caller: Caller,
        query: str,
        *,
        limit: int,
        flt: SearchFilter,
        min_seq: int = 0,
        explain: bool = False,
        rerank: bool | None = None,
        sources: list[str] | None = None,
    ) -> SearchResult:
        mode = (
            search_pb2.RERANK_MODE_UNSPECIFIED
            if rerank is None
            else (search_pb2.RERANK_MODE_ON if rerank else search_pb2.RERANK_MODE_OFF)
        )
        request = search_pb2.SearchMemoriesRequest(
            caller=wire.caller_to_proto(caller), query=query, limit=limit, filter=wire.filter_to_proto(flt),
            min_seq=min_seq, explain=explain, rerank=mode, sources=sources or [],
        )  # fmt: skip
        response = await self._call(self._stub.SearchMemories, request)
        hits = [
            Hit(wire.memory_from_proto(h.memory), h.score, {s.stage: (s.rank, s.score) for s in h.explain})
            for h in response.hits
        ]
        return SearchResult(hits, response.applied_seq, response.reranked, response.rerank_note)

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> Memory:
        request = search_pb2.GetMemoryRequest(caller=wire.caller_to_proto(caller), id=memory_id, min_seq=min_seq)
        response = await self._call(self._stub.GetMemory, request)
        return wire.memory_from_proto(response.memory)

    async def list(
        self, caller: Caller, *, limit: int, flt: SearchFilter, page_token: str = "", min_seq: int = 0
    ) -> Page:
        request = search_pb2.ListMemoriesRequest(
            caller=wire.caller_to_proto(caller), limit=limit, filter=wire.filter_to_proto(flt),
            page_token=page_token, min_seq=min_seq,
        )  # fmt: skip
        response = await self._call(self._stub.ListMemories, request)
        return Page([wire.memory_from_proto(m) for m in response.memories], response.next_page_token)

    async def stats(self, caller: Caller | None = None) -> IndexStats:
        request = search_pb2.GetStatsRequest(caller=wire.caller_to_proto(caller) if caller else None)
        response = await self._call(self._stub.GetStats, request)
        return IndexStats(
            memories=response.memories,
            applied_seq=response.applied_seq,
            log_last_seq=response.log_last_seq,
            embedding_model=response.embedding_model,
            reranker_model=response.reranker_model,
        )
