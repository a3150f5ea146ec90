"""One gRPC client per service, shared by every caller (the gateway, consolidation, tools): they speak the domain
model, return the result types of engram.results and raise the same EngramError classes the services raised."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from engram import errors
from engram.grpc import wire
from engram.grpc.rpc import channel, error_from_rpc
from engram.model import Caller, ListQuery, Memory, MemoryInput, MemoryVersion, SearchFilter, SearchQuery
from engram.results import (
    AgentInfo,
    Changed,
    Contradiction,
    DeleteResult,
    ExpireResult,
    Expiring,
    History,
    Hit,
    ImportItem,
    ImportSummary,
    Job,
    MemoryStats,
    MergeResult,
    Page,
    Pushed,
    Quarantined,
    SaveResult,
    SearchResult,
    SupersedeResult,
    SyncChange,
    SyncPage,
    TeamInfo,
    UnsupersedeResult,
)
from engram.scrub import Redaction
from engram.v1 import (
    common_pb2,
    consolidation_pb2,
    consolidation_pb2_grpc,
    ingest_pb2,
    ingest_pb2_grpc,
    readiness_pb2,
    readiness_pb2_grpc,
    search_pb2,
    search_pb2_grpc,
    sync_pb2,
    sync_pb2_grpc,
)

DEFAULT_RPC_TIMEOUT = 30.0
IMPORT_TIMEOUT = 3600.0  # one import stream may carry many thousands of memories
SCAN_TIMEOUT = 600.0  # one scan of a namespace's memories (consolidation reads 50k in seconds)
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
        return SaveResult(
            wire.memory_from_proto(response.memory), response.seq, _redactions(response.redactions),
            duplicate_of=response.duplicate_of,
        )  # fmt: skip

    async def update(
        self, caller: Caller, memory_id: str, draft: MemoryInput, fields: list[str], *, expected_version: int = 0
    ) -> SaveResult:
        """Writes a new version that changes ``fields`` (names of MemoryInput) to their values in ``draft``."""
        request = ingest_pb2.UpdateMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, memory=wire.input_to_proto(draft),
            update_mask=fields, expected_version=expected_version,
        )  # fmt: skip
        response = await self._call(self._stub.UpdateMemory, request)
        return SaveResult(wire.memory_from_proto(response.memory), response.seq, _redactions(response.redactions))

    async def delete(
        self, caller: Caller, memory_id: str, *, expected_version: int = 0, purge: bool = False
    ) -> DeleteResult:
        """Archives a memory (a new version), or with ``purge`` (admin) removes it from the index and the log."""
        request = ingest_pb2.DeleteMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, expected_version=expected_version, purge=purge
        )
        response = await self._call(self._stub.DeleteMemory, request)
        memory = wire.memory_from_proto(response.memory) if response.HasField("memory") else None
        return DeleteResult(response.id, response.seq, memory, response.erased)

    async def supersede(
        self,
        caller: Caller,
        memory_id: str,
        *,
        replacement: MemoryInput | None = None,
        new_id: str = "",
        expected_version: int = 0,
    ) -> SupersedeResult:
        """Replaces a memory (the head of its chain) with a new one, or with the existing memory ``new_id``."""
        request = ingest_pb2.SupersedeMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, new_id=new_id, expected_version=expected_version,
            replacement=wire.input_to_proto(replacement) if replacement is not None else None,
        )  # fmt: skip
        response = await self._call(self._stub.SupersedeMemory, request)
        return SupersedeResult(
            wire.memory_from_proto(response.old_memory),
            wire.memory_from_proto(response.new_memory),
            response.seq,
            _redactions(response.redactions),
        )

    async def unsupersede(self, caller: Caller, memory_id: str, *, expected_version: int = 0) -> UnsupersedeResult:
        """Undoes a supersession: the memory is active again, its replacement no longer supersedes it."""
        request = ingest_pb2.UnsupersedeMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, expected_version=expected_version
        )
        response = await self._call(self._stub.UnsupersedeMemory, request)
        replacement = wire.memory_from_proto(response.replacement) if response.HasField("replacement") else None
        return UnsupersedeResult(wire.memory_from_proto(response.memory), replacement, response.seq)

    async def expire(self, caller: Caller, memory_id: str, *, expected_version: int, at: float) -> ExpireResult:
        """Marks a due memory expired (consolidation's expiry job)."""
        request = ingest_pb2.ExpireMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, expected_version=expected_version
        )
        wire.set_ts(request, "at", at)
        response = await self._call(self._stub.ExpireMemory, request, wait_for_ready=True)
        return ExpireResult(wire.memory_from_proto(response.memory), response.seq, response.expired)

    async def merge(
        self,
        caller: Caller,
        ids: list[str],
        *,
        into_id: str = "",
        replacement: MemoryInput | None = None,
        force: bool = False,
        note: str = "",
    ) -> MergeResult:
        """Merges ``ids`` into the memory ``into_id`` or into a new one (``replacement``): they are archived with a
        merged-into relation, and the survivor's new version records them."""
        request = ingest_pb2.MergeMemoriesRequest(
            caller=wire.caller_to_proto(caller), ids=ids, into_id=into_id, force=force, note=note,
            replacement=wire.input_to_proto(replacement) if replacement is not None else None,
        )  # fmt: skip
        response = await self._call(self._stub.MergeMemories, request)
        return MergeResult(
            wire.memory_from_proto(response.survivor),
            [wire.memory_from_proto(m) for m in response.merged],
            response.seq,
            _redactions(response.redactions),
        )

    async def relate(
        self, caller: Caller, memory_id: str, other_id: str, kind: str, *, note: str = "",
        replace_kinds: tuple[str, ...] = (),
    ) -> Changed:  # fmt: skip
        """Adds a relation ``kind`` from ``memory_id`` to ``other_id`` (replacing its relations to it of
        ``replace_kinds``)."""
        request = ingest_pb2.RelateMemoriesRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, other_id=other_id, kind=kind, note=note,
            replace_kinds=list(replace_kinds),
        )  # fmt: skip
        response = await self._call(self._stub.RelateMemories, request)
        return Changed(wire.memory_from_proto(response.memory), response.seq, response.changed)

    async def decay(
        self, caller: Caller, memory_id: str, *, expected_version: int, idle_since: float, archive: bool
    ) -> Changed:
        """Moves an idle memory to the cold tier, or archives it (consolidation's decay job)."""
        request = ingest_pb2.DecayMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, expected_version=expected_version, archive=archive
        )
        wire.set_ts(request, "idle_since", idle_since)
        response = await self._call(self._stub.DecayMemory, request, wait_for_ready=True)
        return Changed(wire.memory_from_proto(response.memory), response.seq, response.changed)

    async def update_handoff(
        self, caller: Caller, memory_id: str, status: str, *, expected_version: int = 0, note: str = ""
    ) -> SaveResult:
        """Moves a handoff to ``status`` (accepted, completed); only its target agent or an admin may."""
        request = ingest_pb2.UpdateHandoffRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, expected_version=expected_version, note=note,
            status=common_pb2.HandoffStatus.Value(f"HANDOFF_STATUS_{status.upper()}"),
        )  # fmt: skip
        response = await self._call(self._stub.UpdateHandoff, request)
        return SaveResult(wire.memory_from_proto(response.memory), response.seq, ())

    async def import_memories(self, caller: Caller, items: AsyncIterator[ImportItem]) -> ImportSummary:
        """Streams items to ImportMemories (client streaming); one summary for the whole stream."""
        context = wire.caller_to_proto(caller)

        async def requests() -> AsyncIterator[ingest_pb2.ImportMemoriesRequest]:
            async for item in items:
                yield ingest_pb2.ImportMemoriesRequest(
                    caller=context, memory=wire.input_to_proto(item.draft), line=item.line, source_id=item.source_id,
                    dense=item.dense, dense_model=item.dense_model,
                )  # fmt: skip

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
    quarantined: int = 0  # log entries the index set aside, over every namespace


