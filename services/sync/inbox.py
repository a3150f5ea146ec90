"""The cluster's side of sync: applies the changes an edge device pushes, and pages its namespace's log to it.

A pushed change is a device's log entry (docs/events.md): the memory as it is after the change. The cluster
checks it like any write (namespace, sizes, write-own, secrets never leave their device), then appends it as the
memory's next version in the cluster's own numbering: the order that counts is the cluster's log, never a device's
clock. A change made on an older version than the cluster's current one (two devices edited the memory while
apart) is a conflict: it still becomes the head (the later server sequence wins), the version it overrides stays
in history marked as a conflict, and a ``memory_conflict`` event says so. Every answer is kept by ``source_id``,
so a batch pushed twice (a device that crashed before storing the answer) changes nothing the second time.

A device speaks only for the agents that work on it, as its sync key names them: it creates memories as those
agents, and changes or moves only what they own (or what is unowned) and handoffs addressed to them, with the same
answers as REST. As on REST, newest wins: its agents supersede other agents' memories too (only the supersession is
taken, on top of the cluster's version) and undo supersessions of their own memories. A key that names no agent
speaks for the device's agents only on what was made on the device.
A restore (`engram sync --full`) is checked the same way: it only fills in what the cluster lacks, never changes
an owner, and its answers are kept like every other change's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard

from engram.errors import EngramError, InvalidArgument, NotFound, PermissionDenied, Unavailable
from engram.grpc.clients import ANY_AGENT, DEFAULT_PULL, MAX_PULL, MAX_PUSH, SearchClient
from engram.ids import memory_id as parse_memory_id
from engram.log import Log, LogEntry, Overtaken, subject
from engram.log.events import (
    HANDOFF_ACCEPTED,
    HANDOFF_COMPLETED,
    MEMORY_CONFLICT,
    MEMORY_CREATED_EVENTS,
    MEMORY_PURGED,
    MEMORY_STATE_EVENTS,
    MEMORY_SUPERSEDED,
    MEMORY_UNSUPERSEDED,
    SCHEMA_VERSION,
    decode_dense,
    decode_sparse,
    event_body,
    newer_than,
    state_in,
)
from engram.log.syncstore import SyncStore
from engram.model import TIME_FIELDS, Caller, Memory, Origin, format_time, input_of
from engram.names import validate_agent, validate_device, validate_team
from engram.ownership import (
    ADMIN_SCOPE,
    PACKS_SCOPE,
    UNOWNED,
    owns,
    require_handoff_target,
    require_may_supersede,
    require_may_unsupersede,
    require_may_write_type,
    require_owner,
)
from engram.process import metrics
from engram.results import Pushed, SyncChange, SyncPage
from engram.scrub import Redaction, merge, scrub_text, scrub_value
from engram.supersession import replacement_for, require_may_supersede_now, require_not_holding_up
from engram.validation import MAX_COUNT, Limits, check_fields, check_storable, check_time, validate

MAX_ATTEMPTS = 20  # re-reads of a memory that other writers keep changing while a change is applied
SERVER_PARENT = "server:"  # a parent that names a version the device pulled: server:<version>
RESTORED = "restore:"  # the answer store's key of a restored change: restore:<device>:<source_id>
# What a device receives: every memory state, purges and conflicts. Read counts stay where they were counted, and
# enrichment questions too (they carry no memory to tell whether they were asked about a secret one).
PULLED = (*MEMORY_STATE_EVENTS, MEMORY_PURGED, MEMORY_CONFLICT)

# Embeds memories whose vectors the device made with another model: [(memory)] -> [vectors].
Embed = Callable[[list[Memory]], Awaitable[list[dict[str, Any]]]]


class Inbox:
    """Applies pushed changes to the cluster's log and pages the log back to devices."""

    def __init__(
        self,
        event_log: Log,
        state: SearchClient,
        store: SyncStore,
        *,
        limits: Limits,
        models: tuple[str, str],
        dim: int,
        embed: Embed,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._log = event_log
        self._state = state
        self._store = store
        self._limits = limits
        self._models = models  # (dense model id, sparse model id) the cluster's vectors are made with
        self._dim = dim  # the width of its dense vectors
        self._embed = embed
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}  # one push at a time per device: its changes stay in order

    async def push(
        self,
        caller: Caller,
        device: str,
        changes: Sequence[SyncChange],
        *,
        restore: bool = False,
        agents: Sequence[str] = (),
    ) -> list[Pushed]:
        """Applies changes in order; answers each (a rejection is an answer, not an error). Raises Unavailable
        when the log cannot take them: the device sends the rest again later. ``agents``: the agents the device's
        key names (none: the key names no agent)."""
        on = Device(_device(caller, device), frozenset(agents))
        if len(changes) > MAX_PUSH:
            raise InvalidArgument("changes", f"push at most {MAX_PUSH} changes at once; send the rest next.")
        lock = self._locks.setdefault(f"{caller.namespace}\0{on.name}", asyncio.Lock())
        async with lock:
            answers = []
            for change in changes:
                answer = await self._push_one(caller, on, change, restore=restore)
                metrics.SYNC_PUSHED.labels(_outcome(answer)).inc()
                answers.append(answer)
            return answers

    async def pull(self, caller: Caller, device: str, cursor: int, limit: int) -> SyncPage:
        """The namespace's changes after ``cursor``, oldest first. Secret memories never leave: their entries
        are skipped (the cursor still moves past them)."""
        _device(caller, device)
        limit = min(max(limit or DEFAULT_PULL, 1), MAX_PULL)
        last = await self._log.last_seq()
        entries, more = await self._log.read_after(cursor, subjects=subject(caller.namespace, "*"), limit=limit)
        changes = [_outgoing(entry) for entry in entries if _leaves(entry)]
        metrics.SYNC_PULLED.inc(len(changes))
        next_cursor = entries[-1].seq if entries else max(cursor, 0)
        return SyncPage(changes, next_cursor, more, max(last, next_cursor))

    async def register(self, caller: Caller, device: str) -> tuple[str, int]:
        """Checks that the key may sync ``device``; answers the name and the log's end."""
        return _device(caller, device), await self._log.last_seq()

    # -- one change ---------------------------------------------------------------------------------------------

    async def _push_one(self, caller: Caller, device: Device, change: SyncChange, *, restore: bool) -> Pushed:
        # A restore re-sends changes pushed before, and those the device pulled (other devices' source ids): its
        # answers are kept apart from the pushes', per device.
        key = f"{RESTORED}{device.name}:{change.source_id}" if restore else change.source_id
        if not restore and not change.source_id.startswith(f"{device.name}:"):
            return Pushed(change.source_id, False, reason=f"source_id must be '{device.name}:<local seq>'.")
        if (known := await self._store.get(caller.namespace, key)) is not None:
            return _answer(known, change.source_id)
        try:
            pushed = await self._apply(caller, device, change, restore=restore)
        except Unavailable:
            raise
        except EngramError as e:  # the change itself is refused: recorded, never retried
            pushed = Pushed(change.source_id, False, reason=str(e))
        await self._store.put(caller.namespace, key, asdict(pushed))
        return pushed

    async def _apply(self, caller: Caller, device: Device, change: SyncChange, *, restore: bool) -> Pushed:
        body = _parse(change)
        memory = _memory(caller, body)
        actor = device.actor(caller, body)
        memory, redactions = _scrub(memory)  # before the vectors: a device's vectors of scrubbed text are not used
        validate(input_of(memory), self._limits)  # the same limits as a save here
        based_on = await self._log.last_seq()
        current = await self._current(caller, memory.id, based_on)
        pushed = memory
        for _ in range(MAX_ATTEMPTS):
            if current is not None and _already_here(body["event"], pushed, current, restore=restore):
                return Pushed(change.source_id, True, current.seq, current.version, duplicate=True)
            conflict, pair = False, None
            require_may_write_type(actor, pushed.memory_type, previous=current.memory_type if current else "")
            await self._check_supersession(actor, current, pushed, based_on)
            if current is not None:
                unlinked = await self._unlinked(caller, current, pushed, actor, body["event"], based_on)
                memory, pair = device.authorize(current, actor, body["event"], pushed, unlinked=unlinked)
                if restore:  # a version the cluster lacks, on top of the one it has: its owner and origin stay
                    _continue(memory, current, version=memory.version)
                else:
                    conflict = await self._base(caller, change.parent) != current.version
                    _continue(memory, current, version=current.version + 1)
            else:
                memory = pushed
                device.may_create(memory, actor)
                memory.origin = memory.origin if restore else Origin(device.name, change.source_id)
            memory.updated_by = actor.agent_id
            memory.updated_at = _clamp(memory.updated_at, current, self._clock())
            retext = bool(redactions) or memory.search_text() != pushed.search_text()  # the cluster's text was kept
            vectors = await self._vectors(body, memory, rescrubbed=retext)
            out = event_body(body["event"], memory, actor, vectors=vectors, pair=pair)
            out["source_id"] = change.source_id
            if conflict and current is not None:
                out["conflict"] = {"version": current.version, "agent": current.updated_by or current.owner_agent}
            try:
                appended = await self._log.append(
                    caller.namespace, body["event"], out, msg_id=f"sync:{caller.namespace}:{change.source_id}",
                    based_on=based_on, stale=newer_than(caller.namespace, memory.id, current.version if current else 0),
                )  # fmt: skip
            except Overtaken as e:  # another writer changed the memory meanwhile: apply on top of its version
                current, based_on = _state_or_none(e.entry, memory.id), e.entry.seq
                continue
            if appended.duplicate:  # stored by an earlier attempt whose answer was lost: answer as it was stored
                return await self._stored(change.source_id, appended.seq)
            if conflict and current is not None:
                await self._conflict_event(caller, actor, memory, current, appended.seq)
            return Pushed(
                change.source_id, True, appended.seq, memory.version, conflict=conflict,
                redacted=[r.kind for r in redactions],
            )  # fmt: skip
        raise Unavailable("The memory kept changing while the change was applied; push again.", retry_after=1.0)

    async def _check_supersession(self, actor: Caller, current: Memory | None, pushed: Memory, based_on: int) -> None:
        """A pushed version that supersedes a memory passes REST's checks (engram.supersession, the same functions
        ingest's supersede calls): an active memory the actor may supersede, replaced by an active memory of this
        namespace the actor vouches for. A memory the cluster lacks altogether (a restore) only needs a replacement
        of this namespace other than itself."""
        if current is not None and ADMIN_SCOPE not in actor.scopes:  # a replacement of another's memory stays
            if pushed.status == "archived" and current.status != "archived":
                await require_not_holding_up(self._state, actor, current, "archiving it")
            elif pushed.expires_at is not None and pushed.expires_at != current.expires_at:
                await require_not_holding_up(self._state, actor, current, "an expiry")
        if not _supersedes(pushed):
            return
        if current is None:
            replacement = parse_memory_id(pushed.superseded_by, field="superseded_by")
            if replacement == pushed.id:
                raise InvalidArgument("superseded_by", "a memory cannot supersede itself.")
            await self._state.get(actor, replacement, min_seq=based_on, for_update=True)  # NotFound: not here
            return
        if current.status == "superseded" and current.superseded_by == pushed.superseded_by:
            return  # the supersession the cluster has: this version changes something else
        await require_may_supersede_now(self._state, actor, current)
        await replacement_for(
            self._state, actor, current, pushed.superseded_by, min_seq=based_on, field="superseded_by"
        )

    async def _stored(self, source_id: str, seq: int) -> Pushed:
        entry = await self._log.read(seq)
        body = entry.body if entry is not None else {}
        version = int(body.get("version") or 0)
        return Pushed(source_id, True, seq, version, conflict="conflict" in body, duplicate=True)

    async def _current(self, caller: Caller, memory_id: str, based_on: int) -> Memory | None:
        """The cluster's memory of that id in the caller's namespace, or None; an id another namespace holds is
        refused (PermissionDenied): a device chooses its memories' ids."""
        try:
            return await self._state.get(caller, memory_id, min_seq=based_on, for_update=True, for_create=True)
        except NotFound:
            return None

    async def _unlinked(
        self, caller: Caller, current: Memory, pushed: Memory, actor: Caller, event: str, based_on: int
    ) -> list[Memory]:
        """The memories whose supersession another agent's pushed undo unlinks from ``current`` (their owner, the
        actor, undid it): read here, to check the actor owns them. Empty for any other change."""
        if event != MEMORY_UNSUPERSEDED or current.status == "superseded" or owns(current, actor):
            return []
        return [
            await self._state.get(caller, memory_id, min_seq=based_on, for_update=True)
            for memory_id in _dropped_claims(current, pushed)
        ]

    async def _base(self, caller: Caller, parent: str) -> int:
        """The cluster version a change was made on: the one the device pulled, or the one its own earlier change
        became here; 0 when unknown (a parent that was rejected, or never pushed)."""
        if parent.startswith(SERVER_PARENT):
            try:
                return int(parent.removeprefix(SERVER_PARENT))
            except ValueError:
                return 0
        if not parent:
            return 0
        known = await self._store.get(caller.namespace, parent)
        return int(known.get("version", 0)) if known and known.get("accepted") else 0

    async def _vectors(self, body: dict[str, Any], memory: Memory, *, rescrubbed: bool) -> dict[str, Any]:
        """The device's vectors when it made them with the cluster's models (the common case: same package) from
        the text stored here; otherwise (``rescrubbed``: a secret was taken out here) the memory is embedded here."""
        vectors = body.get("vectors")
        if not rescrubbed and _usable(vectors, self._dim) and _models(vectors) == self._models:
            return {k: vectors[k] for k in ("model", "dense", "sparse_model", "sparse")}
        (made,) = await self._embed([memory])
        return made

    async def _conflict_event(
        self, caller: Caller, actor: Caller, memory: Memory, overridden: Memory, seq: int
    ) -> None:
        body = {
            "schema": SCHEMA_VERSION, "event": MEMORY_CONFLICT, "namespace": caller.namespace,
            "agent": actor.agent_id, "device": actor.device, "source": actor.source, "team": memory.team,
            "memory_id": memory.id, "version": memory.version, "time": format_time(self._clock()),
            "head_seq": seq, "overridden": {
                "version": overridden.version, "seq": overridden.seq,
                "agent": overridden.updated_by or overridden.owner_agent, "device": overridden.origin.device,
            },
        }  # fmt: skip
        await self._log.append(caller.namespace, MEMORY_CONFLICT, body, msg_id=f"conflict:{memory.id}:{memory.version}")


