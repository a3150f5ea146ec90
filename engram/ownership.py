"""Read all, write own (DESIGN.md principle 4): who may change a memory, and who may act as an administrator.

Supersession is the exception (newest wins, issue 24): any agent of a namespace may mark another agent's memory
superseded by a newer one, without touching its content or owner; the owner (or an admin) may undo it, and an undo
stands (engram.supersession says what a supersession must be).

The internal memory types (engram.model.INTERNAL_TYPES) are written only by the path that owns them: pack files by
the pack installer or a key with the packs scope, team summaries by consolidation (an admin), observations and
session summaries by agents' hooks (require_may_write_type)."""

from __future__ import annotations

from engram.errors import InvalidArgument, OwnershipError, PermissionDenied
from engram.model import INTERNAL_TYPES, PACK_FILE, SAVABLE_TYPES, Caller, Memory

ADMIN_SCOPE = "admin"
PACKS_SCOPE = "packs"  # installs expert packs and changes their files
HOOK_SOURCE = "hook"  # the source agents' hooks deliver captures with (engram.hooks.spool: X-Engram-Source)
TEAM_SUMMARY = "team-summary"
HOOK_TYPES = ("observation", "session-summary")
# Memories saved before agents were identified, or by unidentified callers in dev mode, belong to nobody:
# any agent of the namespace may change them.
UNOWNED = frozenset({"", "anonymous"})
# A handoff in these states is still addressed to its target: only its owner (or an admin) supersedes it.
OPEN_HANDOFF = frozenset({"pending", "accepted"})


def is_admin(caller: Caller) -> bool:
    return ADMIN_SCOPE in caller.scopes


def require_admin(caller: Caller, action: str = "do this") -> None:
    """Raises PermissionDenied unless the caller has the admin scope."""
    if not is_admin(caller):
        raise PermissionDenied(
            f"Only an admin may {action}; this caller's scopes are {', '.join(sorted(caller.scopes)) or 'none'}. "
            "Use a key created with `engram keys create --scopes read,write,admin`."
        )


def may_write_packs(caller: Caller) -> bool:
    """A key with the packs (or admin) scope changes any pack's files."""
    return PACKS_SCOPE in caller.scopes or is_admin(caller)


def require_owner(memory: Memory, caller: Caller) -> None:
    """Raises OwnershipError unless the caller owns the memory, it is unowned, or the caller is an admin; a pack's file
    only its installer or a packs key changes (require_pack_writer)."""
    if memory.memory_type == PACK_FILE:
        require_pack_writer(memory, caller)
    if owns(memory, caller):
        return
    raise OwnershipError(memory.owner_agent, caller.agent_id)


def require_pack_writer(memory: Memory, caller: Caller, action: str = "change") -> None:
    """A pack's file is changed only by the agent that installed it or a key with the packs (or admin) scope."""
    if owns(memory, caller):
        return
    pack = memory.metadata.get("pack", "")
    raise PermissionDenied(
        f"Memory '{memory.id}' is a file of expert pack '{pack}', installed by '{memory.owner_agent or 'nobody'}'; "
        f"only its installer or a key with the packs (or admin) scope may {action} it. Save your own memory instead "
        "(capture_memory keeps what a pack learns)."
    )


def require_may_write_type(caller: Caller, memory_type: str, *, previous: str = "") -> None:
    """Raises PermissionDenied when the caller writes an internal memory type (engram.model.INTERNAL_TYPES) that is
    not its path's: a new memory of that type, or one changed into it. A memory that already has the type keeps it
    (``previous``): who may change it at all is the ownership check's (require_owner)."""
    if memory_type not in INTERNAL_TYPES or memory_type == previous:
        return
    if memory_type == PACK_FILE and may_write_packs(caller):
        return
    if memory_type in HOOK_TYPES and (caller.source == HOOK_SOURCE or is_admin(caller)):
        return
    if memory_type == TEAM_SUMMARY and is_admin(caller):
        return
    writers = {
        PACK_FILE: "the pack installer (install_engram, POST /v1/packs) or a key with the packs scope",
        TEAM_SUMMARY: "consolidation (consolidate_team)",
    }.get(memory_type, "agents' hooks (engram hooks install)")
    raise PermissionDenied(
        f"memory_type '{memory_type}' is written only by {writers}. Give memory_type one of {', '.join(SAVABLE_TYPES)}."
    )


def require_handoff_target(memory: Memory, caller: Caller) -> None:
    """Only the agent a handoff is addressed to moves it on (or an admin): the one exception to write-own.

    A target written as agent@device names one device of the agent; a bare agent id names it on any device.
    """
    handoff = memory.handoff
    if handoff is None:
        raise InvalidArgument(
            "id", f"memory '{memory.id}' is not a handoff (it is a {memory.memory_type} memory); only handoffs move."
        )
    if handoff.target_agent in (caller.agent_id, caller.identity) or is_admin(caller):
        return
    raise PermissionDenied(
        f"Handoff '{memory.id}' is addressed to '{handoff.target_agent}', you are '{caller.identity}'. Only "
        f"'{handoff.target_agent}' (or an admin) may accept or complete it; read it with get_memory."
    )


def owns(memory: Memory, caller: Caller) -> bool:
    """True when the caller may write the memory as its own: its owner, anyone for an unowned one, an admin. A pack's
    file is nobody's to take: its installer's (when named) or a packs key's."""
    if memory.memory_type == PACK_FILE:
        return may_write_packs(caller) or (memory.owner_agent not in UNOWNED and memory.owner_agent == caller.agent_id)
    return memory.owner_agent in UNOWNED or memory.owner_agent == caller.agent_id or is_admin(caller)


def require_may_supersede(memory: Memory, caller: Caller) -> None:
    """Any agent of the namespace supersedes a memory (newest wins), but a handoff still open (pending or accepted)
    only its owner or an admin: another agent's replacement would take it from its target unseen; and a pack's
    file only who may change it (its installer or a packs key), since superseding it takes it out of its pack."""
    if memory.memory_type == PACK_FILE:
        require_pack_writer(memory, caller, "supersede")
    handoff = memory.handoff
    if handoff is None or handoff.status not in OPEN_HANDOFF or owns(memory, caller):
        return
    raise PermissionDenied(
        f"Handoff '{memory.id}' is {handoff.status} for '{handoff.target_agent}'; only its owner "
        f"'{memory.owner_agent}' (or an admin) may supersede it. Save your own memory instead, or ask "
        f"'{memory.owner_agent}' to update it."
    )


def require_may_unsupersede(memory: Memory, caller: Caller) -> None:
    """Only the owner of a superseded memory (anyone for an unowned one, or an admin) undoes its supersession."""
    if owns(memory, caller):
        return
    instead = f"; to replace its replacement, supersede '{memory.superseded_by}'" if memory.superseded_by else ""
    raise PermissionDenied(
        f"Memory '{memory.id}' is owned by '{memory.owner_agent}', you are '{caller.agent_id}'. Only its owner (or "
        f"an admin) may undo its supersession{instead}."
    )