def search_result(response: search_pb2.SearchMemoriesResponse) -> SearchResult:
    hits = [
        Hit(wire.memory_from_proto(h.memory), h.score, {s.stage: (s.rank, s.score) for s in h.explain})
        for h in response.hits
    ]
    return SearchResult(hits, response.applied_seq, response.reranked, response.rerank_note, response.explain_note)


class SearchClient(_Client):
    """The search service: every read."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        super().__init__(target, timeout=timeout)
        self._stub = search_pb2_grpc.SearchStub(self.channel)

    async def search(self, caller: Caller, query: SearchQuery | str, /, **options: Any) -> SearchResult:
        """A search: ``query`` whole, or its text with the other fields of SearchQuery as ``options``."""
        if isinstance(query, str):
            query = SearchQuery(query, **options)
        request = wire.request_to_proto(caller, query, search_pb2.SearchMemoriesRequest)
        return search_result(await self._call(self._stub.SearchMemories, request))

    async def get(
        self,
        caller: Caller,
        memory_id: str,
        *,
        min_seq: int = 0,
        with_history: bool = False,
        for_update: bool = False,
        for_create: bool = False,
        head: bool = False,
    ) -> Memory:
        request = search_pb2.GetMemoryRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, min_seq=min_seq, with_history=with_history,
            for_update=for_update, for_create=for_create, head=head,
        )  # fmt: skip
        response = await self._call(self._stub.GetMemory, request)
        return wire.memory_from_proto(response.memory)

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> History:
        request = search_pb2.GetHistoryRequest(caller=wire.caller_to_proto(caller), id=memory_id, min_seq=min_seq)
        response = await self._call(self._stub.GetHistory, request)
        versions = [wire.from_proto(v, MemoryVersion) for v in response.versions]
        return History(response.memory_id, versions, list(response.seqs))

    async def memory_at(self, caller: Caller, memory_id: str, at: float, *, min_seq: int = 0) -> Memory:
        request = search_pb2.GetMemoryAtRequest(caller=wire.caller_to_proto(caller), id=memory_id, min_seq=min_seq)
        wire.set_ts(request, "at", at)
        response = await self._call(self._stub.GetMemoryAt, request)
        return wire.memory_from_proto(response.memory)

    async def memory_stats(self, caller: Caller) -> MemoryStats:
        """Counts of the caller's namespace by agent, type, status and team."""
        request = search_pb2.GetStatsRequest(caller=wire.caller_to_proto(caller), breakdown=True)
        r = await self._call(self._stub.GetStats, request)

        def counts(items: Any) -> dict[str, int]:
            return {item.key: int(item.count) for item in items}

        return MemoryStats(
            memories=r.memories, total=r.total, by_agent=counts(r.by_agent), by_type=counts(r.by_type),
            by_status=counts(r.by_status), by_team=counts(r.by_team),
            applied_seq=r.applied_seq, log_last_seq=r.log_last_seq,
        )  # fmt: skip

    async def list_expiring(self, caller: Caller, *, at: float, limit: int) -> list[Expiring]:
        """Active memories due to expire by ``at``, across namespaces (for the expiry job)."""
        request = search_pb2.ListExpiringRequest(caller=wire.caller_to_proto(caller), limit=limit)
        wire.set_ts(request, "at", at)
        response = await self._call(self._stub.ListExpiring, request, wait_for_ready=True)
        return [Expiring(m.namespace, m.id, m.version, wire.ts_to_epoch(m, "expires_at")) for m in response.memories]

    async def namespaces(self, caller: Caller) -> dict[str, int]:
        """Every namespace with active memories and how many (admin)."""
        request = search_pb2.ListNamespacesRequest(caller=wire.caller_to_proto(caller))
        response = await self._call(self._stub.ListNamespaces, request, wait_for_ready=True)
        return {c.key: c.count for c in response.namespaces}

    async def scan(
        self, caller: Caller, flt: SearchFilter, *, with_vectors: bool = False, min_seq: int = 0
    ) -> AsyncIterator[tuple[list[Memory], list[bytes]]]:
        """Every memory of the caller's namespace that matches ``flt``, in batches, with each one's dense vector
        (little-endian float32 bytes) when asked."""
        request = search_pb2.ScanMemoriesRequest(
            caller=wire.caller_to_proto(caller), filter=wire.filter_to_proto(flt), with_vectors=with_vectors,
            min_seq=min_seq,
        )  # fmt: skip
        try:
            async for response in self._stub.ScanMemories(request, timeout=SCAN_TIMEOUT):
                yield [wire.memory_from_proto(m) for m in response.memories], list(response.vectors)
        except grpc.aio.AioRpcError as e:
            raise error_from_rpc(e) from e

    async def list_agents(self, caller: Caller, *, min_seq: int = 0) -> list[AgentInfo]:
        """The agent registry of the caller's namespace, derived from the log."""
        request = search_pb2.ListAgentsRequest(caller=wire.caller_to_proto(caller), min_seq=min_seq)
        response = await self._call(self._stub.ListAgents, request)
        return [_agent(a) for a in response.agents]

    async def list_teams(self, caller: Caller, *, min_seq: int = 0) -> list[TeamInfo]:
        """The teams of the caller's namespace with their memory counts and current summary."""
        request = search_pb2.ListTeamsRequest(caller=wire.caller_to_proto(caller), min_seq=min_seq)
        response = await self._call(self._stub.ListTeams, request)
        return [
            TeamInfo(t.team, t.memories, list(t.agents), t.summary_id, wire.ts_to_epoch(t, "last_activity"))
            for t in response.teams
        ]

    async def activity(
        self, caller: Caller, *, start: float, days: int, min_seq: int = 0
    ) -> list[tuple[float, dict[str, int]]]:
        """Memories created per day (24 hours from ``start``, ``days`` of them), by owning agent: (day start,
        counts) in order."""
        request = search_pb2.GetActivityRequest(caller=wire.caller_to_proto(caller), days=days, min_seq=min_seq)
        wire.set_ts(request, "start", start)
        response = await self._call(self._stub.GetActivity, request)
        return [(wire.ts_to_epoch(d, "start") or 0.0, {c.key: c.count for c in d.by_agent}) for d in response.days]

    async def list(self, caller: Caller, query: ListQuery | None = None, /, **options: Any) -> Page:
        """A page of memories, newest first by creation (``order="created"``) or by last change ("updated"):
        ``query`` whole, or the fields of ListQuery as ``options``."""
        query = query or ListQuery(**options)
        request = wire.request_to_proto(caller, query, search_pb2.ListMemoriesRequest)
        response = await self._call(self._stub.ListMemories, request)
        return Page(
            [wire.memory_from_proto(m) for m in response.memories], response.next_page_token, response.index_seq
        )

    async def stats(self, caller: Caller | None = None) -> IndexStats:
        request = search_pb2.GetStatsRequest(caller=wire.caller_to_proto(caller) if caller else None)
        response = await self._call(self._stub.GetStats, request)
        return IndexStats(
            memories=response.memories,
            applied_seq=response.applied_seq,
            log_last_seq=response.log_last_seq,
            embedding_model=response.embedding_model,
            reranker_model=response.reranker_model,
            quarantined=response.quarantined,
        )

    async def quarantined(self, caller: Caller, *, all_namespaces: bool = False) -> tuple[Quarantines, int]:
        """The log entries the index set aside, of the caller's namespace (or every one), and how many over every
        namespace (admin)."""
        request = search_pb2.ListQuarantinedRequest(caller=wire.caller_to_proto(caller), all_namespaces=all_namespaces)
        response = await self._call(self._stub.ListQuarantined, request)
        return [_quarantined(e) for e in response.entries], response.total

    async def retry_quarantined(
        self, caller: Caller, seqs: Sequence[int], *, all_namespaces: bool = False
    ) -> tuple[Quarantines, Quarantines]:
        """Applies set-aside entries again (none named: all the caller may see): those applied, those still failing."""
        request = search_pb2.RetryQuarantinedRequest(
            caller=wire.caller_to_proto(caller), seqs=seqs, all_namespaces=all_namespaces
        )
        response = await self._call(self._stub.RetryQuarantined, request)
        return [_quarantined(e) for e in response.applied], [_quarantined(e) for e in response.failed]

    async def drop_quarantined(
        self, caller: Caller, seqs: Sequence[int], *, all_namespaces: bool = False
    ) -> Quarantines:
        """Drops set-aside entries from the quarantine (none named: all the caller may see); answers those dropped."""
        request = search_pb2.DropQuarantinedRequest(
            caller=wire.caller_to_proto(caller), seqs=seqs, all_namespaces=all_namespaces
        )
        response = await self._call(self._stub.DropQuarantined, request)
        return [_quarantined(e) for e in response.dropped]