def _device(caller: Caller, device: str) -> str:
    """The device a sync call is for: named by the call, and the key's own device when the key names one."""
    if "sync" not in caller.scopes and "admin" not in caller.scopes:
        raise PermissionDenied(
            "This API key may not sync a device. Create one for it on the cluster: "
            "`engram keys create --agent <agent> --device <device> --scopes sync`."
        )
    name = (device or caller.device).strip()
    if not name:
        raise InvalidArgument("device", "name the device that syncs (its ENGRAM_DEVICE, e.g. 'jetson-1').")
    validate_device(name)
    if caller.device and name != caller.device:
        raise PermissionDenied(f"This key syncs device '{caller.device}', not '{name}'.")
    return name


def _parse(change: SyncChange) -> dict[str, Any]:
    try:
        body = json.loads(change.body)
    except ValueError as e:
        raise InvalidArgument("body_json", f"is not JSON ({e}).") from e
    if not isinstance(body, dict) or not isinstance(body.get("memory"), dict):
        raise InvalidArgument("body_json", "must be a memory event body with the memory after the change.")
    if body.get("event") not in MEMORY_STATE_EVENTS or body.get("event") != change.event:
        raise InvalidArgument("event", f"{change.event!r} is not a change a device pushes.")
    for name, value in body.items():  # every field, not only those a save takes (times, counts, vectors)
        check_storable(name, value)
    return body


