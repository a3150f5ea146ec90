"""Read all, write own: who may change a memory, and which fields an update may name; newest wins: who may
supersede a memory and undo it, and what their events say."""

from __future__ import annotations

import dataclasses

import pytest

from engram.errors import InvalidArgument, OwnershipError, PermissionDenied
from engram.log.events import MEMORY_SUPERSEDED, MEMORY_UNSUPERSEDED, MEMORY_UPDATED, event_body
from engram.model import Caller, Handoff, Memory
from engram.ownership import (
    require_admin,
    require_may_supersede,
    require_may_unsupersede,
    require_may_write_type,
    require_owner,
)
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


def test_any_agent_may_supersede_a_memory_but_an_open_handoff_only_its_owner_or_an_admin() -> None:
    require_may_supersede(_memory("gemini-cli"), _caller("claude-code"))
    handoff = _memory("dave")
    handoff.memory_type, handoff.handoff = "handoff", Handoff(target_agent="bob")
    require_may_supersede(handoff, _caller("dave"))
    require_may_supersede(handoff, _caller("ops", "admin"))
    with pytest.raises(PermissionDenied) as refused:
        require_may_supersede(handoff, _caller("alice"))
    assert str(refused.value) == (
        f"Handoff '{handoff.id}' is pending for 'bob'; only its owner 'dave' (or an admin) may supersede it. Save "
        "your own memory instead, or ask 'dave' to update it."
    )
    handoff.handoff = Handoff(target_agent="bob", status="completed")
    require_may_supersede(handoff, _caller("alice"))  # done: a record like any other


def test_only_the_owner_or_an_admin_undoes_a_supersession_and_the_refusal_says_what_to_do() -> None:
    superseded = _memory("gemini-cli")
    superseded.status, superseded.superseded_by = "superseded", "0190a0b0-0000-7000-8000-000000000002"
    require_may_unsupersede(superseded, _caller("gemini-cli"))
    require_may_unsupersede(superseded, _caller("ops", "admin"))
    with pytest.raises(PermissionDenied) as refused:
        require_may_unsupersede(superseded, _caller("claude-code"))
    assert str(refused.value) == (
        f"Memory '{superseded.id}' is owned by 'gemini-cli', you are 'claude-code'. Only its owner (or an admin) may "
        f"undo its supersession; to replace its replacement, supersede '{superseded.superseded_by}'."
    )


def test_supersession_events_name_the_owner_and_the_pair() -> None:
    old = _memory("gemini-cli")
    old.status, old.superseded_by = "superseded", "0190a0b0-0000-7000-8000-000000000002"
    body = event_body(MEMORY_SUPERSEDED, old, _caller("claude-code"))
    assert (body["agent"], body["owner_agent"]) == ("claude-code", "gemini-cli")
    assert (body["superseded_id"], body["superseding_id"]) == (old.id, old.superseded_by)
    old.status, old.superseded_by = "active", ""
    undone = event_body(MEMORY_UNSUPERSEDED, old, _caller("gemini-cli"), pair=(old.id, "x"))
    assert (undone["owner_agent"], undone["superseded_id"], undone["superseding_id"]) == ("gemini-cli", old.id, "x")
    assert "owner_agent" not in event_body(MEMORY_UPDATED, old, _caller("gemini-cli"))


@pytest.mark.parametrize("owner", ["installer", "anonymous", ""])
def test_a_packs_file_is_changed_and_superseded_only_by_its_installer_or_a_packs_key(owner: str) -> None:
    rules = dataclasses.replace(_memory(owner), memory_type="pack-file", metadata={"pack": "reviewer"})
    for check in (require_owner, require_may_supersede):
        with pytest.raises(PermissionDenied, match="file of expert pack 'reviewer'"):
            check(rules, _caller("mallory"))
        check(rules, _caller("curator", "read", "write", "packs"))
        check(rules, _caller("root", "read", "write", "admin"))
        if owner == "installer":
            check(rules, _caller("installer"))


@pytest.mark.parametrize(
    ("memory_type", "allowed"),
    [
        ("pack-file", [_caller("a", "read", "write", "packs"), _caller("a", "admin")]),
        ("team-summary", [_caller("consolidation", "read", "write", "admin")]),
        ("observation", [dataclasses.replace(_caller("a"), source="hook"), _caller("a", "admin")]),
        ("session-summary", [dataclasses.replace(_caller("a"), source="hook")]),
    ],
)
def test_an_internal_type_is_written_only_by_its_own_path(memory_type: str, allowed: list[Caller]) -> None:
    for caller in allowed:
        require_may_write_type(caller, memory_type)
    with pytest.raises(PermissionDenied, match=f"memory_type '{memory_type}' is written only by") as refused:
        require_may_write_type(dataclasses.replace(_caller("a"), source="claude-code"), memory_type)
    assert "Give memory_type one of general, fact" in str(refused.value)
    require_may_write_type(_caller("a"), memory_type, previous=memory_type)  # an update that keeps its type
    require_may_write_type(_caller("a"), "decision")
