"""The gateway's view of the services: async gRPC clients that speak the domain model and kernel errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engram import errors, wire
from engram.model import Caller, Memory, MemoryInput, SearchFilter
from engram.rpc import channel, error_from_rpc
from engram.scrub import Redaction
from engram.v1 import ingest_pb2, ingest_pb2_grpc, readiness_pb2, readiness_pb2_grpc, search_pb2, search_pb2_grpc

DEFAULT_RPC_TIMEOUT = 30.0
IMPORT_TIMEOUT = 3600.0  # one import stream may carry many thousands of memories


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    memory: Memory
    seq: int
    redactions: list[Redaction]


@dataclass(frozen=True, slots=True)
class Hit:
    memory: Memory
    score: float
    explain: dict[str, dict[str, float]] = field(default_factory=dict)  # stage -> {"rank", "score"}


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    applied_seq: int
    reranked: bool
    rerank_note: str


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    imported: int  # newly stored
    rejected: list[tuple[int, str]]  # (line, reason)
    last_line: int
    last_seq: int
    items: list[tuple[int, str, bool]]  # (line, memory id, already present)
    redactions: list[Redaction]
    already_present: int = 0  # stored by an earlier import (same source_id)
    stopped: errors.EngramError | None = None  # why ingest stopped before the end of the stream, if it did


@dataclass(frozen=True, slots=True)
class ImportLine:
    """One item of a bulk import: its line number, the memory, and an optional idempotency key."""

    line: int
    draft: MemoryInput
    source_id: str = ""


@dataclass(frozen=True, slots=True)
class ListOutcome:
    memories: list[Memory]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class ProblemReport:
    condition: str
    detail: str
    since: float | None = None


@dataclass(frozen=True, slots=True)
class Readiness:
    """What the services behind the gateway say about their readiness, and why they are not ready."""

    services: dict[str, bool]  # short name (ingest, search, ...) -> serving
    problems: list[ProblemReport]
    version: str = ""
    pid: int = 0
    started_at: float | None = None
    disk: dict[str, Any] | None = None

    @property
    def ready(self) -> bool:
        return bool(self.services) and all(self.services.values()) and not self.problems


@dataclass(frozen=True, slots=True)
class IndexStats:
    memories: int
    applied_seq: int
    log_last_seq: int
    embedding_model: str
    reranker_model: str


class Backend:
    """Calls ingest and search over gRPC; raises EngramError subclasses with the services' messages."""

    def __init__(self, *, ingest_addr: str, search_addr: str, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        self._ingest_channel = channel(ingest_addr)
        self._search_channel = channel(search_addr) if search_addr != ingest_addr else self._ingest_channel
        self._ingest = ingest_pb2_grpc.IngestStub(self._ingest_channel)
        self._search = search_pb2_grpc.SearchStub(self._search_channel)
        self._timeout = timeout

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveOutcome:
        request = ingest_pb2.SaveMemoryRequest(caller=wire.caller_to_proto(caller), memory=wire.input_to_proto(draft))
        response = await self._call(self._ingest.SaveMemory, request)
        return SaveOutcome(
            memory=wire.memory_from_proto(response.memory),
            seq=response.seq,
            redactions=[Redaction(r.kind, r.count) for r in response.redactions],
        )

    async def import_memories(self, caller: Caller, lines: AsyncIterator[ImportLine]) -> ImportOutcome:
        """Streams items to ingest's client-streaming ImportMemories; one answer for the whole stream."""
        context = wire.caller_to_proto(caller)

        async def requests() -> AsyncIterator[ingest_pb2.ImportMemoriesRequest]:
            async for item in lines:
                yield ingest_pb2.ImportMemoriesRequest(
                    caller=context, memory=wire.input_to_proto(item.draft), line=item.line, source_id=item.source_id
                )

        try:
            response = await self._ingest.ImportMemories(requests(), timeout=IMPORT_TIMEOUT)
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e) from e
        stopped = None
        if response.stopped:
            stopped = errors.RemoteError(response.stopped_code or "internal", response.stopped)
        return ImportOutcome(
            imported=response.imported,
            rejected=[(r.line, r.reason) for r in response.rejected],
            last_line=response.last_line,
            last_seq=response.last_seq,
            items=[(i.line, i.id, i.already_present) for i in response.items],
            redactions=[Redaction(r.kind, r.count) for r in response.redactions],
            already_present=response.already_present,
            stopped=stopped,
        )

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
    ) -> SearchOutcome:
        mode = (
            search_pb2.RERANK_MODE_UNSPECIFIED
            if rerank is None
            else (search_pb2.RERANK_MODE_ON if rerank else search_pb2.RERANK_MODE_OFF)
        )
        request = search_pb2.SearchMemoriesRequest(
            caller=wire.caller_to_proto(caller), query=query, limit=limit, filter=wire.filter_to_proto(flt),
            min_seq=min_seq, explain=explain, rerank=mode, sources=sources or [],
        )  # fmt: skip
        response = await self._call(self._search.SearchMemories, request)
        hits = [
            Hit(
                memory=wire.memory_from_proto(h.memory),
                score=h.score,
                explain={s.stage: {"rank": s.rank, "score": s.score} for s in h.explain},
            )
            for h in response.hits
        ]
        return SearchOutcome(hits, response.applied_seq, response.reranked, response.rerank_note)

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> Memory:
        request = search_pb2.GetMemoryRequest(caller=wire.caller_to_proto(caller), id=memory_id, min_seq=min_seq)
        response = await self._call(self._search.GetMemory, request)
        return wire.memory_from_proto(response.memory)

    async def list(
        self, caller: Caller, *, limit: int, flt: SearchFilter, page_token: str = "", min_seq: int = 0
    ) -> ListOutcome:
        request = search_pb2.ListMemoriesRequest(
            caller=wire.caller_to_proto(caller), limit=limit, filter=wire.filter_to_proto(flt),
            page_token=page_token, min_seq=min_seq,
        )  # fmt: skip
        response = await self._call(self._search.ListMemories, request)
        return ListOutcome([wire.memory_from_proto(m) for m in response.memories], response.next_page_token)

    async def rerank_model(self) -> str:
        """The search service's reranker model id, or "" when rerank is off."""
        response = await self._call(self._search.GetStats, search_pb2.GetStatsRequest())
        return str(response.reranker_model)

    async def ready(self) -> dict[str, bool]:
        """Health of each service, by the standard gRPC health check."""
        result = {}
        for name, chan in (("ingest", self._ingest_channel), ("search", self._search_channel)):
            service = f"engram.v1.{name.capitalize()}"
            try:
                reply = await health_pb2_grpc.HealthStub(chan).Check(
                    health_pb2.HealthCheckRequest(service=service), timeout=2.0
                )
                result[name] = reply.status == health_pb2.HealthCheckResponse.SERVING
            except grpc.aio.AioRpcError:
                result[name] = False
        return result

    async def readiness(self) -> Readiness:
        """Every service of every process behind this gateway, with the reasons any of them is not ready."""
        services: dict[str, bool] = {}
        problems: list[ProblemReport] = []
        first: readiness_pb2.GetReadinessResponse | None = None
        channels = {"ingest": self._ingest_channel, "search": self._search_channel}
        for name, chan in channels.items():
            if name == "search" and chan is self._ingest_channel and services:
                continue  # one process hosts both (the embedded node): asked once
            try:
                reply = await readiness_pb2_grpc.ReadinessStub(chan).GetReadiness(
                    readiness_pb2.GetReadinessRequest(), timeout=2.0
                )
            except grpc.aio.AioRpcError as e:
                services[name] = False
                problems.append(ProblemReport(name, f"the {name} service does not answer ({e.code().name})."))
                continue
            first = first or reply
            for state in reply.services:
                short = state.service.removeprefix("engram.v1.").lower()
                if short != "node":
                    services[short] = state.serving
            problems.extend(ProblemReport(p.condition, p.detail, wire.ts_to_epoch(p, "since")) for p in reply.problems)
        disk = None
        if first is not None and first.HasField("disk"):
            disk = {"path": first.disk.path, "free_bytes": first.disk.free_bytes,
                    "reserve_bytes": first.disk.reserve_bytes}  # fmt: skip
        return Readiness(
            services=services,
            problems=problems,
            version=first.version if first else "",
            pid=first.pid if first else 0,
            started_at=wire.ts_to_epoch(first, "started_at") if first else None,
            disk=disk,
        )

    async def index_stats(self, caller: Caller | None = None) -> IndexStats:
        request = search_pb2.GetStatsRequest(caller=wire.caller_to_proto(caller) if caller else None)
        response = await self._call(self._search.GetStats, request)
        return IndexStats(
            memories=response.memories,
            applied_seq=response.applied_seq,
            log_last_seq=response.log_last_seq,
            embedding_model=response.embedding_model,
            reranker_model=response.reranker_model,
        )

    async def close(self) -> None:
        await self._ingest_channel.close()
        if self._search_channel is not self._ingest_channel:
            await self._search_channel.close()

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e) from e


def redactions_json(redactions: list[Redaction]) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "count": r.count} for r in redactions]


def metadata_json(metadata: dict[str, Any] | None) -> str:
    """Metadata travels as JSON text so it comes back exactly as given (numbers stay integers)."""
    return json.dumps(metadata, ensure_ascii=False) if metadata else ""


__all__ = ["Backend", "Hit", "ImportLine", "ImportOutcome", "ListOutcome", "SaveOutcome", "SearchOutcome", "errors"]
