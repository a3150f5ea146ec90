"""The memory operations: save, update, delete, supersede (and undo it), get, list, search, history, a memory at a
time and the namespace's stats; and how their requests become the services' calls."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from engram.config import Settings
from engram.errors import EngramError, InvalidArgument
from engram.model import (
    JSON_SUFFIX,
    TIME_FIELDS,
    Caller,
    ListQuery,
    Memory,
    MemoryInput,
    SearchFilter,
    SearchQuery,
    format_time,
    parse_time,
    stored_name,
)
from engram.ownership import UNOWNED
from engram.results import Page
from engram.services.gateway.backend import Backend, redactions_json
from engram.services.gateway.backend import metadata_json as encode_metadata
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.schemas.arguments import DURATION_PATTERN
from engram.services.gateway.schemas.requests import (
    UPDATE_FIELDS,
    Filters,
    ListRequest,
    SaveRequest,
    SearchRequest,
    SupersedeRequest,
    UnsupersedeRequest,
    UpdateRequest,
)
from engram.services.gateway.schemas.results import (
    DeleteResult,
    HistoryResult,
    HitOut,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    MemoryVersionOut,
    RedactionOut,
    SaveResult,
    SearchResult,
    SimilarMemoryOut,
    StageRank,
    SupersededByOtherOut,
    SupersedeResult,
    UnsupersedeResult,
    WarningOut,
)
from engram.validation import check_storable, check_time

log = logging.getLogger(__name__)

# Seconds per unit of an expiry duration (30d, 12h, ...).
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(DURATION_PATTERN)
_INPUT_FIELDS = tuple(f.name for f in dataclasses.fields(MemoryInput))
# A request field whose MemoryInput name differs (update masks name MemoryInput fields): metadata is metadata_json.
_INPUT_NAME = {stored_name(name): name for name in _INPUT_FIELDS if stored_name(name) != name}

# The options a search or a listing request passes on as they are: the fields of the kernel's query named as the
# request's (not the filter, built from the request's filters, nor min_seq, which the cursors raise).
_BUILT = frozenset({"flt", "min_seq"})
SEARCH_OPTIONS = tuple(f.name for f in dataclasses.fields(SearchQuery) if f.name not in _BUILT)
LIST_OPTIONS = tuple(f.name for f in dataclasses.fields(ListQuery) if f.name not in _BUILT)

# The similar-finding check after a finding is saved: a dense-only search for its content, whose "dense" stage
# score is the cosine similarity. The caller's own findings may take some of the top places, so more candidates
# than warnings are fetched; a finding beyond them is not "very similar".
SIMILAR_CANDIDATES = 20
SIMILAR_QUERY_CHARS = 4000  # the search's query limit (the embedder reads far less of it anyway)
SIMILAR_CHECK_SECONDS = 5.0  # the save is done; its answer waits at most this long for the check
PREVIEW_CHARS = 200
SUPERSEDED_DAYS = 7  # how long an owner's list and session context say another agent superseded its memory
SUPERSEDED_SCAN = 50  # the owner's most recently changed superseded memories read to find those
MAX_SUPERSEDED_NOTES = 5


class MemoryOperations:
    """The memory operations for an already resolved caller; the other groups of operations build on them."""

    def __init__(self, backend: Backend, cursors: CursorTracker, settings: Settings | None = None) -> None:
        """``settings`` None: the defaults (e.g. of ENGRAM_SIMILAR_FINDING_THRESHOLD)."""
        self._backend = backend
        self._cursors = cursors
        self._similar_threshold = (settings or Settings()).similar_finding_threshold

    async def save(self, caller: Caller, request: SaveRequest) -> SaveResult:
        """Saves a memory; a finding also answers with the very similar findings of other agents, if any. A save
        that repeats an active memory of the caller answers with that memory (duplicate_of)."""
        require_scope(caller, "write")
        outcome = await self._backend.save(caller, memory_input(request))
        self._cursors.observe(caller.namespace, outcome.seq)
        result = save_result(outcome.memory, outcome.seq, outcome.redactions)
        if outcome.duplicate_of:  # nothing new: the memory was checked for similar findings when it was saved
            result.duplicate_of = outcome.duplicate_of
        elif outcome.memory.memory_type == "finding":
            result.warnings = await self._similar_findings(caller, outcome.memory, outcome.seq)
        return result

    async def _similar_findings(self, caller: Caller, memory: Memory, seq: int) -> list[WarningOut]:
        """A warning naming other agents' active findings whose meaning is very close to ``memory``.

        It never fails the save it follows (the memory is stored already): a failing check is logged and the
        save answers without warnings."""
        from engram.index import DENSE  # the index port loads the embedder's modules: `engram mcp` imports this one

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
            caller, memory_id, memory_input(request), fields, expected_version=request.expected_version or 0
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return save_result(outcome.memory, outcome.seq, outcome.redactions)

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
        replacement = memory_input(request) if request.content is not None else None
        outcome = await self._backend.ingest.supersede(
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

    async def unsupersede(self, caller: Caller, memory_id: str, request: UnsupersedeRequest) -> UnsupersedeResult:
        """Undoes a supersession (the superseded memory's owner, or an admin): the memory is active again."""
        require_scope(caller, "write")
        outcome = await self._backend.ingest.unsupersede(
            caller, memory_id, expected_version=request.expected_version or 0
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        replacement = outcome.replacement
        return UnsupersedeResult(
            id=outcome.memory.id,
            version=outcome.memory.version,
            seq=outcome.seq,
            memory=MemoryOut.of(outcome.memory),
            replacement=MemoryOut.of(replacement) if replacement is not None else None,
        )

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int | None = None) -> HistoryResult:
        require_scope(caller, "read")
        outcome = await self._backend.search_client.history(
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
        memory = await self._backend.search_client.memory_at(
            caller, memory_id, moment, min_seq=self._cursors.min_seq(caller.namespace, min_seq)
        )
        return MemoryOut.of(memory)

    async def stats(self, caller: Caller) -> MemoryStatsOut:
        """Counts of the caller's namespace by agent, type, status and team."""
        require_scope(caller, "read")
        outcome = await self._backend.search_client.memory_stats(caller)
        return MemoryStatsOut(
            namespace=caller.namespace, memories=outcome.memories, total=outcome.total, by_agent=outcome.by_agent,
            by_type=outcome.by_type, by_status=outcome.by_status, by_team=outcome.by_team,
            applied_seq=outcome.applied_seq, log_last_seq=outcome.log_last_seq,
        )  # fmt: skip

    async def search(self, caller: Caller, request: SearchRequest) -> SearchResult:
        require_scope(caller, "read")
        min_seq = self._cursors.min_seq(caller.namespace, request.min_seq)
        outcome = await self._backend.search(caller, search_query(request, min_seq=min_seq))
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
            explain_note=outcome.explain_note if request.explain else None,
        )

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int | None = None) -> MemoryOut:
        require_scope(caller, "read")
        memory = await self._backend.search_client.get(
            caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace, min_seq), with_history=True
        )
        return MemoryOut.of(memory)

    async def list(self, caller: Caller, request: ListRequest) -> ListResult:
        require_scope(caller, "read")
        min_seq = self._cursors.min_seq(caller.namespace, request.min_seq)
        outcome = await self._backend.list(caller, list_query(request, min_seq=min_seq))
        result = list_result(outcome)
        if not request.page_token:  # the owner is told where it already looks: the first page of its list
            result.superseded_by_others = [
                superseded_note(m) for m in await superseded_by_others(self._backend, caller, min_seq=min_seq)
            ]
        return result


