"""Keeping the shared memory tidy: maintenance jobs, team summaries, summaries that replace memories, and
contradictions."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from engram.config import DEFAULT_SEARCH_LIMIT
from engram.errors import EngramError, InvalidArgument, RemoteError, Unavailable
from engram.grpc.clients import ConsolidationClient
from engram.model import Caller, MemoryInput, SearchFilter
from engram.results import Job
from engram.services.gateway.backend import redactions_json
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.memories import MemoryOperations
from engram.services.gateway.schemas.arguments import MAX_CONSOLIDATED
from engram.services.gateway.schemas.requests import ConsolidateRequest, ResolveRequest
from engram.services.gateway.schemas.results import (
    ConsolidateMemoryResult,
    ConsolidateResult,
    ContradictionOut,
    ContradictionsResult,
    JobOut,
    MemoryOut,
    RedactionOut,
    ResolveResult,
)

log = logging.getLogger(__name__)

NO_TEAM = "name a team, or join one: X-Engram-Team header / ENGRAM_TEAM."
# consolidate_memory: the summary's type when no memory_type selects the memories; a selector's matches are read a
# page of this many at a time (at most MAX_CONSOLIDATED, one merge's limit in ingest).
DEFAULT_SUMMARY_TYPE = "general"
SELECTOR_PAGE = 100
NO_CONSOLIDATION = (
    "This gateway has no consolidation service, which runs maintenance jobs and finds contradictions: start it "
    "with ENGRAM_CONSOLIDATION_ADDR (--consolidation-addr) set to the service's address."
)


class ConsolidationOperations(MemoryOperations):
    """Consolidation for an already resolved caller: jobs, team summaries, merges and contradictions."""

    async def consolidate_team(self, caller: Caller, team: str | None = None) -> ConsolidateResult:
        """Writes a fresh summary of a team's memories (the caller's team when none is named)."""
        require_scope(caller, "write")
        name = (team or "").strip() or caller.team
        if not name:
            raise InvalidArgument("team", NO_TEAM)
        job = _succeeded(await self._backend.run_job(caller, "team_summary", {"team": name}))
        return ConsolidateResult(team=name, job=JobOut.of(job), summary=await self._job_memory(caller, job))

    async def run_job(self, caller: Caller, kind: str, options: dict[str, str] | None = None) -> JobOut:
        """Runs a consolidation job on the caller's namespace and answers it once it has ended; a failed job is
        an error of the kind it reports (its summary says what to do)."""
        require_scope(caller, "write")  # the job reads at the log's end: everything acknowledged here is in it
        job = _succeeded(await self._backend.run_job(caller, kind, dict(options or {})))
        # The job wrote through ingest, not through this gateway: later reads here wait for those writes too.
        try:
            self._cursors.observe(caller.namespace, (await self._backend.search_client.stats(caller)).log_last_seq)
        except EngramError as e:  # the job is done; only read-your-writes after it is not assured
            log.warning("reading the log's end after job %s failed: %s", job.id, e)
        return JobOut.of(job)

    async def get_job(self, caller: Caller, job_id: str) -> JobOut:
        """A job of the caller's namespace, running or ended (on any consolidation replica)."""
        require_scope(caller, "read")
        return JobOut.of(await self._consolidation().get_job(caller, job_id))

    async def consolidate_memory(
        self,
        caller: Caller,
        *,
        kind: str | None = None,
        consolidated_content: str | None = None,
        memory_ids: Sequence[str] | None = None,
        memory_type: str | None = None,
        tag: str | None = None,
        topic: str | None = None,
        force: bool = False,
    ) -> ConsolidateMemoryResult:
        """The consolidate_memory tool: a maintenance job of ``kind`` (``topic`` and ``force`` become its options),
        or ``consolidated_content`` replacing the memories named or selected; exactly one of the two."""
        if kind is None and consolidated_content is None:
            raise InvalidArgument(
                "kind", "give either kind (a maintenance job: dedupe, contradictions, ...) or consolidated_content "
                "(your summary of the memories it replaces, with memory_ids or a memory_type, tag or topic).",
            )  # fmt: skip
        if kind is not None and consolidated_content is not None:
            raise InvalidArgument(
                "consolidated_content", "give either kind (run a job) or consolidated_content (replace memories "
                "with your summary), not both: call consolidate_memory once for each.",
            )  # fmt: skip
        if consolidated_content is not None:
            request = ConsolidateRequest(
                consolidated_content=consolidated_content, memory_ids=None if memory_ids is None else list(memory_ids),
                memory_type=memory_type, tag=tag, topic=topic, force=force,
            )  # fmt: skip
            return await self.consolidate(caller, request)
        assert kind is not None
        for name, value in (("memory_ids", memory_ids), ("memory_type", memory_type), ("tag", tag)):
            if value is not None:
                raise InvalidArgument(
                    name, "only goes with consolidated_content (the memories your summary replaces); leave it out "
                    "to run a job.",
                )  # fmt: skip
        return ConsolidateMemoryResult(job=await self.run_job(caller, kind, _job_options(kind, topic, force)))

    async def consolidate(self, caller: Caller, request: ConsolidateRequest) -> ConsolidateMemoryResult:
        """Saves ``request.consolidated_content`` as a new memory that replaces the memories it names or selects:
        they are archived with a merged-into relation to it, and it records them in metadata["merged_from"]."""
        require_scope(caller, "write")
        ids = list(dict.fromkeys(request.memory_ids or [])) or list(await self._selected(caller, request))
        summary = MemoryInput(
            content=request.consolidated_content, memory_type=request.memory_type or DEFAULT_SUMMARY_TYPE,
            tags=[request.tag] if request.tag else [], topics=[request.topic] if request.topic else [],
        )  # fmt: skip
        outcome = await self._backend.ingest.merge(
            caller, ids, replacement=summary, force=request.force, note=f"consolidated by {caller.agent_id}"
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return ConsolidateMemoryResult(
            survivor=MemoryOut.of(outcome.survivor), merged_ids=[m.id for m in outcome.merged], seq=outcome.seq,
            redactions=[RedactionOut(**r) for r in redactions_json(list(outcome.redactions))],
        )  # fmt: skip

    async def _selected(self, caller: Caller, request: ConsolidateRequest) -> Sequence[str]:
        """The ids of the caller's namespace's active memories matching the request's memory_type, tag and topic;
        refuses no selector, no match, and more than one summary may replace."""
        if not (request.memory_type or request.tag or request.topic):
            raise InvalidArgument(
                "memory_ids", "name the memories your summary replaces (memory_ids), or select them by memory_type, "
                "tag or topic.",
            )  # fmt: skip
        flt = SearchFilter(
            memory_types=[request.memory_type] if request.memory_type else [],
            tags=[request.tag] if request.tag else [], topics=[request.topic] if request.topic else [],
        )  # fmt: skip
        selector = _selector(request)
        ids: list[str] = []
        token = ""
        while True:
            page = await self._backend.list(
                caller, limit=SELECTOR_PAGE, flt=flt, page_token=token, min_seq=self._cursors.min_seq(caller.namespace)
            )
            ids += [m.id for m in page.memories]
            if len(ids) > MAX_CONSOLIDATED:
                raise InvalidArgument(
                    "memory_ids", f"more than {MAX_CONSOLIDATED} active memories match {selector}; one summary "
                    f"replaces at most {MAX_CONSOLIDATED}. Narrow the selection (add a tag, topic or memory_type) "
                    "or name the memories with memory_ids.",
                )  # fmt: skip
            token = page.next_page_token
            if not token:
                break
        if not ids:
            raise InvalidArgument(
                "memory_ids", f"no active memory matches {selector}. Check the selector with list_memories, or name "
                "the memories with memory_ids.",
            )  # fmt: skip
        return list(dict.fromkeys(ids))

    async def contradictions(
        self, caller: Caller, *, topics: Sequence[str] | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> ContradictionsResult:
        """The open contradictions of the caller's namespace (pairs flagged by the contradictions job whose
        memories are both still active), most likely first."""
        require_scope(caller, "read")
        found = await self._consolidation().contradictions(caller, topics=list(topics or []), limit=limit)
        return ContradictionsResult(contradictions=[ContradictionOut.of(c) for c in found])

    async def resolve(self, caller: Caller, request: ResolveRequest) -> ResolveResult:
        """The user's answer to a flagged contradiction. The consolidation service requires the admin scope (the
        user decides, not an agent) and refuses others saying so."""
        memories, summary = await self._consolidation().resolve(
            caller, request.id, request.other_id, request.resolution, context=request.context or "",
            other_context=request.other_context or "", content=request.content or "",
            winner_id=request.winner_id or "",
        )  # fmt: skip
        self._cursors.observe(caller.namespace, max((m.seq for m in memories), default=0))
        return ResolveResult(memories=[MemoryOut.of(m) for m in memories], summary=summary)

    def _consolidation(self) -> ConsolidationClient:
        if self._backend.consolidation is None:
            raise Unavailable(NO_CONSOLIDATION)
        return self._backend.consolidation

    async def _job_memory(self, caller: Caller, job: Job) -> MemoryOut | None:
        """The memory a job wrote (its result's ``memory_id``), read once the index has its write."""
        memory_id = job.result.get("memory_id")
        if not memory_id:
            return None
        seq = int(job.result.get("seq") or 0)
        return await self.get(caller, str(memory_id), min_seq=seq)


def _succeeded(job: Job) -> Job:
    """The job, if it succeeded; a failed one raises its error, keeping its kind (e.g. an empty team: 409)."""
    if job.state == "failed":
        # The job's error says what to do (e.g. an empty team: save memories in it first).
        raise RemoteError(str(job.result.get("code") or "internal"), f"{job.summary} (job {job.id})")
    return job


def _job_options(kind: str, topic: str | None, force: bool) -> dict[str, str]:
    """consolidate_memory's arguments as the options of a job of ``kind``: topic for contradictions, force for
    dedupe; refused for the kinds that do not take them."""
    options: dict[str, str] = {}
    if topic is not None:
        if kind != "contradictions":
            raise InvalidArgument(
                "topic", f"goes with consolidated_content, or with kind contradictions; the {kind} job takes no topic."
            )
        options["topics"] = topic
    if force:
        if kind != "dedupe":
            raise InvalidArgument(
                "force", f"goes with consolidated_content, or with kind dedupe (admin); the {kind} job takes no force."
            )
        options["force"] = "true"
    return options


def _selector(request: ConsolidateRequest) -> str:
    """The selection in words, e.g. "memory_type 'decision' and tag 'auth'"."""
    given = [(name, getattr(request, name)) for name in ("memory_type", "tag", "topic")]
    return " and ".join(f"{name} {value!r}" for name, value in given if value)
