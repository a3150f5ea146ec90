"""Changes to existing memories: update, delete (archive), purge, supersede, expire.

Each change is a new version appended to the log, never an overwrite. The write is based on the memory's
current state as the search index has it at a known log position; the append is conditional on no newer
version of the same memory having been appended since (engram.log's ``stale`` check, atomic with the append),
so two writers racing on one memory are serialised: the second sees the first's version and re-applies its
change on top of it, or, with an ``expected_version``, is refused with a VersionConflict.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Protocol

from engram.errors import InvalidArgument, NotFound, Unavailable, VersionConflict
from engram.events import (
    MEMORY_DELETED,
    MEMORY_EXPIRED,
    MEMORY_PURGED,
    MEMORY_SUPERSEDED,
    MEMORY_UPDATED,
    SCHEMA_VERSION,
    event_body,
)
from engram.ids import memory_id as parse_memory_id
from engram.log import Log, LogEntry, Overtaken
from engram.model import Caller, Memory, MemoryInput, Relation, format_time
from engram.ownership import require_admin, require_owner
from engram.results import DeleteResult, ExpireResult, History, SaveResult, SupersedeResult
from engram.scrub import Redaction
from engram.services.ingest.writer import MemoryWriter

MAX_ATTEMPTS = 50  # re-applications of one change after other writers got there first
MAX_CHAIN = 100  # supersession hops followed to find the head of a chain
# What update_memory may change (handoffs change through their own RPC; ids, owners and times never).
UPDATABLE = (
    "content", "summary", "memory_type", "confidence", "topics", "tags", "importance", "team", "project",
    "conversation_id", "metadata_json", "sensitivity", "valid_at", "invalid_at", "expires_at", "context",
)  # fmt: skip
_ALIASES = {"metadata": "metadata_json"}


class CurrentState(Protocol):
    """Where ingest reads the current version of a memory: the search service (engram.clients.SearchClient)."""

    async def get(
        self, caller: Caller, memory_id: str, *, min_seq: int = 0, with_history: bool = False, for_update: bool = False
    ) -> Memory: ...

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> History: ...


class _Moved(Exception):
    """The memory to supersede was superseded meanwhile: supersede the head of its chain instead."""

    def __init__(self, head_id: str) -> None:
        self.head_id = head_id


# A change: the next version of a memory (and what was redacted from it), or None when there is nothing to do.
Change = Callable[[Memory], tuple[Memory, tuple[Redaction, ...]] | None]


class Lifecycle:
    """The changes of an existing memory, on top of the writer's validation, scrubbing, embedding and log."""

    def __init__(
        self,
        writer: MemoryWriter,
        event_log: Log,
        state: CurrentState | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._writer = writer
        self._log = event_log
        self.state = state  # set by the composition root once the search service's address is known
        self._clock = clock

    @property
    def _state(self) -> CurrentState:
        if self.state is None:
            raise Unavailable(
                "Ingest cannot change memories: it has no search service to read them from (set ENGRAM_SEARCH_ADDR)."
            )
        return self.state

    async def update(
        self, caller: Caller, memory_id: str, draft: MemoryInput, fields: list[str], *, expected_version: int = 0
    ) -> SaveResult:
        mask = _mask(fields)

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            if current.status == "superseded":
                raise InvalidArgument(
                    "id", f"memory '{current.id}' was superseded by '{current.superseded_by}'; update that one instead."
                )
            merged = _input_of(current)
            for name in mask:
                setattr(merged, name, getattr(draft, name))
            prepared, redactions = self._writer.prepare(caller, merged)
            values = {name: getattr(prepared, name) for name in _MEMORY_FIELDS}
            if all(getattr(current, name) == value for name, value in values.items()):
                return None  # nothing would change: no new version
            return self._next(current, caller, **values), redactions

        memory, seq, redactions = await self._mutate(caller, memory_id, MEMORY_UPDATED, change, expected_version)
        return SaveResult(memory, seq, redactions)

    async def delete(self, caller: Caller, memory_id: str, *, expected_version: int = 0) -> DeleteResult:
        """Archives a memory: hidden from search and list unless asked for, still in get and history."""

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            if current.status == "archived":
                return None
            return self._next(current, caller, status="archived"), ()

        memory, seq, _ = await self._mutate(caller, memory_id, MEMORY_DELETED, change, expected_version)
        return DeleteResult(memory.id, seq, memory)

    async def purge(self, caller: Caller, memory_id: str) -> DeleteResult:
        """Removes a memory for good (admin): every log entry about it is erased, then a purge is recorded."""
        require_admin(caller, "purge memories")
        memory_id = parse_memory_id(memory_id)
        based_on = await self._log.last_seq()
        history = await self._state.history(caller, memory_id, min_seq=based_on)
        erased = await self._log.erase(history.seqs)
        body = {
            "schema": SCHEMA_VERSION, "event": MEMORY_PURGED, "namespace": caller.namespace, "agent": caller.agent_id,
            "source": caller.source, "memory_id": memory_id, "time": format_time(self._clock()), "erased": erased,
        }  # fmt: skip
        for _ in range(MAX_ATTEMPTS):
            try:
                appended = await self._log.append(
                    caller.namespace, MEMORY_PURGED, body, msg_id=f"{memory_id}:purged",
                    based_on=based_on, stale=_about(memory_id),
                )  # fmt: skip
            except Overtaken as e:  # a version written meanwhile: erase it too
                erased += await self._log.erase([e.entry.seq])
                based_on = e.entry.seq
                body["erased"] = erased
                continue
            return DeleteResult(memory_id, appended.seq, None, erased)
        raise Unavailable("The memory kept changing while it was purged; run the purge again.")

    async def supersede(
        self,
        caller: Caller,
        memory_id: str,
        *,
        replacement: MemoryInput | None,
        new_id: str = "",
        expected_version: int = 0,
    ) -> SupersedeResult:
        """Marks the head of ``memory_id``'s chain superseded by a new memory (saved here) or by ``new_id``."""
        if (replacement is None or not replacement.content.strip()) == (not new_id):
            raise InvalidArgument(
                "replacement", "give either the content of the new memory or new_id of an existing one (not both)."
            )
        memory_id = parse_memory_id(memory_id)
        head = await self._head(caller, memory_id)
        # expected_version is about the memory named; once the chain has moved past it, there is nothing to compare.
        if expected_version and head.id == memory_id and head.version != expected_version:
            raise VersionConflict(expected_version, head.version)
        require_owner(head, caller)  # before anything is written: a refused supersession leaves nothing behind
        redactions: tuple[Redaction, ...] = ()
        if new_id:
            new = await self._state.get(caller, parse_memory_id(new_id, field="new_id"), for_update=True)
            if new.id == head.id:
                raise InvalidArgument("new_id", "a memory cannot supersede itself.")
            if new.status == "superseded":  # also what would close a cycle of supersessions
                raise InvalidArgument(
                    "new_id", f"'{new.id}' was itself superseded by '{new.superseded_by}'; name that one instead."
                )
        else:
            assert replacement is not None
            new, redactions = self._writer.prepare(caller, replacement)
            new.relations = [Relation("supersedes", head.id)]
            new.valid_at = new.valid_at if new.valid_at is not None else new.created_at
            saved = await self._writer.append_new(caller, new)
            new.seq = saved
        now = self._clock()

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]]:
            if current.status == "superseded" and current.superseded_by:
                raise _Moved(current.superseded_by)
            invalid_at = current.invalid_at if current.invalid_at is not None else now
            step = self._next(current, caller, status="superseded", superseded_by=new.id, invalid_at=invalid_at)
            return step, ()

        for _ in range(MAX_CHAIN):
            try:
                old, seq, _ = await self._mutate(caller, head.id, MEMORY_SUPERSEDED, change, 0)
            except _Moved as moved:
                if moved.head_id == new.id:
                    old = await self._state.get(caller, head.id, for_update=True)
                    return SupersedeResult(old, new, old.seq, redactions)
                head = await self._head(caller, moved.head_id)
                continue
            return SupersedeResult(old, new, seq, redactions)
        raise InvalidArgument("id", f"the supersession chain of '{memory_id}' is longer than {MAX_CHAIN} memories.")

    async def expire(self, caller: Caller, memory_id: str, *, expected_version: int, at: float) -> ExpireResult:
        """Marks a memory expired if it is active and its expires_at is at or before ``at`` (admin: the job)."""
        require_admin(caller, "expire memories")

        expired = False

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            nonlocal expired
            expired = current.status == "active" and current.expires_at is not None and current.expires_at <= at
            if not expired:
                return None
            invalid_at = current.invalid_at if current.invalid_at is not None else current.expires_at
            return self._next(current, caller, status="expired", invalid_at=invalid_at), ()

        memory, seq, _ = await self._mutate(caller, memory_id, MEMORY_EXPIRED, change, expected_version)
        return ExpireResult(memory, seq, expired)

    # -- the mechanics ------------------------------------------------------------------------------

    def _next(self, current: Memory, caller: Caller, **changes: object) -> Memory:
        """The next version of ``current``: its changes, written now by the caller."""
        now = max(self._clock(), current.updated_at or 0.0)  # never before the version it replaces
        return dataclasses.replace(
            current,
            **changes,  # type: ignore[arg-type]
            version=current.version + 1,
            updated_at=now,
            updated_by=caller.agent_id,
            source=self._writer.scrubbed_source(caller),
            history=[],
        )

    async def _head(self, caller: Caller, memory_id: str) -> Memory:
        """The memory at the end of memory_id's supersession chain."""
        current = await self._state.get(caller, memory_id, for_update=True)
        for _ in range(MAX_CHAIN):
            if current.status != "superseded" or not current.superseded_by:
                return current
            current = await self._state.get(caller, current.superseded_by, for_update=True)
        raise InvalidArgument("id", f"the supersession chain of '{memory_id}' is longer than {MAX_CHAIN} memories.")

    async def _mutate(
        self, caller: Caller, memory_id: str, event: str, change: Change, expected_version: int
    ) -> tuple[Memory, int, tuple[Redaction, ...]]:
        """Appends change(current) as the memory's next version; returns it, its sequence and the redactions.

        When nothing is to be done, returns the current version and its sequence.
        """
        memory_id = parse_memory_id(memory_id)
        based_on = await self._log.last_seq()
        current = await self._state.get(caller, memory_id, min_seq=based_on, for_update=True)
        for _ in range(MAX_ATTEMPTS):
            require_owner(current, caller)
            if expected_version and current.version != expected_version:
                raise VersionConflict(expected_version, current.version)
            changed = change(current)
            if changed is None:
                return current, current.seq, ()
            new, redactions = changed
            (vectors,) = await asyncio.to_thread(self._writer.vectors, [new])
            body = event_body(event, new, caller, vectors=vectors)
            try:
                appended = await self._writer.append_entry(
                    caller, event, body, msg_id=f"{memory_id}:{new.version}",
                    based_on=based_on, stale=_newer_than(memory_id, current.version),
                )  # fmt: skip
            except Overtaken as e:
                current, based_on = _state_in(e.entry, memory_id), e.entry.seq
                continue
            if appended.duplicate:  # the same version number stored by another writer just now: read it
                based_on = await self._log.last_seq()
                current = await self._state.get(caller, memory_id, min_seq=based_on, for_update=True)
                continue
            new.seq = appended.seq
            return new, appended.seq, redactions
        raise Unavailable("The memory kept changing while this change was applied; retry.", retry_after=1.0)