def _memory(caller: Caller, body: dict[str, Any]) -> Memory:
    try:
        memory = Memory.from_dict(body["memory"])
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidArgument("memory", f"cannot be read ({e}).") from e
    # Every field of the type it declares, every time one Engram stores (a save checks what it takes; a device sends
    # every field), counts where JSON numbers are exact.
    check_fields("memory", memory)
    for name in TIME_FIELDS:
        check_time(f"memory.{name}", getattr(memory, name))
    if memory.handoff is not None:
        check_time("memory.handoff.updated_at", memory.handoff.updated_at)
        check_time("memory.handoff.expires_at", memory.handoff.expires_at)
    if memory.namespace != caller.namespace:
        raise PermissionDenied(f"The change is in namespace '{memory.namespace}'; this key syncs '{caller.namespace}'.")
    if memory.sensitivity == "secret":
        raise InvalidArgument("sensitivity", "secret memories never leave their device.")
    if not 1 <= memory.version <= MAX_COUNT:
        raise InvalidArgument("memory.version", f"must be from 1 to {MAX_COUNT}.")
    if not 0 <= memory.access_count <= MAX_COUNT:
        raise InvalidArgument("memory.access_count", f"must be from 0 to {MAX_COUNT}.")
    memory.history, memory.seq = [], 0
    return memory


