"""Read all, write own: who may change a memory, and which fields an update may name."""

from __future__ import annotations

import pytest

from engram.errors import InvalidArgument, OwnershipError, PermissionDenied
from engram.model import Caller, Memory
from engram.ownership import require_admin, require_owner
from engram.services.ingest.lifecycle import UPDATABLE, _mask


def _memory(owner: str) -> Memory:
    return Memory(id="0190a0b0-0000-7000-8000-000000000001", namespace="n", content="c", owner_agent=owner)


def _caller(agent: str, *scopes: str) -> Caller:
    return Caller(namespace="n", agent_id=agent, scopes=frozenset(scopes or ("read", "write")))


def test_the_owner_an_admin_and_anyone_for_unowned_memories_may_change_it() -> None:
    require_owner(_memory("gemini-cli"), _caller("gemini-cli"))
    require_owner(_memory("gemini-cli"), _caller("ops", "read", "write", "admin"))
    require_owner(_memory("anonymous"), _caller("cursor"))
    require_owner(_memory(""), _caller("cursor"))


def test_update_by_non_owner_is_rejected_with_owner_and_caller_named() -> None:
    with pytest.raises(OwnershipError) as refused:
        require_owner(_memory("gemini-cli"), _caller("claude-code"))
    assert (refused.value.owner, refused.value.caller) == ("gemini-cli", "claude-code")
    assert "Use search_memory to read it, or save your own version." in str(refused.value)


def test_admin_acts_need_the_admin_scope_and_say_how_to_get_it() -> None:
    require_admin(_caller("ops", "admin"))
    with pytest.raises(PermissionDenied, match="--scopes read,write,admin"):
        require_admin(_caller("agent"), "purge memories")


def test_an_update_mask_names_updatable_fields_and_metadata_by_its_public_name() -> None:
    assert _mask(["content", "metadata", "content"]) == ["content", "metadata_json"]
    assert set(UPDATABLE) >= {"content", "tags", "expires_at", "sensitivity"}
    with pytest.raises(InvalidArgument, match="cannot change"):
        _mask(["owner_agent"])
    with pytest.raises(InvalidArgument, match="at least one field"):
        _mask([])
