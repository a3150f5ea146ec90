"""The gateway's view of the services: async gRPC clients that speak the domain model and kernel errors."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from engram import errors
from engram.grpc import wire
from engram.grpc.clients import (
    DEFAULT_RPC_TIMEOUT,
    READINESS_TIMEOUT,
    ConsolidationClient,
    IngestClient,
    SearchClient,
    SyncClient,
)
from engram.grpc.local import LocalSearch, Searcher
from engram.model import Caller, ListQuery, MemoryInput, SearchQuery
from engram.results import (
    DeleteResult,
    Job,
    Page,
    SaveResult,
    SearchResult,
)
from engram.scrub import Redaction
from engram.v1 import readiness_pb2


@dataclass(frozen=True, slots=True)
class ProblemReport:
    condition: str
    detail: str
    since: float | None = None
    degraded: bool = False  # stops nothing: the node serves, and says what an operator should look at


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
        return bool(self.services) and all(self.services.values()) and not any(not p.degraded for p in self.problems)

    @property
    def degraded(self) -> bool:
        """Ready, with problems that stop nothing (e.g. log entries the index set aside)."""
        return self.ready and bool(self.problems)


class Backend:
    """The services behind the gateway: the kernel's ingest and search clients (one channel when one process
    hosts both, as in the embedded node), which the operations call (``ingest``, ``search_client``), plus the
    readiness of every process behind them. Its own methods are those that add something: a search in process, a
    listing's query, the consolidation service when there is one, the reranker's model."""

    def __init__(
        self,
        *,
        ingest_addr: str,
        search_addr: str,
        consolidation_addr: str | None = None,
        sync_addr: str | None = None,
        timeout: float = DEFAULT_RPC_TIMEOUT,
        searcher: Searcher | None = None,
    ) -> None:
        """``searcher``: the search service of this process (the embedded node), asked for searches directly."""
        self.ingest = IngestClient(ingest_addr, timeout=timeout)
        shared = search_addr == ingest_addr
        self.search_client = SearchClient(self.ingest.channel if shared else search_addr, timeout=timeout)
        self._searcher: Searcher = LocalSearch(searcher) if searcher is not None else self.search_client
        self._shared = shared
        self.known_rerank_model: str | None = None  # rerank_model's last answer (None: it never answered)
        self.consolidation: ConsolidationClient | None = None  # None: no consolidation service configured
        if consolidation_addr:
            target = self.ingest.channel if consolidation_addr == ingest_addr else consolidation_addr
            self.consolidation = ConsolidationClient(target, timeout=timeout)
        self.sync: SyncClient | None = None  # None: no sync service configured (devices are told so)
        if sync_addr:
            self.sync = SyncClient(self.ingest.channel if sync_addr == ingest_addr else sync_addr, timeout=timeout)

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveResult:
        return await self.ingest.save(caller, draft)

    async def update(
        self, caller: Caller, memory_id: str, draft: MemoryInput, fields: list[str], *, expected_version: int = 0
    ) -> SaveResult:
        return await self.ingest.update(caller, memory_id, draft, fields, expected_version=expected_version)

    async def delete(
        self, caller: Caller, memory_id: str, *, expected_version: int = 0, purge: bool = False
    ) -> DeleteResult:
        return await self.ingest.delete(caller, memory_id, expected_version=expected_version, purge=purge)

    async def search(self, caller: Caller, query: SearchQuery | str, /, **options: Any) -> SearchResult:
        """A search: ``query`` whole, or its text with the other fields of SearchQuery as ``options``; asked of the
        search service in this process when there is one (``searcher``), else over gRPC."""
        if isinstance(query, str):
            query = SearchQuery(query, **options)
        return await self._searcher.search(caller, query)

    async def run_job(self, caller: Caller, kind: str, options: dict[str, str]) -> Job:
        """Runs a consolidation job; Unavailable when this gateway was started without the consolidation service."""
        if self.consolidation is None:
            raise errors.Unavailable(
                "This gateway has no consolidation service, which writes team summaries: start it with "
                "ENGRAM_CONSOLIDATION_ADDR (--consolidation-addr) set to the service's address."
            )
        return await self.consolidation.run_job(caller, kind, options)

    async def list(self, caller: Caller, query: ListQuery | None = None, /, **options: Any) -> Page:
        return await self.search_client.list(caller, query or ListQuery(**options))

    async def rerank_model(self) -> str:
        """The search service's reranker model id, or "" when rerank is off."""
        model = (await self.search_client.stats()).reranker_model
        self.known_rerank_model = model
        return model

    async def readiness(self, *, timeout: float = READINESS_TIMEOUT) -> Readiness:
        """Every service of every process behind this gateway, with the reasons any of them is not ready. The
        processes are asked at once, each for at most ``timeout`` seconds: one that takes longer is not ready."""
        services: dict[str, bool] = {}
        problems: list[ProblemReport] = []
        first: readiness_pb2.GetReadinessResponse | None = None
        clients: dict[str, IngestClient | SearchClient] = {"ingest": self.ingest}
        if not self._shared:  # one process hosts both (the embedded node): asked once
            clients["search"] = self.search_client
        replies = await asyncio.gather(*(_readiness_of(client, timeout) for client in clients.values()))
        for name, reply in zip(clients, replies, strict=True):
            if isinstance(reply, str):
                services[name] = False
                problems.append(ProblemReport(name, f"the {name} service does not answer ({reply})."))
                continue
            first = first or reply
            for state in reply.services:
                short = state.service.removeprefix("engram.v1.").lower()
                if short != "node":
                    services[short] = state.serving
            problems.extend(
                ProblemReport(p.condition, p.detail, wire.ts_to_epoch(p, "since"), p.degraded) for p in reply.problems
            )
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

    async def close(self) -> None:
        if self.consolidation is not None:
            await self.consolidation.close()  # does not close a shared channel
        if self.sync is not None:
            await self.sync.close()
        await self.search_client.close()  # does not close a shared channel
        await self.ingest.close()


async def _readiness_of(
    client: IngestClient | SearchClient, timeout: float
) -> readiness_pb2.GetReadinessResponse | str:
    """The process's readiness reply, or why there is none (an error code, or how long it was waited for)."""
    try:
        return await asyncio.wait_for(client.readiness(), timeout)
    except TimeoutError:
        return f"no reply within {timeout:g} s"
    except errors.EngramError as e:
        return e.code


def redactions_json(redactions: list[Redaction]) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "count": r.count} for r in redactions]


def metadata_json(metadata: dict[str, Any] | None) -> str:
    """Metadata travels as JSON text so it comes back exactly as given (numbers stay integers)."""
    return json.dumps(metadata, ensure_ascii=False) if metadata else ""


__all__ = ["Backend", "ProblemReport", "Readiness"]
