"""The gateway's memory operations, shared by REST and MCP: requests in, calls to the services, results out."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from engram.config import DEFAULT_SEARCH_LIMIT, Settings
from engram.errors import EngramError, ImportStopped, InvalidArgument, RemoteError
from engram.index import DENSE
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
    UPDATE_FIELDS,
    AgentOut,
    AgentsResult,
    ConsolidateResult,
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
from engram.services.ingest.validation import MAX_SUMMARY_CHARS

log = logging.getLogger(__name__)

# Seconds per unit of an expiry duration (30d, 12h, ...).
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(DURATION_PATTERN)
_INPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryInput))
# A request field whose MemoryInput name differs (update masks name MemoryInput fields).
_INPUT_NAME = {"metadata": "metadata_json"}
# The times the wire (a protobuf Timestamp) carries: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. RFC 3339 also
# writes a few hours beyond either end (year 0000, or an offset across the first or last day); such a time is
# taken as the nearest end, so every published date-time is accepted.
EARLIEST_TIME = -62135596800.0
LATEST_TIME = 253402300799.0

# The similar-finding check after a finding is saved: a dense-only search for its content, whose "dense" stage
# score is the cosine similarity. The caller's own findings may take some of the top places, so more candidates
# than warnings are fetched; a finding beyond them is not "very similar".
SIMILAR_CANDIDATES = 20
SIMILAR_QUERY_CHARS = 4000  # the search's query limit (the embedder reads far less of it anyway)
SIMILAR_CHECK_SECONDS = 5.0  # the save is done; its answer waits at most this long for the check
PREVIEW_CHARS = 200
NO_TEAM = "name a team, or join one: X-Engram-Team header / ENGRAM_TEAM."

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

    def get(self, namespace: str) -> int:
        """The highest acknowledged sequence of ``namespace`` (0 if none)."""
        return self._seqs.get(namespace, 0)

    def min_seq(self, namespace: str, requested: int | None = None) -> int:
        """What a read waits for: the caller's ``min_seq`` or this gateway's cursor, whichever is later."""
        return max(self.get(namespace), requested or 0)


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
        job = await self._backend.run_job(caller, "team_summary", {"team": name})
        if job.state == "failed":
            # The job's error says what to do (e.g. an empty team: save memories in it first); keep its kind.
            raise RemoteError(str(job.result.get("code") or "internal"), f"{job.summary} (job {job.id})")
        return ConsolidateResult(team=name, job=JobOut.of(job), summary=await self._job_memory(caller, job))

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
    )


def expiry_time(value: str | None, *, now: float) -> float | None:
    """An ``expires_at`` as epoch seconds: an RFC 3339 time, or a duration from ``now`` (30d, 12h, 45m, 90s, 2w).

    None or "" is no expiry. Raises InvalidArgument naming ``expires_at`` for anything else."""
    if value and _DURATION.fullmatch(value):
        return _on_the_wire(now + int(value[:-1]) * DURATION_UNITS[value[-1]])
    try:
        return _on_the_wire(parse_time(value))
    except ValueError as e:
        raise InvalidArgument(
            "expires_at",
            f"{value!r} is neither an RFC 3339 time nor a duration; use e.g. 2026-01-31T12:00:00Z, or 30d "
            "(a number and s, m, h, d or w: seconds, minutes, hours, days, weeks from now).",
        ) from e


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
        return _on_the_wire(parse_time(value))
    except ValueError as e:
        raise InvalidArgument(field, f"{value!r} is not an RFC 3339 time; use e.g. 2026-01-31T12:00:00Z.") from e


def _on_the_wire(moment: float | None) -> float | None:
    return None if moment is None else min(max(moment, EARLIEST_TIME), LATEST_TIME)