@dataclass(frozen=True, slots=True)
class Device:
    """A device as its sync key describes it: its name and the agents that work on it (none named: its own;
    ANY_AGENT: a dev-mode node's local device)."""

    name: str
    agents: frozenset[str]

    def actor(self, caller: Caller, body: dict[str, Any]) -> Caller:
        """Who made the change on the device: one of its agents, on that device, through the device's key."""
        agent = str(body.get("agent") or "") or "anonymous"
        validate_agent(agent)
        if self.agents and ANY_AGENT not in self.agents and agent not in self.agents:
            raise PermissionDenied(
                f"Device '{self.name}' speaks for {', '.join(sorted(self.agents))}; '{agent}' does not work on it. "
                f"Name every agent of the device on its key: `engram keys create --device {self.name} "
                f"--agent {','.join(sorted(self.agents | {agent}))} --scopes sync`."
            )
        team = str(body.get("team") or "")
        return Caller(
            namespace=caller.namespace,
            agent_id=agent,
            scopes=frozenset({"write"}) | (caller.scopes & {ADMIN_SCOPE, PACKS_SCOPE}),
            source=scrub_text(str(body.get("source") or "sync")).text,
            device=self.name,
            team=validate_team(team) if team else "",
        )

    def authorize(
        self, current: Memory, actor: Caller, event: str, pushed: Memory, *, unlinked: Sequence[Memory] = ()
    ) -> tuple[Memory, tuple[str, str] | None]:
        """What REST checks (write-own, a handoff's target, newest wins), and for a key naming no agent: made on this
        device. Answers the memory to append (of another agent's memory, only the supersession or its undo is
        taken, on top of the cluster's version) and the supersession pair an undo names."""
        memory, pair = pushed, None
        if event in (HANDOFF_ACCEPTED, HANDOFF_COMPLETED):
            require_handoff_target(current, actor)
        elif event == MEMORY_SUPERSEDED and not owns(current, actor) and _supersedes(pushed):
            require_may_supersede(current, actor)
            memory = _supersession_of(current, pushed)
        elif event == MEMORY_UNSUPERSEDED and current.status == "superseded":
            require_may_unsupersede(current, actor)
            pair = (current.id, current.superseded_by)
        elif event == MEMORY_UNSUPERSEDED and (dropped := _dropped_claims(current, pushed)):
            for old in unlinked:
                require_may_unsupersede(old, actor)
            memory = memory if owns(current, actor) else _without_claims(current, pushed, dropped)
            pair = (dropped[0], current.id)
        else:
            require_owner(current, actor)
        if not self.agents and ADMIN_SCOPE not in actor.scopes and current.origin.device != self.name:
            raise PermissionDenied(
                f"Memory '{current.id}' was made on '{current.origin.device or 'the cluster'}', not on device "
                f"'{self.name}', whose key names no agent. Name the device's agents on its key: `engram keys "
                f"create --device {self.name} --agent {actor.agent_id} --scopes sync`."
            )
        return memory, pair

    def may_create(self, memory: Memory, actor: Caller) -> None:
        """A new memory is owned by the agent that saves it (or by nobody), as on every other path."""
        if memory.owner_agent in UNOWNED or memory.owner_agent == actor.agent_id or ADMIN_SCOPE in actor.scopes:
            return
        raise PermissionDenied(
            f"A new memory belongs to the agent that saves it: '{actor.agent_id}' cannot save one owned by "
            f"'{memory.owner_agent}'."
        )


