"""Read all, write own (DESIGN.md principle 4): who may change a memory, and who may act as an administrator.

Supersession is the exception (newest wins, issue 24): any agent of a namespace may mark another agent's memory
superseded by a newer one, without touching its content or owner; the owner (or an admin) may undo it."""

from __future__ import annotations

from engram.errors import InvalidArgument, OwnershipError, PermissionDenied
from engram.model import Caller, Memory

ADMIN_SCOPE = "admin"
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


def require_owner(memory: Memory, caller: Caller) -> None:
    """Raises OwnershipError unless the caller owns the memory, it is unowned, or the caller is an admin."""
    if owns(memory, caller):
        return
    raise OwnershipError(memory.owner_agent, caller.agent_id)


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
    """True when the caller may write the memory as its own: its owner, anyone for an unowned one, an admin."""
    return memory.owner_agent in UNOWNED or memory.owner_agent == caller.agent_id or is_admin(caller)


def require_may_supersede(memory: Memory, caller: Caller) -> None:
    """Any agent of the namespace supersedes a memory (newest wins), but a handoff still open (pending or accepted)
    only its owner or an admin: another agent's replacement would take it from its target unseen."""
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
