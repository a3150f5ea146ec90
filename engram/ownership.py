"""Read all, write own (DESIGN.md principle 4): who may change a memory, and who may act as an administrator."""

from __future__ import annotations

from engram.errors import InvalidArgument, OwnershipError, PermissionDenied
from engram.model import Caller, Memory

ADMIN_SCOPE = "admin"
# Memories saved before agents were identified, or by unidentified callers in dev mode, belong to nobody:
# any agent of the namespace may change them.
UNOWNED = frozenset({"", "anonymous"})


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
    if memory.owner_agent in UNOWNED or memory.owner_agent == caller.agent_id or is_admin(caller):
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