_MEMORY_FIELDS = (*(name for name in UPDATABLE if name != "metadata_json"), "metadata")


def _mask(fields: list[str]) -> list[str]:
    mask = list(dict.fromkeys(_ALIASES.get(name, name) for name in fields))
    unknown = [name for name in mask if name not in UPDATABLE]
    if unknown:
        raise InvalidArgument("update_mask", f"cannot change {unknown}; these fields can: {', '.join(UPDATABLE)}.")
    if not mask:
        raise InvalidArgument("update_mask", "give at least one field to change.")
    return mask


def _input_of(memory: Memory) -> MemoryInput:
    """The memory's current values as an input, so that an update is validated and scrubbed as a whole."""
    return MemoryInput(
        content=memory.content, summary=memory.summary, memory_type=memory.memory_type,
        confidence=memory.confidence, topics=list(memory.topics), tags=list(memory.tags),
        importance=memory.importance, team=memory.team, project=memory.project,
        conversation_id=memory.conversation_id,
        metadata_json=json.dumps(memory.metadata, ensure_ascii=False) if memory.metadata else "",
        sensitivity=memory.sensitivity, valid_at=memory.valid_at, invalid_at=memory.invalid_at,
        expires_at=memory.expires_at, context=memory.context,
    )  # fmt: skip


def _about(memory_id: str) -> Callable[[LogEntry], bool]:
    return lambda entry: entry.body.get("memory_id") == memory_id and entry.body.get("event") != MEMORY_PURGED


def _newer_than(memory_id: str, version: int) -> Callable[[LogEntry], bool]:
    """Flags an entry that wrote a newer version of the memory (or purged it) than the one a change is based on."""

    def stale(entry: LogEntry) -> bool:
        body = entry.body
        if body.get("memory_id") != memory_id:
            return False
        return body.get("event") == MEMORY_PURGED or ("memory" in body and int(body.get("version", 0)) > version)

    return stale


def _state_in(entry: LogEntry, memory_id: str) -> Memory:
    if entry.body.get("event") == MEMORY_PURGED or "memory" not in entry.body:
        raise NotFound(memory_id)
    memory = Memory.from_dict(entry.body["memory"])
    memory.seq = entry.seq
    return memory