Quarantines = list[Quarantined]  # SearchClient.list shadows the builtin in its body


def _quarantined(entry: search_pb2.QuarantinedEntry) -> Quarantined:
    return Quarantined(
        seq=entry.seq, namespace=entry.namespace, memory_id=entry.memory_id, event=entry.event, error=entry.error,
        at=wire.ts_to_epoch(entry, "at") or 0.0,
    )  # fmt: skip


JOB_KINDS = ("expire", "dedupe", "contradictions", "team_summary", "decay", "enrich_backfill", "all")
RESOLUTIONS = ("keep_both", "keep_newer", "merge", "override", "supersede")


class ConsolidationClient(_Client):
    """The consolidation service: jobs, and the contradictions they flag for the user to resolve."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        super().__init__(target, timeout=timeout)
        self._stub = consolidation_pb2_grpc.ConsolidationStub(self.channel)

    async def run_job(self, caller: Caller, kind: str, options: dict[str, str] | None = None) -> Job:
        """Runs a job of ``kind`` (one of JOB_KINDS) for the caller's namespace."""
        if kind not in JOB_KINDS:
            raise errors.InvalidArgument("kind", f"{kind!r} is not a job kind; use one of {', '.join(JOB_KINDS)}.")
        request = consolidation_pb2.RunJobRequest(
            caller=wire.caller_to_proto(caller),
            kind=consolidation_pb2.JobKind.Value(f"JOB_KIND_{kind.upper()}"),
            options=options or {},
        )
        response = await self._call(self._stub.RunJob, request)
        return job_from_proto(response.job)

    async def get_job(self, caller: Caller, job_id: str) -> Job:
        request = consolidation_pb2.GetJobRequest(caller=wire.caller_to_proto(caller), id=job_id)
        response = await self._call(self._stub.GetJob, request)
        return job_from_proto(response.job)

    async def list_jobs(self, caller: Caller, *, limit: int = 20) -> list[Job]:
        """The recent jobs of the caller's namespace (kept a week), newest first."""
        request = consolidation_pb2.ListJobsRequest(caller=wire.caller_to_proto(caller), limit=limit)
        response = await self._call(self._stub.ListJobs, request)
        return [job_from_proto(job) for job in response.jobs]

    async def contradictions(
        self, caller: Caller, *, topics: list[str] | None = None, limit: int = 20
    ) -> list[Contradiction]:
        """The open (flagged, unresolved) contradictions of the caller's namespace, most likely first."""
        request = consolidation_pb2.ListContradictionsRequest(
            caller=wire.caller_to_proto(caller), topics=topics or [], limit=limit
        )
        response = await self._call(self._stub.ListContradictions, request)
        return [contradiction_from_proto(c) for c in response.contradictions]

    async def resolve(
        self, caller: Caller, memory_id: str, other_id: str, resolution: str, *, context: str = "",
        other_context: str = "", content: str = "", winner_id: str = "",
    ) -> tuple[list[Memory], str]:  # fmt: skip
        """The user's answer to a flagged contradiction (one of RESOLUTIONS; admin scope): the pair as it is now
        (for merge, the new memory first) and a summary."""
        if resolution not in RESOLUTIONS:
            raise errors.InvalidArgument(
                "resolution", f"{resolution!r} is not a resolution; use one of {', '.join(RESOLUTIONS)}."
            )
        request = consolidation_pb2.ResolveContradictionRequest(
            caller=wire.caller_to_proto(caller), id=memory_id, other_id=other_id,
            resolution=consolidation_pb2.Resolution.Value(f"RESOLUTION_{resolution.upper()}"), context=context,
            other_context=other_context, content=content, winner_id=winner_id,
        )  # fmt: skip
        response = await self._call(self._stub.ResolveContradiction, request)
        return [wire.memory_from_proto(m) for m in response.memories], response.summary


