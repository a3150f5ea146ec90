"""Saves memories: validate, scrub secrets, embed (dense + sparse), append to the log, answer with its sequence."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from engram.embed import Embedder
from engram.embed.given import given_dense
from engram.embed.sparse import Bm25Encoder
from engram.errors import DiskFull, EngramError, InvalidArgument, PermissionDenied, Unavailable
from engram.ids import is_uuid, uuid7
from engram.log import Appended, Log, Overtaken, Stale
from engram.log.events import HANDOFF_CREATED, MEMORY_ENRICHED, MEMORY_SAVED, encode_dense, event_body, memory_vectors
from engram.model import (
    SENSITIVITIES,
    STORED_INPUTS,
    Caller,
    Handoff,
    Memory,
    MemoryInput,
    Origin,
    format_time,
    stored_name,
)
from engram.ownership import require_may_write_type
from engram.process import metrics
from engram.results import ImportItem, ImportSummary, SaveResult
from engram.sameness import key_of
from engram.scrub import Redaction, merge, scrub_text, scrub_value
from engram.services.ingest.conversations import Conversations
from engram.services.ingest.duplicates import MAX_UNAPPLIED, Duplicates, memory_of, repeated_by
from engram.validation import HANDOFF, Limits, capped_context, check_handoff, validate, with_team_tag

__all__ = ["MemoryWriter"]

DEFAULT_IMPORT_BATCH = 128  # larger batches sort into tighter padding buckets
DEFAULT_HANDOFF_TTL_SECONDS = 86400.0
MAX_QUESTIONS = 8
MAX_QUESTION_CHARS = 300


class _Stop(Exception):
    """Ends an import early; the summary already says why."""


# The log or the disk refusing a write refuses every later one too: the import stops there (and says where to
# resume) rather than rejecting each remaining line with the same reason.
STOPS_AN_IMPORT = (Unavailable, DiskFull)


def counted(event: str, appended: Appended) -> Appended:
    """Counts a new log entry (engram_log_appends_total); a retried write the log already had is not one."""
    if not appended.duplicate:
        metrics.LOG_APPENDS.labels(event).inc()
    return appended


@dataclasses.dataclass(slots=True)
class _Line:
    """An import item on its way: its memory, and the active memory it repeats when the index has one."""

    item: ImportItem
    memory: Memory
    key: str  # engram.sameness.key_of(memory); "" when it is not checked
    existing: Memory | None = None
    given: np.ndarray | None = None  # the checked dense vector the item brought (engram.embed.given)


class SpaceCheck(Protocol):
    def require_space(self) -> None:
        """Raises DiskFull when there is no room for another write."""
        ...


class MemoryWriter:
    """The write path of DESIGN.md. A save is acknowledged only after JetStream has stored it."""

    def __init__(
        self,
        log: Log,
        embedder: Embedder,
        sparse: Bm25Encoder,
        limits: Limits,
        *,
        device: str = "",
        disk: SpaceCheck | None = None,
        handoff_ttl: float = DEFAULT_HANDOFF_TTL_SECONDS,
        conversations: Conversations | None = None,
        duplicates: Duplicates | None = None,
    ) -> None:
        self._device = device  # where a memory was written when its caller does not say
        self._disk = disk
        self._log = log
        self._embedder = embedder
        self._sparse = sparse
        self.limits = limits
        self._handoff_ttl = handoff_ttl
        self.conversations = conversations  # None: contexts are not derived (ENGRAM_DERIVE_CONTEXT=false)
        self.duplicates = duplicates  # None: every save is stored, repeated or not

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveResult:
        """Saves a new memory (a handoff when it names a handoff_target); answers once the log has stored it.

        A save that repeats an active memory of the caller (engram.sameness) stores nothing and answers with that
        memory (duplicate_of); services/ingest/duplicates.py says how a racing repeat is caught."""
        memory, redactions = self.prepare(caller, draft)
        key = key_of(memory) if self.duplicates is not None else ""
        based_on: int | None = None  # the log position the duplicate check read at; None: no check
        waited = False  # whether the index had applied the log's end (as this process saw it) for the check
        # Not while the log is away: the append below refuses the save at once, which a lookup would only delay.
        if key and self.duplicates is not None and self._log.connected:
            looked = await self.duplicates.existing_now(caller, [key])
            end = self._log.seen_seq() or await self._log.last_seq()
            if looked is not None and key not in looked[0] and end - looked[1] <= MAX_UNAPPLIED:
                based_on = looked[1]  # the append reads the entries the index has not applied yet
            elif looked is not None:  # found (it may have changed since), or the index far behind: wait for it
                found, based_on, waited = await self._repeat_at(caller, key, end)
                if found is not None:
                    return SaveResult(found, found.seq, redactions, duplicate_of=found.id)
        await self._situate(caller, memory)
        (vectors,) = await asyncio.to_thread(self.vectors, [memory])
        while True:
            try:
                seq, _ = await self._append(
                    caller, memory, vectors, msg_id=f"{memory.id}:{memory.version}",
                    based_on=based_on or 0, stale=None if based_on is None else repeated_by(caller, key),
                )  # fmt: skip
                break
            except Overtaken as e:  # the same memory was saved (a racing repeat, or one the index had not applied)
                existing = memory_of(e.entry)
                if not waited:  # it may have been changed or deleted since: the index says, once it has applied it
                    found, based_on, waited = await self._repeat_at(caller, key, await self._log.last_seq())
                    if based_on is not None and found is None:
                        continue
                    existing = found or existing
                return SaveResult(existing, existing.seq, redactions, duplicate_of=existing.id)
        memory.seq = seq
        self._remember(memory)
        return SaveResult(memory, seq, redactions)

    async def _repeat_at(self, caller: Caller, key: str, end: int) -> tuple[Memory | None, int | None, bool]:
        """The caller's memory with content key ``key`` once the index has applied ``end`` (None: none), the position
        a conditional append is then based on (None: the index cannot say now; no check), and whether it waited."""
        assert self.duplicates is not None
        found = await self.duplicates.existing(caller, [key], min_seq=end)
        if found is None:
            return None, None, True
        return found.get(key), end, True

    async def import_stream(
        self, caller: Caller, items: AsyncIterator[ImportItem], *, batch: int = DEFAULT_IMPORT_BATCH
    ) -> ImportSummary:
        """Imports items in order: invalid ones are rejected with a reason, the rest embedded in batches.

        The next batch is embedded while the previous one is appended, so the log and the embedder overlap.
        Every memory of one import is created at the request's arrival time (like a transaction's timestamp):
        listings order them by id within that time, so they come out the same however fast the import ran.

        An item that repeats an active memory of the caller (engram.sameness), one the index had when the import
        began or an earlier item of this import, is not stored (nor embedded): it is already present, under that
        memory's id. So a finished import run again adds nothing, whether its lines have a source_id or not.
        """
        arrived = time.time()
        summary = ImportSummary()
        stored: dict[str, tuple[str, int]] = {}  # content key -> (id, seq) of the memory an earlier item is
        lookup_at = await self._lookup_position()
        pending: list[_Line] = []
        embedding: tuple[list[_Line], asyncio.Task[list[dict[str, Any]]]] | None = None

        async def flush(current: list[_Line]) -> None:
            nonlocal embedding, lookup_at
            if lookup_at is not None and not await self._find_existing(caller, current, lookup_at):
                lookup_at = None  # the index cannot say now: the rest of the import goes unchecked, without waiting
            fresh = [line for line in current if line.existing is None]
            memories, given = [line.memory for line in fresh], [line.given for line in fresh]
            task = asyncio.create_task(asyncio.to_thread(self.vectors, memories, given))  # awaited, or cancelled
            previous, embedding = embedding, (current, task)
            if previous is not None:
                await self._append_batch(caller, previous[0], await previous[1], summary, stored)

        try:
            async for item in items:
                summary.last_line = max(summary.last_line, item.line)
                try:
                    memory, redactions = self.prepare(caller, item.draft, now=arrived)
                    given = self._given(caller, item, redactions)
                except (InvalidArgument, PermissionDenied) as e:  # this line's values: the rest go on
                    summary.rejected.append((item.line, str(e)))
                    continue
                await self._situate(caller, memory)
                self._remember(memory)  # now: the next item of its conversation follows it (forgotten if not stored)
                summary.redactions.extend(redactions)
                pending.append(_Line(item, memory, key_of(memory) if lookup_at is not None else "", given=given))
                if len(pending) >= batch:
                    await flush(pending)
                    pending = []
            if pending:
                await flush(pending)
            if embedding is not None:
                current, embedding = embedding, None
                await self._append_batch(caller, current[0], await current[1], summary, stored)
        except _Stop:
            if embedding is not None:  # vectors of a batch that will not be stored
                embedding[1].cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await embedding[1]
                self._forget(line.memory for line in embedding[0])
            self._forget(line.memory for line in pending)
        summary.redactions = list(merge(summary.redactions))
        return summary

    async def enrich(self, caller: Caller, memory_id: str, questions: Sequence[str], *, model: str) -> int:
        """Appends reverse-HyDE questions (with their vectors) for a memory; returns the log sequence."""
        if not is_uuid(memory_id):
            raise InvalidArgument("id", "is not a memory id.")
        cleaned = [scrub_text(q.strip()).text for q in questions if q and q.strip()]
        if not cleaned or len(cleaned) > MAX_QUESTIONS:
            raise InvalidArgument("questions", f"give between 1 and {MAX_QUESTIONS} questions.")
        if any(len(q) > MAX_QUESTION_CHARS for q in cleaned):
            raise InvalidArgument("questions", f"each question must be at most {MAX_QUESTION_CHARS} characters.")
        dense = await asyncio.to_thread(self._embedder.embed, cleaned)
        if self._disk is not None:
            self._disk.require_space()
        body = {
            "schema": 1,
            "event": MEMORY_ENRICHED,
            "namespace": caller.namespace,
            "agent": caller.agent_id,
            "source": caller.source,
            "memory_id": memory_id,
            "time": format_time(time.time()),
            "questions": cleaned,
            "question_model": model,
            "vectors": {"model": self._embedder.model_id, "questions": [encode_dense(row) for row in dense]},
        }
        appended = await self._log.append(
            caller.namespace, MEMORY_ENRICHED, body, msg_id=f"{memory_id}:enriched:{_digest(cleaned)}"
        )
        return counted(MEMORY_ENRICHED, appended).seq

    async def _lookup_position(self) -> int | None:
        """Where an import's duplicate lookups read: the log's end as it begins (None: no lookups)."""
        if self.duplicates is None or self.duplicates.source is None or not self._log.connected:
            return None
        try:
            return await self._log.last_seq()
        except EngramError:  # the first append will say what is wrong with the log
            return None

    async def _find_existing(self, caller: Caller, lines: list[_Line], min_seq: int) -> bool:
        """Sets the existing memory of each line that repeats an active memory of the caller in the index; False
        when the index could not be asked."""
        assert self.duplicates is not None
        found = await self.duplicates.existing(caller, [line.key for line in lines], min_seq=min_seq)
        for line in lines:
            line.existing = (found or {}).get(line.key) if line.key else None
        return found is not None

    async def _append_batch(
        self,
        caller: Caller,
        batch: list[_Line],
        vectors: list[dict[str, Any]],
        summary: ImportSummary,
        stored: dict[str, tuple[str, int]],
    ) -> None:
        """Appends a batch's lines in order; ``vectors`` are those of its lines without an existing memory."""
        fresh = iter(vectors)
        for position, line in enumerate(batch):
            item, memory = line.item, line.memory
            vector = next(fresh) if line.existing is None else {}
            earlier = (line.existing.id, line.existing.seq) if line.existing else stored.get(line.key)
            if line.key and earlier is not None:
                self._renamed(memory.id, earlier[0])
                summary.present.append((item.line, *earlier))
                summary.last_seq = max(summary.last_seq, earlier[1])
                continue
            msg_id = import_msg_id(caller, item.source_id) if item.source_id else f"{memory.id}:1"
            try:
                seq, duplicate = await self._append(caller, memory, vector, msg_id=msg_id, resolve_duplicate=True)
            except STOPS_AN_IMPORT as e:
                summary.stop(item.line, e)
                self._forget(unstored.memory for unstored in batch[position:])
                raise _Stop from e
            except EngramError as e:
                summary.rejected.append((item.line, str(e)))
                self._forget([memory])
                continue
            (summary.present if duplicate else summary.imported).append((item.line, memory.id, seq))
            summary.last_seq = max(summary.last_seq, seq)
            if line.key:
                stored.setdefault(line.key, (memory.id, seq))

    async def append_new(self, caller: Caller, memory: Memory) -> int:
        """Embeds and appends a memory prepared by prepare() (memory_saved or handoff_created); returns its log
        sequence."""
        (vectors,) = await asyncio.to_thread(self.vectors, [memory])
        seq, _ = await self._append(caller, memory, vectors, msg_id=f"{memory.id}:{memory.version}")
        return seq

    async def append_entry(
        self,
        caller: Caller,
        event: str,
        body: dict[str, Any],
        *,
        msg_id: str,
        based_on: int = 0,
        stale: Stale | None = None,
    ) -> Appended:
        """Appends one event body (after the disk check), conditionally when ``stale`` is given."""
        if self._disk is not None:
            self._disk.require_space()
        appended = await self._log.append(caller.namespace, event, body, msg_id=msg_id, based_on=based_on, stale=stale)
        return counted(event, appended)

    def scrubbed_source(self, caller: Caller) -> str:
        return scrub_text(caller.source).text

    async def _append(
        self,
        caller: Caller,
        memory: Memory,
        vectors: dict[str, Any],
        *,
        msg_id: str,
        resolve_duplicate: bool = False,
        based_on: int = 0,
        stale: Stale | None = None,
    ) -> tuple[int, bool]:
        """Appends a memory (conditionally with ``stale``: Log.append); returns its log sequence and whether the log
        already had it (same msg_id)."""
        if self._disk is not None:
            self._disk.require_space()
        event = _created_event(memory)
        body = event_body(event, memory, caller, vectors=vectors)
        appended = await self._log.append(caller.namespace, event, body, msg_id=msg_id, based_on=based_on, stale=stale)
        counted(event, appended)
        if appended.duplicate and resolve_duplicate:
            # A retried import item: JetStream kept the first copy; answer with that memory's id, and only when it
            # is the caller's own (a key is the caller's: another agent's entry under it is never the answer).
            original = await self._log.read(appended.seq)
            if original is not None and not _owned_by(original.body, caller):
                return await self._append(caller, memory, vectors, msg_id=f"{memory.id}:1")
            if original is not None and (stored := original.body.get("memory_id", memory.id)) != memory.id:
                if self.conversations is not None:
                    self.conversations.renamed(memory.id, stored)
                memory.id = stored
        return appended.seq, appended.duplicate

    def prepare(
        self, caller: Caller, draft: MemoryInput, *, now: float | None = None
    ) -> tuple[Memory, tuple[Redaction, ...]]:
        """A new memory (version 1) from a caller's input, validated and scrubbed: in the caller's team when it
        names none (tagged team:<team>), written on the caller's device, a pending handoff when it names a
        handoff_target."""
        check_handoff(draft, caller)
        if not draft.team.strip() and caller.team:
            draft = dataclasses.replace(draft, team=caller.team)
        memory, redactions = self.build(caller, draft, now=now)
        memory.tags = with_team_tag(memory.tags, memory.team)
        if draft.handoff_target:
            assert memory.created_at is not None
            memory.memory_type = HANDOFF
            memory.handoff = Handoff(
                draft.handoff_target, "pending", memory.created_at, expires_at=memory.created_at + self._handoff_ttl
            )
        return memory, redactions

    def build(
        self, caller: Caller, draft: MemoryInput, *, now: float | None = None, previous_type: str = ""
    ) -> tuple[Memory, tuple[Redaction, ...]]:
        """A memory holding ``draft``'s values, validated and scrubbed, written now by the caller: the fields of a
        new memory, or of an existing one's next version (Lifecycle.update keeps only the fields it may change; its
        memory type so far is ``previous_type``).

        Every write of a caller's values passes here (save, import, update, supersede, merge, packs, hooks, vault), so
        here an internal memory type is refused unless the caller's path owns it (require_may_write_type)."""
        clean = validate(draft, self.limits)
        draft = clean.draft
        require_may_write_type(caller, draft.memory_type, previous=previous_type)
        found: list[Redaction] = []

        def text(value: str) -> str:
            result = scrub_text(value)
            found.extend(result.redactions)
            return result.text

        def labels(values: list[str]) -> list[str]:
            return list(dict.fromkeys(text(value) for value in values))

        def stored(value: Any) -> Any:
            if isinstance(value, str):
                return text(value)
            return labels(value) if isinstance(value, list) else value

        metadata, metadata_redactions = scrub_value(clean.metadata)
        found.extend(metadata_redactions)
        now = time.time() if now is None else now
        # Every input the memory holds is copied (engram.model.STORED_INPUTS); metadata_json as validation parsed
        # it. Every text is scrubbed, labels included: a token pasted into a tag or a project name is as much a
        # leak as one in the content (a value of a choice, e.g. the memory type, comes out as it went in).
        values = {stored_name(name): stored(getattr(draft, name)) for name in STORED_INPUTS if name != "metadata_json"}
        memory = Memory(
            id=uuid7(),
            namespace=caller.namespace,
            owner_agent=caller.agent_id,
            source=text(caller.source),
            updated_by=caller.agent_id,
            metadata=metadata if isinstance(metadata, dict) else {},
            created_at=now,
            updated_at=now,
            origin=Origin(device=caller.device or self._device),
            **values,
        )
        return memory, merge(found)

    def forget(self, memory_id: str) -> None:
        """A memory changed (or is gone): it is no longer a remembered turn of its conversation."""
        if self.conversations is not None:
            self.conversations.forget(memory_id)

    async def _situate(self, caller: Caller, memory: Memory) -> None:
        """Derives the context of a new memory of a conversation that came without one: the content of the
        conversation's previous memory (engram.services.ingest.conversations), capped like a given context.

        Not when that memory is more sensitive than this one: its text would leave with this memory (a secret
        never leaves its device). A lookup that fails leaves the memory without context; the save goes on.
        """
        if self.conversations is None or not memory.conversation_id or memory.context.strip():
            return
        previous = await self.conversations.previous(caller, memory)
        if previous is None or _rank(previous.sensitivity) > _rank(memory.sensitivity):
            return
        memory.context = capped_context(previous.content, self.limits)

    def _remember(self, memory: Memory) -> None:
        if self.conversations is not None:
            self.conversations.remember(memory)

    def _renamed(self, memory_id: str, existing_id: str) -> None:
        """An item's memory turned out to be ``existing_id``, stored before."""
        if self.conversations is not None:
            self.conversations.renamed(memory_id, existing_id)

    def _forget(self, memories: Iterable[Memory]) -> None:
        for memory in memories:
            self.forget(memory.id)

    def vectors(self, memories: list[Memory], given: Sequence[np.ndarray | None] = ()) -> list[dict[str, Any]]:
        return memory_vectors(self._embedder, self._sparse, memories, given)

    def _given(self, caller: Caller, item: ImportItem, redactions: tuple[Redaction, ...]) -> np.ndarray | None:
        """The dense vector an import item brought, checked; None when it brought none, or when a secret was taken
        out of its text here (the vector is of the text as sent: the stored text is embedded instead)."""
        if not item.dense and not item.dense_model:
            return None
        dense = given_dense(
            caller, item.dense, item.dense_model, expected_model=self._embedder.model_id, dim=self._embedder.dim
        )
        return None if redactions else dense


def _created_event(memory: Memory) -> str:
    """The event that creates ``memory`` (its version 1): handoff_created for a handoff, else memory_saved."""
    return HANDOFF_CREATED if memory.handoff is not None else MEMORY_SAVED


def _rank(sensitivity: str) -> int:
    return SENSITIVITIES.index(sensitivity) if sensitivity in SENSITIVITIES else len(SENSITIVITIES)


def import_msg_id(caller: Caller, source_id: str) -> str:
    """The log's duplicate key of an import line with a source_id: the key belongs to the calling agent, so one
    agent's key never answers for (or squats) another's. The digest keeps an agent name with a ':' unambiguous."""
    scoped = hashlib.sha256(f"{caller.agent_id}\0{source_id}".encode()).hexdigest()[:32]
    return f"import:{caller.namespace}:{scoped}"


def _owned_by(body: dict[str, Any], caller: Caller) -> bool:
    """Whether a log entry's memory is the caller's (its owner is the calling agent)."""
    memory = body.get("memory")
    owner = memory.get("owner_agent") if isinstance(memory, dict) else body.get("agent")
    return owner == caller.agent_id


def _digest(texts: list[str]) -> str:
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
