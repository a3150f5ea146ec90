"""The proto <-> domain conversion is derived from both descriptions; these tests fail when they drift apart."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engram import model
from engram.grpc import wire
from engram.ids import uuid7
from engram.v1 import common_pb2 as pb
from engram.v1 import search_pb2

PAIRS = [
    (pb.Memory, model.Memory),
    (pb.MemoryVersion, model.MemoryVersion),
    (pb.Relation, model.Relation),
    (pb.Handoff, model.Handoff),
    (pb.Origin, model.Origin),
    (pb.MemoryInput, model.MemoryInput),
    (search_pb2.SearchFilter, model.SearchFilter),
]


@pytest.mark.parametrize(("message_type", "cls"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_every_proto_field_has_a_domain_field_and_back(message_type: Any, cls: Any) -> None:
    plan = wire._plan(message_type, cls)
    assert {f.name for f in plan} == {f.name for f in dataclasses.fields(cls)}


def test_a_proto_field_missing_from_the_domain_fails_loudly() -> None:
    @dataclasses.dataclass
    class Partial:  # pb.Origin has device and source_id
        device: str = ""

    with pytest.raises(TypeError, match=r"Origin\.source_id has no field in Partial"):
        wire.to_proto(Partial(), pb.Origin)


def test_a_domain_field_missing_from_the_proto_fails_loudly() -> None:
    @dataclasses.dataclass
    class Extra:
        device: str = ""
        source_id: str = ""
        color: str = ""

    with pytest.raises(TypeError, match=r"Extra fields \['color'\] are not in Origin"):
        wire.to_proto(Extra(), pb.Origin)


def _every_field_set() -> model.Memory:
    """A memory whose every field differs from its default, so a dropped field cannot go unnoticed."""
    return model.Memory(
        id=uuid7(), namespace="ns", content="c", owner_agent="a@d", summary="s", memory_type="team-summary",
        confidence="inferred", topics=["t"], tags=["x", "y"], importance="critical", source="rest", team="tm",
        project="p", conversation_id="cv", metadata={"k": [1, {"v": None}]}, sensitivity="secret",
        created_at=1.25, updated_at=2.5, valid_at=3.0, invalid_at=4.0, expires_at=5.0, version=3,
        history=[model.MemoryVersion(2, "old", "os", "b@d", "mcp", 1.5, 7, True, "archived", "memory_deleted")],
        status="superseded",
        superseded_by=uuid7(), relations=[model.Relation("merged-into", "m", "n")],
        handoff=model.Handoff("b@d", "completed", 6.0), questions=["q?"], access_count=9,
        origin=model.Origin("dev", "dev:4"), seq=11, context="ctx", last_accessed_at=7.5, updated_by="b@d", tier="cold",
    )  # fmt: skip


def test_a_memory_with_every_field_set_round_trips_through_proto_and_json() -> None:
    memory = _every_field_set()
    defaults = model.Memory(id="", namespace="", content="", owner_agent="")
    unchanged = [f.name for f in dataclasses.fields(memory) if getattr(memory, f.name) == getattr(defaults, f.name)]
    assert not unchanged, f"set these fields in the test too: {unchanged}"
    assert wire.memory_from_proto(wire.memory_to_proto(memory)) == memory
    assert model.Memory.from_dict(memory.to_dict()) == memory


def test_unspecified_enums_read_as_the_domain_default_and_unknown_values_are_refused() -> None:
    back = wire.memory_from_proto(pb.Memory(id="i", namespace="n", content="c", owner_agent="a"))
    assert (back.memory_type, back.status, back.importance, back.handoff) == ("general", "active", "normal", None)
    with pytest.raises(ValueError, match="not a MemoryType"):
        wire.input_to_proto(model.MemoryInput(content="c", memory_type="gossip"))


def test_the_published_memory_schema_has_exactly_the_domain_fields() -> None:
    from engram.services.gateway.schemas.results import HandoffOut, MemoryOut, MemoryVersionOut, OriginOut, RelationOut

    memory = _every_field_set()
    shown = memory.to_dict()
    assert set(MemoryOut.model_fields) == set(shown)
    for out, value in (
        (MemoryVersionOut, shown["history"][0]),
        (RelationOut, shown["relations"][0]),
        (HandoffOut, shown["handoff"]),
        (OriginOut, shown["origin"]),
    ):
        assert set(out.model_fields) == set(value), out.__name__
    assert MemoryOut.of(memory).model_dump() == shown


@dataclasses.dataclass
class _Part:
    name: str = ""


@dataclasses.dataclass
class _Thing:
    id: str
    seen_at: float | None = None
    parts: list[_Part] = dataclasses.field(default_factory=list)
    part: _Part = dataclasses.field(default_factory=_Part)
    colour: str = "red"  # the "new field"


def test_a_field_added_to_a_domain_dataclass_is_published_without_editing_the_schemas() -> None:
    from engram.services.gateway.schemas.derived import DerivedModel

    class PartOut(DerivedModel):
        __derived_from__ = _Part

    class ThingOut(DerivedModel):
        __derived_from__ = _Thing

    assert list(ThingOut.model_fields) == ["id", "seen_at", "parts", "part", "colour"]
    shown = ThingOut.model_validate({"id": "x", "seen_at": "2026-01-01T00:00:00Z", "parts": [{"name": "a"}]})
    assert shown.model_dump() == {
        "id": "x", "seen_at": "2026-01-01T00:00:00Z", "parts": [{"name": "a"}], "part": {"name": ""}, "colour": "red"
    }  # fmt: skip
    assert ThingOut.model_json_schema()["required"] == ["id"]
    assert PartOut.model_fields["name"].default == ""


def test_a_caller_with_every_field_set_round_trips_through_proto() -> None:
    # The caller's conversion is written by hand: this fails when a field is added to one side only.
    caller = model.Caller(
        namespace="team-a", agent_id="alice", source="cursor", scopes=frozenset({"read", "admin"}), device="laptop",
        team="auth", agent_from_key=True,
    )  # fmt: skip
    assert {f.name for f in dataclasses.fields(model.Caller)} <= {f.name for f in pb.CallContext.DESCRIPTOR.fields}
    assert all(getattr(caller, f.name) != f.default for f in dataclasses.fields(model.Caller))  # every field set
    assert wire.caller_from_proto(wire.caller_to_proto(caller)) == caller
