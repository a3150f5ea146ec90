"""Changes to existing memories: update, delete (archive), purge, supersede (and undo it), expire, and moving
handoffs on.

Each change is a new version appended to the log, never an overwrite. The write is based on the memory's
current state as the search index has it at a known log position; the append is conditional on no newer
version of the same memory having been appended since (engram.log's ``stale`` check, atomic with the append),
so two writers racing on one memory are serialised: the second sees the first's version and re-applies its
change on top of it, or, with an ``expected_version``, is refused with a VersionConflict.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Protocol

from engram.errors import InvalidArgument, NotFound, PermissionDenied, Unavailable, VersionConflict
from engram.ids import memory_id as parse_memory_id
from engram.log import Log, LogEntry, Overtaken
from engram.log.events import (
    CONTRADICTION_DETECTED,
    HANDOFF_ACCEPTED,
    HANDOFF_COMPLETED,
    HANDOFF_EXPIRED,
    MEMORY_DECAYED,
    MEMORY_DELETED,
    MEMORY_EXPIRED,
    MEMORY_MERGED,
    MEMORY_PURGED,
    MEMORY_SUPERSEDED,
    MEMORY_UNSUPERSEDED,
    MEMORY_UPDATED,
    SCHEMA_VERSION,
    event_body,
    newer_than,
    state_in,
)
from engram.model import COLD, UPDATABLE, Caller, Memory, MemoryInput, Relation, format_time, input_of, stored_name
from engram.ownership import (
    UNOWNED,
    is_admin,
    require_admin,
    require_handoff_target,
    require_may_supersede,
    require_may_unsupersede,
    require_owner,
)
from engram.results import (
    Changed,
    DeleteResult,
    ExpireResult,
    History,
    MergeResult,
    SaveResult,
    SupersedeResult,
    UnsupersedeResult,
)
from engram.scrub import Redaction, scrub_text
from engram.services.ingest.writer import MemoryWriter, counted
from engram.supersession import (
    replacement_for,
    require_may_supersede_now,
    require_not_holding_up,
    require_replacement_input,
)
from engram.validation import HANDOFF, with_team_tag

MAX_ATTEMPTS = 50  # re-applications of one change after other writers got there first
MAX_NOTE_CHARS = 2000
MAX_MERGE = 100  # memories merged into one survivor by one call
MERGED_FROM = "merged_from"  # the survivor's metadata key: the ids merged into it
RELATABLE = ("contradicts", "context-dependent")  # relations set by RelateMemories (the others have their own RPC)
# Where a handoff may go from each state: its target accepts it, then completes it (or completes it at once).
HANDOFF_MOVES = {"pending": ("accepted", "completed"), "accepted": ("completed",)}
HANDOFF_EVENTS = {"accepted": HANDOFF_ACCEPTED, "completed": HANDOFF_COMPLETED}
# What an update may change: the inputs of a memory but the fixed ones (engram.model.FIXED_INPUTS), named as in
# MemoryInput or as stored (metadata for metadata_json); ids, owners and times never.
_ALIASES = {stored_name(name): name for name in UPDATABLE if stored_name(name) != name}


class CurrentState(Protocol):
    """Where ingest reads the current version of a memory: the search service (engram.grpc.clients.SearchClient)."""

    async def get(
        self,
        caller: Caller,
        memory_id: str,
        *,
        min_seq: int = 0,
        with_history: bool = False,
        for_update: bool = False,
        head: bool = False,
    ) -> Memory: ...

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> History: ...

    async def memory_at(self, caller: Caller, memory_id: str, at: float, *, min_seq: int = 0) -> Memory: ...


class _Moved(Exception):
    """The memory to supersede was superseded meanwhile: supersede the head of its chain instead."""

    def __init__(self, head_id: str) -> None:
        self.head_id = head_id


# A change: the next version of a memory (and what was redacted from it), or None when there is nothing to do.
Change = Callable[[Memory], tuple[Memory, tuple[Redaction, ...]] | None]
# Who may change a memory: raises unless the caller may (require_owner: read all, write own).
Authorize = Callable[[Memory, Caller], None]


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
        if "expires_at" in mask and draft.expires_at is not None:
            await self._keep_replacement(caller, memory_id, "an expiry")

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            if current.status == "superseded":
                raise InvalidArgument(
                    "id", f"memory '{current.id}' was superseded by '{current.superseded_by}'; update that one instead."
                )
            merged = input_of(current)
            for name in mask:
                setattr(merged, name, getattr(draft, name))
            prepared, redactions = self._writer.build(caller, merged, previous_type=current.memory_type)
            _require_same_kind(current, prepared.memory_type)
            prepared.tags = with_team_tag(prepared.tags, prepared.team, previous_team=current.team)
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

        await self._keep_replacement(caller, memory_id, "archiving it")
        memory, seq, _ = await self._mutate(caller, memory_id, MEMORY_DELETED, change, expected_version)
        return DeleteResult(memory.id, seq, memory)

    async def purge(self, caller: Caller, memory_id: str) -> DeleteResult:
        """Removes a memory for good (admin): every log entry about it is erased, then a purge is recorded; answers
        once the search index has applied the purge too (which leaves nothing of it in its files), or after the
        bounded wait of a read (the index finishes by itself then)."""
        require_admin(caller, "purge memories")
        memory_id = parse_memory_id(memory_id)
        based_on = await self._log.last_seq()
        history = await self._state.history(caller, memory_id, min_seq=based_on)
        self._writer.forget(memory_id)
        erased = await self._log.erase(history.seqs)
        body = {
            "schema": SCHEMA_VERSION, "event": MEMORY_PURGED, "namespace": caller.namespace, "agent": caller.agent_id,
            "source": caller.source, "memory_id": memory_id, "time": format_time(self._clock()), "erased": erased,
        }  # fmt: skip
        for _ in range(MAX_ATTEMPTS):
            try:
                appended = await self._log.append(
                    caller.namespace, MEMORY_PURGED, body, msg_id=f"{memory_id}:purged",
                    based_on=based_on, stale=_about(caller.namespace, memory_id),
                )  # fmt: skip
            except Overtaken as e:  # a version written meanwhile: erase it too
                erased += await self._log.erase([e.entry.seq])
                based_on = e.entry.seq
                body["erased"] = erased
                continue
            seq = counted(MEMORY_PURGED, appended).seq
            with contextlib.suppress(NotFound, Unavailable):  # NotFound: applied; Unavailable: not within the wait
                await self._state.get(caller, memory_id, min_seq=seq)
            return DeleteResult(memory_id, seq, None, erased)
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
        """Marks the head of ``memory_id``'s chain superseded by a new memory (saved here) or by ``new_id``.

        Any agent of the namespace may (newest wins): the old memory keeps its content and owner, and its owner (or
        an admin) may undo it (unsupersede), which stands. engram.supersession checks both memories (an active one,
        replaced by an active memory the caller vouches for), for every path the same."""
        if (replacement is None or not replacement.content.strip()) == (not new_id):
            raise InvalidArgument(
                "replacement", "give either the content of the new memory or new_id of an existing one (not both)."
            )
        memory_id = parse_memory_id(memory_id)
        head = await self._head(caller, memory_id)
        # expected_version is about the memory named; once the chain has moved past it, there is nothing to compare.
        if expected_version and head.id == memory_id and head.version != expected_version:
            raise VersionConflict(expected_version, head.version)
        # Before anything is written: a refused one leaves nothing behind.
        await require_may_supersede_now(self._state, caller, head)
        redactions: tuple[Redaction, ...] = ()
        if new_id:
            new_id = parse_memory_id(new_id, field="new_id")
            new = await replacement_for(self._state, caller, head, new_id, min_seq=await self._log.last_seq())
        else:
            assert replacement is not None
            require_replacement_input(replacement.expires_at, replacement.handoff_target)
            new, redactions = self._writer.prepare(caller, replacement)
            new.relations = [Relation("supersedes", head.id)]
            new.valid_at = new.valid_at if new.valid_at is not None else new.created_at
            saved = await self._writer.append_new(caller, new)
            new.seq = saved
        now = self._clock()

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]]:
            if current.status == "superseded" and current.superseded_by:
                raise _Moved(current.superseded_by)
            if current.status != "active":  # archived or expired meanwhile
                raise InvalidArgument("id", f"memory '{current.id}' is {current.status} now; nothing to supersede.")
            invalid_at = current.invalid_at if current.invalid_at is not None else now
            step = self._next(current, caller, status="superseded", superseded_by=new.id, invalid_at=invalid_at)
            return step, ()

        while True:  # each pass moves along the chain (another writer got there first): it ends at its head
            try:
                old, seq, _ = await self._mutate(
                    caller, head.id, MEMORY_SUPERSEDED, change, 0, authorize=require_may_supersede
                )
            except _Moved as moved:
                if moved.head_id == new.id:
                    old = await self._latest(caller, head.id)
                    return SupersedeResult(old, new, old.seq, redactions)
                head = await self._head(caller, moved.head_id)
                await require_may_supersede_now(self._state, caller, head)
                continue
            return SupersedeResult(old, new, seq, redactions)

    async def unsupersede(self, caller: Caller, memory_id: str, *, expected_version: int = 0) -> UnsupersedeResult:
        """Undoes the supersession of ``memory_id`` (its owner, or an admin): its replacement first drops its
        ``supersedes`` relation to it, then the memory is active again with superseded_by cleared and invalid_at as
        it was before. In that order, so an undo cut short is completed by running it again. Both versions are
        logged as memory_unsuperseded, naming the pair."""
        memory_id = parse_memory_id(memory_id)
        old = await self._latest(caller, memory_id)
        if old.status != "superseded" or not old.superseded_by:  # first: it says what to undo instead
            raise InvalidArgument("id", _not_superseded(old))
        require_may_unsupersede(old, caller)
        if expected_version and old.version != expected_version:
            raise VersionConflict(expected_version, old.version)
        pair = (old.id, old.superseded_by)
        replacement = await self._unlink(caller, pair)
        status, invalid_at = await self._before_supersession(caller, old)

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]]:
            if current.status != "superseded" or current.superseded_by != pair[1]:
                raise InvalidArgument("id", _not_superseded(current))
            return self._next(current, caller, status=status, superseded_by="", invalid_at=invalid_at), ()

        memory, seq, _ = await self._mutate(
            caller, memory_id, MEMORY_UNSUPERSEDED, change, expected_version, authorize=require_may_unsupersede,
            pair=pair,
        )  # fmt: skip
        return UnsupersedeResult(memory, replacement, seq)

    async def _unlink(self, caller: Caller, pair: tuple[str, str]) -> Memory | None:
        """The replacement of ``pair`` without its supersedes relation to the old memory (a new version, written for
        the old memory's owner: require_may_unsupersede checked it); None when the replacement is gone."""
        old_id, new_id = pair

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            kept = [r for r in current.relations if not (r.kind == "supersedes" and r.memory_id == old_id)]
            if len(kept) == len(current.relations):
                return None  # it never claimed it (superseded by new_id), or an earlier undo dropped it
            return self._next(current, caller, relations=kept), ()

        try:
            replacement, _, _ = await self._mutate(
                caller, new_id, MEMORY_UNSUPERSEDED, change, 0, authorize=_anyone, pair=pair
            )
        except NotFound:
            return None
        return replacement

    async def _before_supersession(self, caller: Caller, superseded: Memory) -> tuple[str, float | None]:
        """The memory's status and invalid_at as they were before its supersession (active and None when unknown): an
        undo gives back what was, so an archived memory superseded (by an older version of Engram) stays archived."""
        versions = (await self._state.history(caller, superseded.id, min_seq=superseded.seq)).versions
        before = [v for v in versions if v.version < superseded.version and v.status != "superseded"]
        if not before or before[-1].updated_at is None:
            return "active", None
        status = before[-1].status if before[-1].status in ("active", "archived", "expired") else "active"
        try:
            earlier = await self._state.memory_at(caller, superseded.id, before[-1].updated_at)
        except NotFound:
            return status, None
        return status, (earlier.invalid_at if earlier.status != "superseded" else None)

    async def expire(self, caller: Caller, memory_id: str, *, expected_version: int, at: float) -> ExpireResult:
        """Expires what is due at ``at`` (admin: the job): a pending handoff whose handoff.expires_at passed becomes a
        plain memory (handoff_expired), else an active memory whose expires_at passed becomes expired.

        One step per call: a handoff that is due both ways becomes a plain memory now, and expires at the next run.
        """
        require_admin(caller, "expire memories")

        expired = False

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            nonlocal expired
            if _handoff_due(current, at):
                expired = True
                return self._handoff_moved(current, caller, "expired", memory_type="general"), ()
            expired = current.status == "active" and current.expires_at is not None and current.expires_at <= at
            if not expired:
                return None
            invalid_at = current.invalid_at if current.invalid_at is not None else current.expires_at
            return self._next(current, caller, status="expired", invalid_at=invalid_at), ()

        def event(new: Memory) -> str:
            return MEMORY_EXPIRED if new.status == "expired" else HANDOFF_EXPIRED

        memory, seq, _ = await self._mutate(caller, memory_id, event, change, expected_version)
        return ExpireResult(memory, seq, expired)

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
        """Merges ``ids`` into one survivor: the existing memory ``into_id`` or a new one saved from ``replacement``.

        The survivor's new version (memory_merged) records the ids in metadata["merged_from"] and gains their tags
        and topics; then each merged memory is archived (memory_merged) with a merged-into relation. In that order,
        so a merge cut short is completed by running it again: what is already recorded or archived is left alone.
        Memories of different owners need an admin's ``force``; a secret memory only merges into a secret one.
        """
        merged_ids = _merge_ids(ids)
        text, _ = _note(note)
        if (replacement is None or not replacement.content.strip()) == (not into_id):
            raise InvalidArgument(
                "into_id", "give either into_id (an existing survivor) or the content of a new one (not both)."
            )
        if force:
            require_admin(caller, "merge memories of other agents (force)")
        members = [await self._latest(caller, memory_id) for memory_id in merged_ids]
        redactions: tuple[Redaction, ...] = ()
        if into_id:
            survivor = await self._latest(caller, parse_memory_id(into_id, field="into_id"))
            if survivor.id in merged_ids:
                raise InvalidArgument("into_id", "the survivor cannot be one of the memories merged into it.")
            if survivor.status != "active":
                raise InvalidArgument("into_id", f"'{survivor.id}' is {survivor.status}; merge into an active memory.")
        else:
            assert replacement is not None
            survivor, redactions = self._writer.prepare(caller, replacement)
        _check_merge(caller, survivor, members, force=force)
        if not into_id:
            survivor.metadata = {**survivor.metadata, MERGED_FROM: merged_ids}
            survivor.tags = _union(survivor.tags, *(m.tags for m in members))
            survivor.topics = _union(survivor.topics, *(m.topics for m in members))
            survivor.seq = await self._writer.append_new(caller, survivor)
            seq = survivor.seq
        else:

            def record(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
                if current.status != "active":
                    raise InvalidArgument("into_id", f"memory '{current.id}' is {current.status} now; merge again.")
                before = [str(i) for i in current.metadata.get(MERGED_FROM) or []]
                merged_from = _union(before, merged_ids)
                tags = _union(current.tags, *(m.tags for m in members))
                topics = _union(current.topics, *(m.topics for m in members))
                if (merged_from, tags, topics) == (before, current.tags, current.topics):
                    return None
                metadata = {**current.metadata, MERGED_FROM: merged_from}
                return self._next(current, caller, metadata=metadata, tags=tags, topics=topics), ()

            survivor, seq, _ = await self._mutate(
                caller, survivor.id, MEMORY_MERGED, record, 0, authorize=_may_merge(force)
            )

        def archive(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            if any(r.kind == "merged-into" and r.memory_id == survivor.id for r in current.relations):
                return None  # merged by an earlier run
            if current.status != "active":
                raise InvalidArgument("ids", f"memory '{current.id}' is {current.status}; only active memories merge.")
            relation = Relation("merged-into", survivor.id, text)
            return self._next(current, caller, status="archived", relations=[*current.relations, relation]), ()

        merged = []
        for member in members:
            memory, member_seq, _ = await self._mutate(
                caller, member.id, MEMORY_MERGED, archive, 0, authorize=_may_merge(force)
            )
            merged.append(memory)
            seq = max(seq, member_seq)
        return MergeResult(survivor, merged, seq, redactions)

    async def relate(
        self, caller: Caller, memory_id: str, other_id: str, kind: str, *, note: str = "",
        replace_kinds: tuple[str, ...] = (),
    ) -> Changed:  # fmt: skip
        """Adds the relation ``kind`` from a memory to another, first removing its relations to it of
        ``replace_kinds``. A flagged contradiction is published as contradiction_detected."""
        if kind not in RELATABLE:
            raise InvalidArgument("kind", f"{kind or 'nothing'!r} is not set here; give one of {', '.join(RELATABLE)}.")
        other = await self._latest(caller, parse_memory_id(other_id, field="other_id"))
        if other.id == parse_memory_id(memory_id):
            raise InvalidArgument("other_id", "a memory cannot be related to itself.")
        text, _ = _note(note)
        changed = False

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            nonlocal changed
            kept = [r for r in current.relations if not (r.memory_id == other.id and r.kind in replace_kinds)]
            if any(r.kind == kind and r.memory_id == other.id for r in kept):
                if len(kept) == len(current.relations):
                    return None
            else:
                kept.append(Relation(kind, other.id, text))
            changed = True
            return self._next(current, caller, relations=kept), ()

        event = CONTRADICTION_DETECTED if kind == "contradicts" else MEMORY_UPDATED
        memory, seq, _ = await self._mutate(caller, memory_id, event, change, 0)
        return Changed(memory, seq, changed)

    async def decay(
        self, caller: Caller, memory_id: str, *, expected_version: int, idle_since: float, archive: bool
    ) -> Changed:
        """Moves an active memory idle since ``idle_since`` (neither read nor written after it) to the cold tier,
        or archives it (admin: the decay job). Nothing to do for a memory used since, or already there."""
        require_admin(caller, "decay memories")
        changed = False

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            nonlocal changed
            if current.status != "active" or current.last_used_at > idle_since or (not archive and current.is_cold):
                return None
            changed = True
            if archive:
                return self._next(current, caller, status="archived"), ()
            return self._next(current, caller, tier=COLD), ()

        memory, seq, _ = await self._mutate(caller, memory_id, MEMORY_DECAYED, change, expected_version)
        return Changed(memory, seq, changed)

    async def update_handoff(
        self, caller: Caller, memory_id: str, status: str, *, expected_version: int = 0, note: str = ""
    ) -> SaveResult:
        """Moves a handoff on: pending -> accepted -> completed, or pending -> completed at once.

        The act of its target agent (or an admin), not of its owner: the one exception to write-own. Moving it to
        the state it is in changes nothing (the current version is the answer). A note is kept in the handoff's
        metadata["handoff_notes"] with the state, the agent and the time.
        """
        if status not in HANDOFF_EVENTS:
            raise InvalidArgument("status", f"{status or 'nothing'!r} is not a move: give accepted or completed.")
        note_text, redactions = _note(note)

        def change(current: Memory) -> tuple[Memory, tuple[Redaction, ...]] | None:
            assert current.handoff is not None  # require_handoff_target checked it
            if current.handoff.status == status:
                return None
            if status not in HANDOFF_MOVES.get(current.handoff.status, ()):
                raise InvalidArgument("status", _cannot_move(current, status))
            new = self._handoff_moved(current, caller, status)
            if note_text:
                entry = {
                    "status": status,
                    "agent": caller.identity,
                    "time": format_time(new.updated_at),
                    "note": note_text,
                }
                new.metadata = {**current.metadata, "handoff_notes": [*_notes(current.metadata), entry]}
                self._require_metadata_room(new)
            return new, redactions

        memory, seq, redactions = await self._mutate(
            caller, memory_id, HANDOFF_EVENTS[status], change, expected_version, authorize=require_handoff_target
        )
        return SaveResult(memory, seq, redactions)

    # -- the mechanics ------------------------------------------------------------------------------

    def _handoff_moved(self, current: Memory, caller: Caller, status: str, **changes: object) -> Memory:
        """The next version of a handoff, moved to ``status`` now."""
        assert current.handoff is not None
        new = self._next(current, caller, **changes)
        new.handoff = dataclasses.replace(current.handoff, status=status, updated_at=new.updated_at)
        return new

    def _require_metadata_room(self, memory: Memory) -> None:
        """A note must leave the metadata within its limit: else the owner could no longer update the handoff."""
        size = len(json.dumps(memory.metadata, ensure_ascii=False).encode())
        limit = self._writer.limits.max_metadata_bytes
        if size > limit:
            raise InvalidArgument(
                "note", f"with it the handoff's metadata would be {size} bytes; the limit is {limit}. Shorten the note."
            )

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

    async def _latest(self, caller: Caller, memory_id: str) -> Memory:
        """The current version of a memory with every write acknowledged so far applied (read your writes: a memory
        saved a moment ago may not be indexed yet)."""
        return await self._state.get(caller, memory_id, min_seq=await self._log.last_seq(), for_update=True)

    async def _keep_replacement(self, caller: Caller, memory_id: str, action: str) -> None:
        """A replacement of another agent's memory stays active (engram.supersession); an admin may still act."""
        if is_admin(caller):
            return
        current = await self._latest(caller, parse_memory_id(memory_id))
        require_owner(current, caller)  # who may is said first, as the change itself would
        await require_not_holding_up(self._state, caller, current, action)

    async def _head(self, caller: Caller, memory_id: str) -> Memory:
        """The memory at the end of memory_id's supersession chain, walked by the search service in one call (no
        limit to the chain's length: it never locks anyone out, and its latency does not grow with it)."""
        return await self._state.get(caller, memory_id, min_seq=await self._log.last_seq(), for_update=True, head=True)

    async def _mutate(
        self,
        caller: Caller,
        memory_id: str,
        event: str | Callable[[Memory], str],
        change: Change,
        expected_version: int,
        *,
        authorize: Authorize = require_owner,
        pair: tuple[str, str] | None = None,
    ) -> tuple[Memory, int, tuple[Redaction, ...]]:
        """Appends change(current) as the memory's next version, as ``event`` (a name, or a function of the new
        version); returns it, its sequence and the redactions.

        When nothing is to be done, returns the current version and its sequence.
        """
        memory_id = parse_memory_id(memory_id)
        based_on = await self._log.last_seq()
        current = await self._state.get(caller, memory_id, min_seq=based_on, for_update=True)
        for _ in range(MAX_ATTEMPTS):
            authorize(current, caller)
            if expected_version and current.version != expected_version:
                raise VersionConflict(expected_version, current.version)
            changed = change(current)
            if changed is None:
                return current, current.seq, ()
            new, redactions = changed
            name = event if isinstance(event, str) else event(new)
            (vectors,) = await asyncio.to_thread(self._writer.vectors, [new])
            body = event_body(name, new, caller, vectors=vectors, pair=pair)
            try:
                appended = await self._writer.append_entry(
                    caller, name, body, msg_id=f"{memory_id}:{new.version}",
                    based_on=based_on, stale=newer_than(caller.namespace, memory_id, current.version),
                )  # fmt: skip
            except Overtaken as e:
                current, based_on = state_in(e.entry, memory_id), e.entry.seq
                continue
            if appended.duplicate:  # the same version number stored by another writer just now: read it
                based_on = await self._log.last_seq()
                current = await self._state.get(caller, memory_id, min_seq=based_on, for_update=True)
                continue
            new.seq = appended.seq
            self._writer.forget(memory_id)
            return new, appended.seq, redactions
        raise Unavailable("The memory kept changing while this change was applied; retry.", retry_after=1.0)


def _anyone(memory: Memory, caller: Caller) -> None:
    """No check here: the caller was authorized on another memory of the same act."""


def _not_superseded(memory: Memory) -> str:
    """Why an undo does not apply, and what to do instead."""
    claims = [r.memory_id for r in memory.relations if r.kind == "supersedes"]
    if claims:
        return (
            f"memory '{memory.id}' is {memory.status}, not superseded; it supersedes '{claims[0]}': undo that one "
            f"(unsupersede '{claims[0]}') to make it active again."
        )
    return f"memory '{memory.id}' is {memory.status}, not superseded: there is no supersession to undo."


def _merge_ids(ids: list[str]) -> list[str]:
    merged = list(dict.fromkeys(parse_memory_id(i, field="ids") for i in ids))
    if not merged:
        raise InvalidArgument("ids", "name at least one memory to merge.")
    if len(merged) > MAX_MERGE:
        raise InvalidArgument("ids", f"at most {MAX_MERGE} memories merge at once; merge the rest in another call.")
    return merged


def _check_merge(caller: Caller, survivor: Memory, members: list[Memory], *, force: bool) -> None:
    """Same owner unless an admin forces it; never a secret memory into a non-secret one."""
    owners = sorted({m.owner_agent for m in [survivor, *members] if m.owner_agent not in UNOWNED})
    if len(owners) > 1 and not force:
        raise PermissionDenied(
            f"These memories belong to different agents ({', '.join(owners)}); only an admin merges them, with force."
        )
    secret = [m.id for m in members if m.sensitivity == "secret"]
    if secret and survivor.sensitivity != "secret":
        raise InvalidArgument(
            "ids", f"{', '.join(secret)} is secret and would be readable as part of a non-secret memory; merge it "
            "into a secret one (sensitivity secret).",
        )  # fmt: skip
    for member in members:
        require_owner(member, caller)


def _may_merge(force: bool) -> Authorize:
    """Who may write the merge's versions: the owner (or an admin), and with force the admin already checked."""
    return (lambda memory, caller: None) if force else require_owner


def _union(first: list[str], *more: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *(item for items in more for item in items)]))


_MEMORY_FIELDS = tuple(stored_name(name) for name in UPDATABLE)  # the fields of Memory an update may change


def _mask(fields: list[str]) -> list[str]:
    mask = list(dict.fromkeys(_ALIASES.get(name, name) for name in fields))
    unknown = [name for name in mask if name not in UPDATABLE]
    if unknown:
        raise InvalidArgument("update_mask", f"cannot change {unknown}; these fields can: {', '.join(UPDATABLE)}.")
    if not mask:
        raise InvalidArgument("update_mask", "give at least one field to change.")
    return mask


def _require_same_kind(current: Memory, memory_type: str) -> None:
    """A handoff stays one, and no other memory becomes one by an update (a handoff is created with its target)."""
    if memory_type == current.memory_type or HANDOFF not in (memory_type, current.memory_type):
        return
    if current.memory_type == HANDOFF:
        raise InvalidArgument(
            "memory_type", f"memory '{current.id}' is a handoff and stays one; its target accepts and completes it."
        )
    raise InvalidArgument(
        "memory_type", "a memory cannot become a handoff by an update: save a new one with a handoff_target."
    )


def _cannot_move(memory: Memory, status: str) -> str:
    assert memory.handoff is not None
    state = memory.handoff.status
    if state == "expired":
        return f"handoff '{memory.id}' expired unaccepted and is a plain memory now; it cannot become {status}."
    allowed = HANDOFF_MOVES.get(state, ())
    next_step = f" It can become {' or '.join(allowed)}." if allowed else " It is done: nothing follows."
    return f"handoff '{memory.id}' is {state}; it cannot become {status}.{next_step}"


def _handoff_due(memory: Memory, at: float) -> bool:
    """True for an active handoff still pending at its deadline."""
    handoff = memory.handoff
    return (
        memory.status == "active"
        and handoff is not None
        and handoff.status == "pending"
        and handoff.expires_at is not None
        and handoff.expires_at <= at
    )


def _note(note: str) -> tuple[str, tuple[Redaction, ...]]:
    """A note (a handoff's, a relation's), bounded and scrubbed like any text that is stored."""
    text = (note or "").strip()
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidArgument("note", f"is longer than {MAX_NOTE_CHARS} characters; keep the outcome short.")
    scrubbed = scrub_text(text)
    return scrubbed.text, tuple(scrubbed.redactions)


def _notes(metadata: dict[str, object]) -> list[object]:
    """The notes a handoff has so far (a value someone else stored under the key is kept as the first)."""
    notes = metadata.get("handoff_notes")
    if notes is None:
        return []
    return list(notes) if isinstance(notes, list) else [notes]


def _about(namespace: str, memory_id: str) -> Callable[[LogEntry], bool]:
    """An entry about the memory (namespace, id), its purge record aside."""
    return lambda entry: (
        entry.body.get("memory_id") == memory_id
        and entry.body.get("namespace") == namespace
        and entry.body.get("event") != MEMORY_PURGED
    )