def _supersedes(memory: Memory) -> bool:
    """The pushed version is a supersession: superseded, naming its replacement."""
    return memory.status == "superseded" and bool(memory.superseded_by)


def _supersession_of(current: Memory, pushed: Memory) -> Memory:
    """Another agent's supersession: the cluster's version with only status, superseded_by and invalid_at taken
    (newest wins never changes what the memory says)."""
    return dataclasses.replace(
        current, status=pushed.status, superseded_by=pushed.superseded_by, invalid_at=pushed.invalid_at,
        version=pushed.version, updated_at=pushed.updated_at, history=[], seq=0,
    )  # fmt: skip


def _dropped_claims(current: Memory, pushed: Memory) -> list[str]:
    """The memories ``current`` supersedes (its supersedes relations) that the pushed version no longer names."""
    kept = {r.memory_id for r in pushed.relations if r.kind == "supersedes"}
    return [r.memory_id for r in current.relations if r.kind == "supersedes" and r.memory_id not in kept]


def _without_claims(current: Memory, pushed: Memory, dropped: list[str]) -> Memory:
    """Another agent's undo on a replacement: the cluster's version with only those supersedes relations dropped."""
    relations = [r for r in current.relations if not (r.kind == "supersedes" and r.memory_id in dropped)]
    return dataclasses.replace(
        current, relations=relations, version=pushed.version, updated_at=pushed.updated_at, history=[], seq=0
    )