def contradiction_from_proto(message: consolidation_pb2.Contradiction) -> Contradiction:
    return Contradiction(
        wire.memory_from_proto(message.memory), wire.memory_from_proto(message.other), message.score, message.why,
        message.kind or "contradiction", message.rule,
    )  # fmt: skip


def contradiction_to_proto(item: Contradiction) -> consolidation_pb2.Contradiction:
    return consolidation_pb2.Contradiction(
        memory=wire.memory_to_proto(item.memory), other=wire.memory_to_proto(item.other), score=item.score,
        why=item.why, kind=item.kind, rule=item.rule,
    )  # fmt: skip


def job_from_proto(message: consolidation_pb2.Job) -> Job:
    kind = consolidation_pb2.JobKind.Name(message.kind).removeprefix("JOB_KIND_").lower()
    state = consolidation_pb2.JobState.Name(message.state).removeprefix("JOB_STATE_").lower()
    return Job(
        id=message.id, kind=kind, state=state, namespace=message.namespace,
        started_at=wire.ts_to_epoch(message, "started_at"), finished_at=wire.ts_to_epoch(message, "finished_at"),
        summary=message.summary, result=json.loads(message.result_json) if message.result_json else {},
        done=message.done, total=message.total, phase=message.phase, runner=message.runner,
    )  # fmt: skip


