"""The gateway's memory operations, shared by REST and MCP: requests in, calls to the services, results out."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import ValidationError

from engram.errors import EngramError, ImportStopped, InvalidArgument
from engram.model import (
    Caller,
    MemoryInput,
    SearchFilter,
    parse_time,
)
from engram.names import AGENT_PATTERN, AGENT_RULE
from engram.results import ImportItem
from engram.services.gateway.backend import Backend, redactions_json
from engram.services.gateway.backend import metadata_json as encode_metadata
from engram.services.gateway.identity import require_scope
from engram.services.gateway.schemas import (
    Filters,
    HitOut,
    ImportedOut,
    ImportLineIn,
    ImportRejectionOut,
    ImportResult,
    ListRequest,
    ListResult,
    MemoryOut,
    RedactionOut,
    SaveRequest,
    SaveResult,
    SearchRequest,
    SearchResult,
    StageRank,
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

    def get(self, namespace: str) -> int:
        """The highest acknowledged sequence of ``namespace`` (0 if none)."""
        return self._seqs.get(namespace, 0)

    def min_seq(self, namespace: str, requested: int | None = None) -> int:
        """What a read waits for: the caller's ``min_seq`` or this gateway's cursor, whichever is later."""
        return max(self.get(namespace), requested or 0)


class Operations:
    """Save, search, get and list for an already resolved caller; shared by the MCP tools and REST."""

    def __init__(self, backend: Backend, cursors: CursorTracker) -> None:
        self._backend = backend
        self._cursors = cursors

    async def save(self, caller: Caller, request: SaveRequest) -> SaveResult:
        require_scope(caller, "write")
        outcome = await self._backend.save(caller, _draft(request))
        self._cursors.observe(caller.namespace, outcome.seq)
        return SaveResult(
            id=outcome.memory.id,
            version=outcome.memory.version,
            seq=outcome.seq,
            memory=MemoryOut.of(outcome.memory),
            redactions=[RedactionOut(**r) for r in redactions_json(outcome.redactions)],
        )

    async def search(self, caller: Caller, request: SearchRequest) -> SearchResult:
        require_scope(caller, "read")
        outcome = await self._backend.search(
            caller,
            request.query,
            limit=request.limit,
            flt=_filter(request.filters),
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
        memory = await self._backend.get(caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace, min_seq))
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
        return ListResult(
            memories=[MemoryOut.of(m) for m in outcome.memories],
            next_page_token=outcome.next_page_token or None,
        )


def _draft(request: SaveRequest) -> MemoryInput:
    return MemoryInput(
        content=request.content,
        summary=request.summary or "",
        memory_type=request.memory_type or "",
        confidence=request.confidence or "",
        topics=list(request.topics or []),
        tags=list(request.tags or []),
        importance=request.importance or "",
        team=request.team or "",
        project=request.project or "",
        conversation_id=request.conversation_id or "",
        metadata_json=encode_metadata(request.metadata),
        sensitivity=request.sensitivity or "",
        valid_at=_time("valid_at", request.valid_at),
        invalid_at=_time("invalid_at", request.invalid_at),
        expires_at=_time("expires_at", request.expires_at),
        handoff_target=request.handoff_target or "",
        context=request.context or "",
    )


def _filter(filters: Filters) -> SearchFilter:
    types = filters.memory_type
    return SearchFilter(
        tags=list(filters.tags or []),
        topics=list(filters.topics or []),
        owner_agent=filters.owner_agent or "",
        memory_types=[types] if isinstance(types, str) else list(types or []),
        project=filters.project or "",
        conversation_id=filters.conversation_id or "",
        created_after=_time("created_after", filters.created_after),
        created_before=_time("created_before", filters.created_before),
    )


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


def _time(field: str, value: str | None) -> float | None:
    try:
        return parse_time(value)
    except ValueError as e:
        raise InvalidArgument(field, f"{value!r} is not an RFC 3339 time; use e.g. 2026-01-31T12:00:00Z.") from e
