"""What a supersession must be, checked in one place for every path that makes one (ingest: REST, MCP, consolidation;
sync: a device's pushed memory_superseded).

Newest wins across agents (DESIGN.md): any agent of a namespace may mark another's memory superseded by a newer one.
So that this never buries a memory, the memory superseded is an active one (never archived or expired), and its
replacement is an active memory of the same namespace that the superseding agent vouches for: its own (or an unowned
one; an admin vouches for any), never archived, superseded, expiring (expires_at), a handoff or a pack's file. An
undo by the owner stands: once the owner (or an admin) has undone a supersession, no other agent supersedes that
memory again until its owner changes it (a version of the owner's after the undo). And a replacement stays: while it
holds another agent's memory superseded, it is neither archived nor given an expiry (require_not_holding_up).
"""

from __future__ import annotations

from typing import Protocol

from engram.errors import InvalidArgument, NotFound, PermissionDenied
from engram.ids import memory_id as parse_memory_id
from engram.log.events import MEMORY_UNSUPERSEDED
from engram.model import PACK_FILE, Caller, Memory
from engram.ownership import UNOWNED, owns, require_may_supersede
from engram.results import History
from engram.validation import HANDOFF


class Memories(Protocol):
    """Where the memories of a supersession are read: the search service (engram.grpc.clients.SearchClient)."""

    async def get(
        self, caller: Caller, memory_id: str, *, min_seq: int = 0, with_history: bool = False, for_update: bool = False
    ) -> Memory: ...

    async def history(self, caller: Caller, memory_id: str, *, min_seq: int = 0) -> History: ...


async def require_may_supersede_now(state: Memories, caller: Caller, old: Memory) -> None:
    """Raises unless the caller may supersede ``old`` as it is now: who may (require_may_supersede), an active memory
    (never archived or expired), and not one its owner took back from another agent (an undo stands)."""
    require_may_supersede(old, caller)
    if old.status != "active":
        raise InvalidArgument(
            "id", f"memory '{old.id}' is {old.status}; only an active memory is superseded. Save a new memory instead."
        )
    if owns(old, caller) or old.version < 2:
        return
    versions = (await state.history(caller, old.id, min_seq=old.seq)).versions
    # Its latest version is an undo of its own supersession (the one before was superseded); an undo that only
    # dropped a replacement's supersedes relation is not one.
    if len(versions) >= 2 and versions[-1].event == MEMORY_UNSUPERSEDED and versions[-2].status == "superseded":
        raise PermissionDenied(
            f"'{versions[-1].agent_id}' undid a supersession of memory '{old.id}' (owned by '{old.owner_agent}'); it "
            "stays active until its owner changes it. Save your own memory next to it, or ask "
            f"'{old.owner_agent}' to update it."
        )


async def replacement_for(
    state: Memories, caller: Caller, old: Memory, new_id: str, *, min_seq: int = 0, field: str = "new_id"
) -> Memory:
    """The memory ``new_id`` of the caller's namespace once checked as the replacement of ``old``: raises NotFound
    when the namespace has none (another namespace's id included), else InvalidArgument (naming ``field``) unless it
    may be (see the module's docstring)."""
    new_id = parse_memory_id(new_id, field=field)
    if new_id == old.id:
        raise InvalidArgument(field, "a memory cannot supersede itself.")
    new = await state.get(caller, new_id, min_seq=min_seq, for_update=True)  # NotFound: not in this namespace
    require_replacement(new, caller, field=field)
    return new


def require_replacement(new: Memory, caller: Caller, *, field: str = "new_id") -> None:
    """Raises InvalidArgument (naming ``field``) unless ``new`` may replace a memory of the caller's namespace."""
    if new.status == "superseded":  # also what would close a cycle of supersessions
        raise InvalidArgument(
            field, f"'{new.id}' was itself superseded by '{new.superseded_by}'; name that one instead."
        )
    if new.status != "active":
        raise InvalidArgument(field, f"'{new.id}' is {new.status}; a replacement is an active memory.")
    if new.expires_at is not None:
        raise InvalidArgument(
            field, f"'{new.id}' expires; a replacement stays (save one without expires_at, or update this one)."
        )
    if new.memory_type == HANDOFF or new.handoff is not None:
        raise InvalidArgument(field, f"'{new.id}' is a handoff; a replacement is a memory of what holds now.")
    if new.memory_type == PACK_FILE:
        raise InvalidArgument(field, f"'{new.id}' is a file of an expert pack; it replaces no memory.")
    if not owns(new, caller):
        raise InvalidArgument(
            field, f"'{new.id}' is owned by '{new.owner_agent}', you are '{caller.agent_id}': a replacement is a "
            "memory you vouch for, your own. Supersede with content instead (a new memory of yours).",
        )  # fmt: skip


def require_replacement_input(expires_at: float | None, handoff_target: str) -> None:
    """A replacement given as content stays and holds now: no expiry, not a handoff."""
    if expires_at is not None:
        raise InvalidArgument("expires_at", "a replacement stays: leave expires_at empty (it would leave nothing).")
    if handoff_target:
        raise InvalidArgument("handoff_target", "a replacement is not a handoff: create the handoff on its own.")


async def require_not_holding_up(state: Memories, caller: Caller, memory: Memory, action: str) -> None:
    """Raises InvalidArgument when ``memory`` is the current replacement of another agent's memory and ``action``
    (archiving it, giving it an expiry) would leave neither active: a replacement stays, as it was vouched for."""
    for relation in memory.relations:
        if relation.kind != "supersedes":
            continue
        try:
            old = await state.get(caller, relation.memory_id, min_seq=memory.seq, for_update=True)
        except NotFound:
            continue
        others = old.owner_agent not in UNOWNED and old.owner_agent != memory.owner_agent
        if others and old.status == "superseded" and old.superseded_by == memory.id:
            raise InvalidArgument(
                "id", f"memory '{memory.id}' replaces '{old.id}' of '{old.owner_agent}'; {action} would leave neither "
                f"active. Supersede it with a newer memory instead, or ask '{old.owner_agent}' to undo the "
                "supersession.",
            )  # fmt: skip