async def superseded_by_others(backend: Backend, caller: Caller, *, min_seq: int = 0) -> list[Memory]:
    """The caller's memories another agent superseded in the last SUPERSEDED_DAYS, most recent first (at most
    MAX_SUPERSEDED_NOTES): none for an unidentified caller, whose memories are nobody's."""
    if caller.agent_id in UNOWNED:
        return []
    flt = SearchFilter(owner_agent=caller.agent_id, statuses=["superseded"])
    page = await backend.list(caller, limit=SUPERSEDED_SCAN, flt=flt, min_seq=min_seq, order="updated")
    since = time.time() - SUPERSEDED_DAYS * 86400
    return [m for m in page.memories if m.updated_by not in ("", caller.agent_id) and (m.updated_at or 0) >= since][
        :MAX_SUPERSEDED_NOTES
    ]


def superseded_note(memory: Memory) -> SupersededByOtherOut:
    return SupersededByOtherOut(
        id=memory.id, title=preview(memory.summary or memory.content), superseded_by=memory.superseded_by,
        by=memory.updated_by, at=format_time(memory.updated_at),
    )  # fmt: skip


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


def list_result(outcome: Page) -> ListResult:
    return ListResult(
        memories=[MemoryOut.of(m) for m in outcome.memories],
        next_page_token=outcome.next_page_token or None,
    )


def save_result(memory: Memory, seq: int, redactions: Sequence[Any]) -> SaveResult:
    return SaveResult(
        id=memory.id,
        version=memory.version,
        seq=seq,
        memory=MemoryOut.of(memory),
        redactions=[RedactionOut(**r) for r in redactions_json(list(redactions))],
    )


def memory_input(request: BaseModel) -> MemoryInput:
    """The MemoryInput of a save, update or supersede body: the fields it gives, the others empty. Each is the
    request field of the same name (metadata for metadata_json, as JSON text); times are read from RFC 3339 (an
    expiry also from a duration)."""
    given = request.model_dump(exclude_none=True)
    values: dict[str, Any] = {}
    for name in _INPUT_FIELDS:
        value = given.get(stored_name(name))
        if value is None:
            continue
        # Before the value is encoded: a NaN would travel as JSON text, a lone surrogate breaks the wire.
        check_storable(stored_name(name), value)
        if name.endswith(JSON_SUFFIX):
            value = encode_metadata(value)
        elif name == "expires_at":
            if not value.strip():  # as for every time the schema publishes: empty is a mistake, not "no expiry"
                raise InvalidArgument(
                    name, "is empty; give an RFC 3339 time or a duration such as 30d, or leave it out."
                )
            value = expiry_time(value, now=time.time())
        elif name in TIME_FIELDS:
            value = _time(name, value)
        values[name] = value
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


def search_query(request: SearchRequest, *, min_seq: int) -> SearchQuery:
    """The search a request asks for: each of its options given as the SearchQuery field of the same name, its
    filters (with as_of, a time) as the filter, and ``min_seq`` (the cursor's: operations/cursors.py)."""
    flt = _filter(request.filters, as_of=_time("as_of", request.as_of))
    return SearchQuery(**_given(request, SEARCH_OPTIONS), flt=flt, min_seq=min_seq)


def list_query(request: ListRequest, *, min_seq: int) -> ListQuery:
    """The page a listing request asks for, as search_query does for a search."""
    return ListQuery(**_given(request, LIST_OPTIONS), flt=_filter(request.filters), min_seq=min_seq)


def _given(request: BaseModel, names: Sequence[str]) -> dict[str, Any]:
    return {name: value for name in names if (value := getattr(request, name)) is not None}


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