def _scrub(memory: Memory) -> tuple[Memory, tuple[Redaction, ...]]:
    """The pushed memory with every text scrubbed (its labels, metadata and notes too), as the log's scrubbing step
    would, and what was found: the answer says it."""
    clean, found = scrub_value(memory.to_dict())
    if not found:
        return memory, ()
    assert isinstance(clean, dict)
    return Memory.from_dict(clean), merge(found)


def _already_here(event: str, memory: Memory, current: Memory, *, restore: bool) -> bool:
    """A change the cluster already holds: a new memory it has (a re-push), or in a restore a version it has."""
    return memory.version <= current.version if restore else event in MEMORY_CREATED_EVENTS


def _continue(memory: Memory, current: Memory, *, version: int) -> None:
    """The change as the next version of the cluster's memory: what never changes stays as the cluster has it."""
    memory.version = version
    memory.owner_agent = current.owner_agent
    memory.created_at = current.created_at
    memory.origin = current.origin


def _clamp(updated_at: float | None, current: Memory | None, now: float) -> float:
    """A device's time, kept between its previous version's and now: a skewed device clock never puts a version
    before the one it follows, nor in the future (ordering itself comes from the log, never from these)."""
    low = (current.updated_at or 0.0) if current is not None else 0.0
    return min(max(updated_at or now, low), max(now, low))


def _usable(vectors: Any, dim: int) -> TypeGuard[dict[str, Any]]:
    """Vectors of the event-body shape (a dense base64 text of ``dim`` floats and a sparse object) that decode."""
    if not isinstance(vectors, dict) or not isinstance(vectors.get("sparse"), dict):
        return False
    try:
        decode_sparse(vectors)
        dense = decode_dense(vectors)
    except (KeyError, TypeError, ValueError):
        return False
    # A vector the index refuses (a NaN in its float32 bytes; a sparse vector decode_sparse refuses: an index that
    # is not a distinct u32, or without its value) is made again here instead.
    return len(dense) == dim and all(math.isfinite(v) for v in dense)


def _models(vectors: dict[str, Any]) -> tuple[str, str]:
    return str(vectors.get("model")), str(vectors.get("sparse_model"))


def _state_or_none(entry: LogEntry, memory_id: str) -> Memory | None:
    try:
        return state_in(entry, memory_id)
    except NotFound:
        return None


def _answer(record: dict[str, Any], source_id: str) -> Pushed:
    known = {k: record[k] for k in ("accepted", "seq", "version", "reason", "conflict", "redacted") if k in record}
    return Pushed(source_id, bool(known.pop("accepted", False)), **known, duplicate=bool(record.get("accepted")))


def _outcome(pushed: Pushed) -> str:
    """How a pushed change was answered, for engram_sync_pushed_changes_total."""
    if not pushed.accepted:
        return "rejected"
    return "duplicate" if pushed.duplicate else "conflict" if pushed.conflict else "accepted"


def _leaves(entry: LogEntry) -> bool:
    """Whether an entry goes to devices: a change they apply, and never a secret memory's."""
    if entry.event not in PULLED:
        return False
    memory = entry.body.get("memory")
    return not (isinstance(memory, dict) and memory.get("sensitivity") == "secret")


def _outgoing(entry: LogEntry) -> SyncChange:
    body = dict(entry.body)
    body["seq"] = entry.seq
    return SyncChange(str(body.get("source_id") or ""), entry.event, json.dumps(body).encode(), entry.seq)
