"""The gateway's memory operations, shared by REST and MCP: requests in, calls to the services, results out."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from engram.clients import ConsolidationClient
from engram.config import DEFAULT_SEARCH_LIMIT, Settings
from engram.errors import EngramError, ImportStopped, InvalidArgument, RemoteError, Unavailable
from engram.index import DENSE
from engram.log import Log, LogEntry, Subscription
from engram.model import (
    HANDOFF_STATUSES,
    Caller,
    Memory,
    MemoryInput,
    SearchFilter,
    format_time,
    parse_time,
)
from engram.names import AGENT_PATTERN, AGENT_RULE
from engram.results import ImportItem, Job, Page
from engram.services.gateway.backend import Backend, redactions_json
from engram.services.gateway.backend import metadata_json as encode_metadata
from engram.services.gateway.identity import require_scope
from engram.services.gateway.schemas import (
    DURATION_PATTERN,
    MAX_CONSOLIDATED,
    UPDATE_FIELDS,
    AgentOut,
    AgentsResult,
    ConsolidateMemoryResult,
    ConsolidateRequest,
    ConsolidateResult,
    ContradictionOut,
    ContradictionsResult,
    DeleteResult,
    Filters,
    HandoffListRequest,
    HandoffMoveRequest,
    HandoffRequest,
    HistoryResult,
    HitOut,
    ImportedOut,
    ImportLineIn,
    ImportRejectionOut,
    ImportResult,
    JobOut,
    ListRequest,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    MemoryVersionOut,
    RedactionOut,
    ResolveRequest,
    ResolveResult,
    SaveRequest,
    SaveResult,
    SearchRequest,
    SearchResult,
    SimilarMemoryOut,
    StageRank,
    SupersedeRequest,
    SupersedeResult,
    TeamOut,
    TeamsResult,
    UpdateRequest,
    WarningOut,
)
from engram.validation import MAX_SUMMARY_CHARS, check_time

log = logging.getLogger(__name__)

# Seconds per unit of an expiry duration (30d, 12h, ...).
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(DURATION_PATTERN)
_INPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryInput))
# A request field whose MemoryInput name differs (update masks name MemoryInput fields).
_INPUT_NAME = {"metadata": "metadata_json"}

# The similar-finding check after a finding is saved: a dense-only search for its content, whose "dense" stage
# score is the cosine similarity. The caller's own findings may take some of the top places, so more candidates
# than warnings are fetched; a finding beyond them is not "very similar".
SIMILAR_CANDIDATES = 20
SIMILAR_QUERY_CHARS = 4000  # the search's query limit (the embedder reads far less of it anyway)
SIMILAR_CHECK_SECONDS = 5.0  # the save is done; its answer waits at most this long for the check
PREVIEW_CHARS = 200
NO_TEAM = "name a team, or join one: X-Engram-Team header / ENGRAM_TEAM."
# consolidate_memory: the summary's type when no memory_type selects the memories; a selector's matches are read a
# page of this many at a time (at most MAX_CONSOLIDATED, one merge's limit in ingest).
DEFAULT_SUMMARY_TYPE = "general"
SELECTOR_PAGE = 100
NO_CONSOLIDATION = (
    "This gateway has no consolidation service, which runs maintenance jobs and finds contradictions: start it "
    "with ENGRAM_CONSOLIDATION_ADDR (--consolidation-addr) set to the service's address."
)

# --- operations ---------------------------------------------------------------------------------------------


class CursorTracker:
    """The highest log sequence this gateway process acknowledged per namespace.

    Reads ask the index to have applied at least this much, so a read through this gateway sees every
    write this gateway acknowledged before it (read-your-writes across agents of a namespace).
    """

    def __init__(self) -> None:
        self._seqs: dict[str, int] = {}
        self._lock = threading.Lock()  # stdio and HTTP may share one tracker across threads

    def observe(self, namespace: str, seq: int) -> None:
        """Records an acknowledged write."""
        with self._lock:
            if seq > self._seqs.get(namespace, 0):
                self._seqs[namespace] = seq

    def namespaces(self) -> list[str]:
        with self._lock:
            return list(self._seqs)

    def get(self, namespace: str) -> int:
        """The highest acknowledged sequence of ``namespace`` (0 if none)."""
        return self._seqs.get(namespace, 0)

    def min_seq(self, namespace: str, requested: int | None = None) -> int:
        """What a read waits for: the caller's ``min_seq`` or this gateway's cursor, whichever is later."""
        return max(self.get(namespace), requested or 0)

    async def follow(self, event_log: Log) -> LogFollower:
        """Also records every write other gateway replicas acknowledge, as the log delivers it (sequences and
        subjects only, no bodies), so a caller whose requests land on different replicas still reads its writes."""
        follower = LogFollower(event_log, self)
        await follower.start()
        return follower


class LogFollower:
    """A CursorTracker's subscription to the log, from the log's end on (what was acknowledged before is at or
    before that end); after a reconnection the log resumes it after the last entry it saw."""

    def __init__(self, event_log: Log, cursors: CursorTracker) -> None:
        self._log = event_log
        self._cursors = cursors
        self._subscription: Subscription | None = None

    async def start(self) -> None:
        end = await self._log.last_seq()
        for namespace in self._cursors.namespaces():
            self._cursors.observe(namespace, end)  # what was acknowledged while this gateway was not following
        self._subscription = await self._log.follow(end + 1, self._observe, headers_only=True)

    async def _observe(self, entry: LogEntry) -> None:
        parts = entry.subject.split(".")
        if len(parts) == 4:  # engram.events.<namespace>.<event>
            self._cursors.observe(parts[2], entry.seq)

    async def unsubscribe(self) -> None:
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            with contextlib.suppress(Exception):  # the log's connection may be gone already
                await subscription.unsubscribe()


class Operations:
    """Every memory operation for an already resolved caller; shared by the MCP tools and REST."""

    def __init__(self, backend: Backend, cursors: CursorTracker, settings: Settings | None = None) -> None:
        """``settings`` None: the defaults (e.g. of ENGRAM_SIMILAR_FINDING_THRESHOLD)."""
        self._backend = backend
        self._cursors = cursors
        self._similar_threshold = (settings or Settings()).similar_finding_threshold

    async def save(self, caller: Caller, request: SaveRequest) -> SaveResult:
        """Saves a memory; a finding also answers with the very similar findings of other agents, if any."""
        require_scope(caller, "write")
        outcome = await self._backend.save(caller, _draft(request))
        self._cursors.observe(caller.namespace, outcome.seq)
        result = _saved(outcome.memory, outcome.seq, outcome.redactions)
        if outcome.memory.memory_type == "finding":
            result.warnings = await self._similar_findings(caller, outcome.memory, outcome.seq)
        return result

    async def _similar_findings(self, caller: Caller, memory: Memory, seq: int) -> list[WarningOut]:
        """A warning naming other agents' active findings whose meaning is very close to ``memory``.

        It never fails the save it follows (the memory is stored already): a failing check is logged and the
        save answers without warnings."""
        try:
            async with asyncio.timeout(SIMILAR_CHECK_SECONDS):
                outcome = await self._backend.search(
                    caller, memory.content[:SIMILAR_QUERY_CHARS], limit=SIMILAR_CANDIDATES,
                    flt=SearchFilter(memory_types=["finding"]), min_seq=seq - 1, explain=True, rerank=False,
                    sources=[DENSE],
                )  # fmt: skip
        except (EngramError, TimeoutError) as e:
            log.warning("similar-finding check after saving %s failed: %s", memory.id, e or "timed out")
            return []
        similar = [
            SimilarMemoryOut(
                id=hit.memory.id,
                owner_agent=hit.memory.owner_agent,
                similarity=round(similarity, 4),
                preview=preview(hit.memory.content),
            )
            for hit in outcome.hits
            if hit.memory.owner_agent != caller.agent_id
            and (similarity := hit.explain.get(DENSE, (0, 0.0))[1]) >= self._similar_threshold
        ]
        if not similar:
            return []
        return [WarningOut(kind="similar_finding", message=_similar_message(similar), memories=similar)]

    async def update(self, caller: Caller, memory_id: str, request: UpdateRequest) -> SaveResult:
        """A new version of a memory with the fields given in ``request`` changed (the owner's act)."""
        require_scope(caller, "write")
        fields = [_INPUT_NAME.get(name, name) for name in UPDATE_FIELDS if getattr(request, name) is not None]
        if not fields:
            raise InvalidArgument(
                "update", f"give at least one field to change ({', '.join(UPDATE_FIELDS)}); null means unchanged."
            )
        outcome = await self._backend.update(
            caller, memory_id, _draft(request), fields, expected_version=request.expected_version or 0
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return _saved(outcome.memory, outcome.seq, outcome.redactions)

    async def delete(
        self, caller: Caller, memory_id: str, *, expected_version: int | None = None, purge: bool = False
    ) -> DeleteResult:
        """Archives a memory (a new version, kept in its history), or with ``purge`` (admin) erases it."""
        require_scope(caller, "admin" if purge else "write")
        outcome = await self._backend.delete(caller, memory_id, expected_version=expected_version or 0, purge=purge)
        self._cursors.observe(caller.namespace, outcome.seq)
        return DeleteResult(
            id=outcome.id,
            seq=outcome.seq,
            purged=purge,
            memory=MemoryOut.of(outcome.memory) if outcome.memory is not None else None,
            erased=outcome.erased,
        )

    async def supersede(self, caller: Caller, memory_id: str, request: SupersedeRequest) -> SupersedeResult:
        """Replaces a memory with a new one (``content``) or an existing one (``new_id``)."""
        require_scope(caller, "write")
        _check_replacement(request)
        replacement = _draft(request) if request.content is not None else None
        outcome = await self._backend.supersede(
            caller, memory_id, replacement=replacement, new_id=request.new_id or "",
            expected_version=request.expected_version or 0,
        )  # fmt: skip
        self._cursors.observe(caller.namespace, outcome.seq)
        return SupersedeResult(
            id=outcome.new.id,
            version=outcome.new.version,
            seq=outcome.seq,
            memory=MemoryOut.of(outcome.new),
            superseded=MemoryOut.of(outcome.old),
            redactions=[RedactionOut(**r) for r in redactions_json(list(outcome.redactions))],
        )

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int | None = None) -> HistoryResult:
        require_scope(caller, "read")
        outcome = await self._backend.history(
            caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace, min_seq)
        )
        versions = [
            MemoryVersionOut.model_validate({**dataclasses.asdict(v), "updated_at": format_time(v.updated_at)})
            for v in outcome.versions
        ]
        return HistoryResult(memory_id=outcome.memory_id, versions=versions)

    async def memory_at(self, caller: Caller, memory_id: str, at: str, *, min_seq: int | None = None) -> MemoryOut:
        """The memory as it was at the RFC 3339 time ``at``."""
        require_scope(caller, "read")
        moment = _time("time", at)
        if moment is None:
            raise InvalidArgument("time", "is required: an RFC 3339 time, e.g. 2026-01-31T12:00:00Z.")
        memory = await self._backend.memory_at(
            caller, memory_id, moment, min_seq=self._cursors.min_seq(caller.namespace, min_seq)
        )
        return MemoryOut.of(memory)

    async def stats(self, caller: Caller) -> MemoryStatsOut:
        """Counts of the caller's namespace by agent, type, status and team."""
        require_scope(caller, "read")
        outcome = await self._backend.memory_stats(caller)
        return MemoryStatsOut(
            namespace=caller.namespace, memories=outcome.memories, total=outcome.total, by_agent=outcome.by_agent,
            by_type=outcome.by_type, by_status=outcome.by_status, by_team=outcome.by_team,
            applied_seq=outcome.applied_seq, log_last_seq=outcome.log_last_seq,
        )  # fmt: skip

    async def search(self, caller: Caller, request: SearchRequest) -> SearchResult:
        require_scope(caller, "read")
        outcome = await self._backend.search(
            caller,
            request.query,
            limit=request.limit,
            flt=_filter(request.filters, as_of=_time("as_of", request.as_of)),
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
            explain=request.explain,
            rerank=request.rerank,
            sources=list(request.sources or []),
        )
        hits = [
            HitOut(
                score=hit.score,
                memory=MemoryOut.of(hit.memory),
                explain={stage: StageRank(rank=rank, score=score) for stage, (rank, score) in hit.explain.items()}
                if request.explain
                else None,
            )
            for hit in outcome.hits
        ]
        return SearchResult(
            hits=hits,
            applied_seq=outcome.applied_seq,
            reranked=outcome.reranked,
            rerank_note=outcome.rerank_note,
        )

    async def import_lines(
        self, caller: Caller, lines: AsyncIterator[tuple[int, bytes | EngramError]], *, first_line: int = 1
    ) -> ImportResult:
        """Bulk import of JSON lines: a bad line is rejected with its reason, the others are imported in order.

        ``lines`` gives each line's bytes, or the error that makes it unreadable (e.g. too long). If the import
        stops part-way (the body passes its limit, the log goes away) ImportStopped carries what was stored.
        """
        require_scope(caller, "write")
        rejected: list[ImportRejectionOut] = []
        handled = first_line - 1  # the last line this gateway rejected or handed to ingest
        stop: EngramError | None = None

        async def items() -> AsyncIterator[ImportItem]:
            nonlocal handled, stop
            try:
                async for number, raw in lines:
                    handled = number
                    if isinstance(raw, EngramError):
                        rejected.append(ImportRejectionOut(line=number, reason=str(raw)))
                        continue
                    if not raw.strip():
                        continue
                    try:
                        line = ImportLineIn.model_validate_json(raw)
                        draft = _draft(line)
                    except (ValidationError, InvalidArgument) as e:
                        rejected.append(ImportRejectionOut(line=number, reason=_reason(e)))
                        continue
                    yield ImportItem(number, draft, line.source_id or "")
            except EngramError as e:  # the body itself failed (e.g. passed its size limit): stop reading it
                stop = e

        outcome = await self._backend.import_memories(caller, items())
        if outcome.last_seq:
            self._cursors.observe(caller.namespace, outcome.last_seq)
        # Ingest stopping (log or disk gone) ends the import at its last line; lines read past it do not count.
        cause = outcome.stopped or stop
        last_line = outcome.last_line if outcome.stopped else max(handled, outcome.last_line)
        rejected = [r for r in rejected if r.line <= last_line]
        rejected.extend(ImportRejectionOut(line=line, reason=reason) for line, reason in outcome.rejected)
        result = ImportResult(
            imported=len(outcome.imported),
            already_present=len(outcome.present),
            rejected=sorted(rejected, key=lambda r: r.line),
            last_line=last_line,
            resume_from=last_line + 1,
            last_seq=outcome.last_seq,
            items=[
                ImportedOut(line=line, id=mid, already_present=present)
                for line, mid, _, present in sorted(
                    [(*item, False) for item in outcome.imported] + [(*item, True) for item in outcome.present]
                )
            ],
            redactions=[RedactionOut(**r) for r in redactions_json(outcome.redactions)],
            stopped=str(cause) if cause else None,
        )
        if cause is not None:
            raise ImportStopped(cause, result.model_dump(), last_line + 1)
        return result

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int | None = None) -> MemoryOut:
        require_scope(caller, "read")
        memory = await self._backend.get(
            caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace, min_seq), with_history=True
        )
        return MemoryOut.of(memory)

    async def list(self, caller: Caller, request: ListRequest) -> ListResult:
        require_scope(caller, "read")
        outcome = await self._backend.list(
            caller,
            limit=request.limit,
            flt=_filter(request.filters),
            page_token=request.page_token or "",
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
        )
        return _listed(outcome)

    # --- coordination: agents, teams, handoffs ---------------------------------------------------------------

    async def agents(self, caller: Caller) -> AgentsResult:
        """The agent registry of the caller's namespace, most recently seen first."""
        require_scope(caller, "read")
        agents = await self._backend.list_agents(caller, min_seq=self._cursors.min_seq(caller.namespace))
        agents.sort(key=lambda agent: agent.last_seen or 0.0, reverse=True)
        return AgentsResult(agents=[AgentOut.of(agent) for agent in agents])

    async def teams(
        self, caller: Caller, *, search: str | None = None, limit: int = DEFAULT_SEARCH_LIMIT
    ) -> TeamsResult:
        """The teams of the caller's namespace; with ``search``, also the team summaries matching it."""
        require_scope(caller, "read")
        teams = await self._backend.list_teams(caller, min_seq=self._cursors.min_seq(caller.namespace))
        result = TeamsResult(teams=[TeamOut.of(team) for team in teams])
        if search is not None:
            query = SearchRequest(query=search, limit=limit, filters=Filters(memory_type="team-summary"))
            result.summaries = (await self.search(caller, query)).hits
        return result

    async def consolidate_team(self, caller: Caller, team: str | None = None) -> ConsolidateResult:
        """Writes a fresh summary of a team's memories (the caller's team when none is named)."""
        require_scope(caller, "write")
        name = (team or "").strip() or caller.team
        if not name:
            raise InvalidArgument("team", NO_TEAM)
        job = _succeeded(await self._backend.run_job(caller, "team_summary", {"team": name}))
        return ConsolidateResult(team=name, job=JobOut.of(job), summary=await self._job_memory(caller, job))

    # --- consolidation: maintenance jobs, summaries that replace memories, contradictions ----------------------

    async def run_job(self, caller: Caller, kind: str, options: dict[str, str] | None = None) -> JobOut:
        """Runs a consolidation job on the caller's namespace and answers it once it has ended; a failed job is
        an error of the kind it reports (its summary says what to do)."""
        require_scope(caller, "write")  # the job reads at the log's end: everything acknowledged here is in it
        job = _succeeded(await self._backend.run_job(caller, kind, dict(options or {})))
        # The job wrote through ingest, not through this gateway: later reads here wait for those writes too.
        try:
            self._cursors.observe(caller.namespace, (await self._backend.index_stats(caller)).log_last_seq)
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

    async def create_handoff(self, caller: Caller, request: HandoffRequest) -> SaveResult:
        """Saves a pending handoff for ``request.target_agent``: readable Markdown, with its lists in metadata."""
        save = SaveRequest(
            content=handoff_content(request), summary=handoff_summary(request), memory_type="handoff",
            handoff_target=request.target_agent, tags=request.tags, team=request.team, project=request.project,
            importance=request.importance,
            metadata={name: list(getattr(request, name) or []) for name in HANDOFF_LISTS},
        )  # fmt: skip
        return await self.save(caller, save)

    async def handoffs(self, caller: Caller, request: HandoffListRequest) -> ListResult:
        """Handoffs to the caller, from it, or all of the namespace's, in one state or all, newest first."""
        require_scope(caller, "read")
        # By state, not by type: an expired handoff has become a plain (general) memory and keeps its state.
        statuses = list(HANDOFF_STATUSES) if request.status == "all" else [request.status]
        flt = SearchFilter(handoff_statuses=statuses)
        if request.role == "to_me":
            flt.handoff_target = caller.agent_id
        elif request.role == "from_me":
            flt.owner_agent = caller.agent_id
        outcome = await self._backend.list(
            caller, limit=request.limit, flt=flt, page_token=request.page_token or "",
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
        )  # fmt: skip
        if request.role == "to_me":  # a handoff to agent@device is the agent's on that device only
            mine = (caller.agent_id, caller.identity)
            outcome = dataclasses.replace(
                outcome, memories=[m for m in outcome.memories if m.handoff is None or m.handoff.target_agent in mine]
            )
        return _listed(outcome)

    async def move_handoff(
        self, caller: Caller, memory_id: str, status: str, request: HandoffMoveRequest
    ) -> SaveResult:
        """Accepts or completes a handoff (``status``): the act of its target agent, not its owner."""
        require_scope(caller, "write")
        outcome = await self._backend.update_handoff(
            caller, memory_id, status, expected_version=request.expected_version or 0, note=request.note or ""
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return _saved(outcome.memory, outcome.seq, outcome.redactions)


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


# The lists of a handoff: its metadata keys, and the headings of its Markdown sections.
HANDOFF_LISTS = {"active_files": "Active files", "decisions_made": "Decisions made", "next_steps": "Next steps"}


def handoff_content(request: HandoffRequest) -> str:
    """The handoff as a reader sees it: its context, then a Markdown section per list given."""
    parts = [request.context.strip()]
    for name, heading in HANDOFF_LISTS.items():
        items = getattr(request, name)
        if items:
            parts.append(f"## {heading}\n" + "\n".join(f"- {item.strip()}" for item in items))
    return "\n\n".join(parts)


def handoff_summary(request: HandoffRequest) -> str:
    """ "Handoff to <target>: <first line of the context>", within the summary limit."""
    first = next((line.strip() for line in request.context.splitlines() if line.strip()), "")
    text = f"Handoff to {request.target_agent}: {first}"
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def _similar_message(similar: list[SimilarMemoryOut]) -> str:
    owners = ", ".join(sorted({m.owner_agent for m in similar}))
    count = f"{len(similar)} finding{'s' if len(similar) != 1 else ''}"
    return (
        f"Your finding is saved, but {owners} already recorded {count} saying nearly the same. Read them "
        "(get_memory) before going on: if one says what yours says, supersede_memory your finding with one that "
        "adds what is new and cites theirs; if they disagree, reconcile — find out which holds and save that "
        "as a decision or finding (read all, write own: only their owners change theirs)."
    )


def preview(text: str) -> str:
    """The start of a text on one line, for lists and warnings."""
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _listed(outcome: Page) -> ListResult:
    return ListResult(
        memories=[MemoryOut.of(m) for m in outcome.memories],
        next_page_token=outcome.next_page_token or None,
    )


def _saved(memory: Memory, seq: int, redactions: Sequence[Any]) -> SaveResult:
    return SaveResult(
        id=memory.id,
        version=memory.version,
        seq=seq,
        memory=MemoryOut.of(memory),
        redactions=[RedactionOut(**r) for r in redactions_json(list(redactions))],
    )


def _draft(request: BaseModel) -> MemoryInput:
    """The MemoryInput of a save, update or supersede body: the fields it gives, the others empty."""
    given = request.model_dump(exclude_none=True)
    values = {name: value for name, value in given.items() if name in _INPUT_FIELDS}
    values.update(
        content=given.get("content", ""),
        metadata_json=encode_metadata(given.get("metadata")),
        valid_at=_time("valid_at", given.get("valid_at")),
        invalid_at=_time("invalid_at", given.get("invalid_at")),
        expires_at=expiry_time(given.get("expires_at"), now=time.time()),
    )
    return MemoryInput(**values)


def _check_replacement(request: SupersedeRequest) -> None:
    """Exactly one replacement: content for a new memory, or new_id of an existing one (SUPERSEDE_RULE)."""
    if request.new_id is None:
        if request.content is None:
            raise InvalidArgument(
                "content", "give content for a new memory that replaces the old one, or new_id of an existing one."
            )
        return
    if request.content is not None:
        raise InvalidArgument("new_id", "give either content (a new memory) or new_id (an existing one), not both.")
    extra = sorted(name for name, value in request if value is not None and name not in ("new_id", "expected_version"))
    if extra:
        raise InvalidArgument(
            extra[0], "only goes with content; with new_id the replacing memory exists already (update it instead)."
        )


def _filter(filters: Filters, *, as_of: float | None = None) -> SearchFilter:
    types, statuses = filters.memory_type, filters.status
    wanted = [statuses] if isinstance(statuses, str) else list(statuses or [])
    if filters.include_archived and "archived" not in wanted:
        wanted = [*(wanted or ["active"]), "archived"]  # no status given means active
    return SearchFilter(
        tags=list(filters.tags or []),
        topics=list(filters.topics or []),
        owner_agent=filters.owner_agent or "",
        memory_types=[types] if isinstance(types, str) else list(types or []),
        project=filters.project or "",
        conversation_id=filters.conversation_id or "",
        created_after=_bound("created_after", filters.created_after),
        created_before=_bound("created_before", filters.created_before),
        statuses=wanted,
        team=filters.team or "",
        as_of=as_of,
        pack=filters.pack or "",
    )


def expiry_time(value: str | None, *, now: float) -> float | None:
    """An ``expires_at`` as epoch seconds: an RFC 3339 time, or a duration from ``now`` (30d, 12h, 45m, 90s, 2w).

    None or "" is no expiry. Raises InvalidArgument naming ``expires_at`` for anything else."""
    if value and _DURATION.fullmatch(value):
        return check_time("expires_at", now + int(value[:-1]) * DURATION_UNITS[value[-1]], value)
    try:
        moment = parse_time(value)
    except ValueError as e:
        raise InvalidArgument(
            "expires_at",
            f"{value!r} is neither an RFC 3339 time nor a duration; use e.g. 2026-01-31T12:00:00Z, or 30d "
            "(a number and s, m, h, d or w: seconds, minutes, hours, days, weeks from now).",
        ) from e
    return check_time("expires_at", moment, value)


def _reason(error: ValidationError | InvalidArgument) -> str:
    """One line saying what is wrong with an import line."""
    if isinstance(error, InvalidArgument):
        return str(error)
    return describe_validation(error.errors()[:3], where="line")


def describe_validation(errors: Sequence[Any], *, where: str = "request") -> str:
    """Pydantic errors as "field: what to fix; ..." (REST, MCP and import alike), without pydantic's URLs."""
    parts = []
    for item in errors:
        loc = tuple(item.get("loc", ()))
        if loc[:1] == ("body",) and len(loc) > 1:  # a REST body's fields are named as in MCP and import
            loc = loc[1:]
        location = ".".join(str(part) for part in loc) or where
        parts.append(f"{location}: {_fix(item)}")
    return "; ".join(parts) or f"The {where} is invalid."


def _fix(item: Any) -> str:
    kind = item.get("type", "")
    if kind == "extra_forbidden":
        return "is not a known field; check its spelling against the schema, or leave it out."
    if kind == "missing":
        return "is required."
    if kind == "string_pattern_mismatch" and (item.get("ctx") or {}).get("pattern") == f"^{AGENT_PATTERN}$":
        return f"{str(item.get('input'))[:40]!r} is not an agent id: {AGENT_RULE}"
    return str(item.get("msg", "is invalid")).rstrip(".") + "."


def _bound(field: str, value: str | None) -> float | None:
    """A filter's time bound: absent, or an RFC 3339 time (an empty one is a mistake, not "no bound")."""
    if value is not None and not value.strip():
        raise InvalidArgument(field, "is empty; give an RFC 3339 time, e.g. 2026-01-31T12:00:00Z, or leave it out.")
    return _time(field, value)


def _time(field: str, value: str | None) -> float | None:
    try:
        moment = parse_time(value)
    except ValueError as e:
        raise InvalidArgument(field, f"{value!r} is not an RFC 3339 time; use e.g. 2026-01-31T12:00:00Z.") from e
    return check_time(field, moment, value)