def job_to_proto(job: Job) -> consolidation_pb2.Job:
    message = consolidation_pb2.Job(
        id=job.id, kind=consolidation_pb2.JobKind.Value(f"JOB_KIND_{job.kind.upper()}"),
        state=consolidation_pb2.JobState.Value(f"JOB_STATE_{job.state.upper()}"), namespace=job.namespace,
        summary=job.summary, result_json=json.dumps(job.result, ensure_ascii=False) if job.result else "",
        done=job.done, total=job.total, phase=job.phase, runner=job.runner,
    )  # fmt: skip
    wire.set_ts(message, "started_at", job.started_at)
    wire.set_ts(message, "finished_at", job.finished_at)
    return message


def _agent(message: search_pb2.AgentInfo) -> AgentInfo:
    return AgentInfo(
        agent_id=message.agent_id, first_seen=wire.ts_to_epoch(message, "first_seen"),
        last_seen=wire.ts_to_epoch(message, "last_seen"), memories=message.memories, devices=list(message.devices),
        clients=list(message.clients), teams=list(message.teams), writes=message.writes,
    )  # fmt: skip


MAX_PUSH = 500  # changes in one push
MAX_PULL = 1000  # entries in one pull page
DEFAULT_PULL = 200
# The agents of a device that a dev-mode node syncs (no keys on loopback): local devices speak for any agent.
ANY_AGENT = "*"


class SyncClient(_Client):
    """The sync service: edge devices register, push their changes and pull the namespace's."""

    def __init__(self, target: str | grpc.aio.Channel, *, timeout: float = DEFAULT_RPC_TIMEOUT) -> None:
        super().__init__(target, timeout=timeout)
        self._stub = sync_pb2_grpc.SyncStub(self.channel)

    async def register(self, caller: Caller, device: str) -> sync_pb2.RegisterDeviceResponse:
        request = sync_pb2.RegisterDeviceRequest(caller=wire.caller_to_proto(caller), device=device)
        return await self._call(self._stub.RegisterDevice, request)

    async def push(
        self,
        caller: Caller,
        device: str,
        changes: list[SyncChange],
        *,
        restore: bool = False,
        agents: Sequence[str] = (),
    ) -> list[Pushed]:
        """``agents``: the agents the device's key names (the device speaks only for them)."""
        request = sync_pb2.PushChangesRequest(
            caller=wire.caller_to_proto(caller), device=device, restore=restore, agents=list(agents),
            changes=[
                sync_pb2.Change(source_id=c.source_id, event=c.event, body_json=c.body, seq=c.seq, parent=c.parent)
                for c in changes
            ],
        )  # fmt: skip
        response = await self._call(self._stub.PushChanges, request)
        return [
            Pushed(r.source_id, r.accepted, r.seq, r.version, r.reason, r.conflict, r.duplicate, list(r.redacted))
            for r in response.results
        ]

    async def pull(self, caller: Caller, device: str, cursor: int, limit: int) -> SyncPage:
        request = sync_pb2.PullChangesRequest(
            caller=wire.caller_to_proto(caller), device=device, cursor=cursor, limit=limit
        )
        response = await self._call(self._stub.PullChanges, request)
        return SyncPage(
            [SyncChange(c.source_id, c.event, c.body_json, c.seq) for c in response.changes],
            response.cursor, response.has_more, response.last_seq,
        )  # fmt: skip
