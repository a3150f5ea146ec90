"""The memory model: JSON form, protobuf round trips, ids, fusion, validation and settings."""

from __future__ import annotations

import math
import uuid

import pytest

from engram.config import Settings, SettingsError
from engram.errors import InvalidArgument
from engram.grpc import wire
from engram.ids import is_uuid, uuid7
from engram.model import Handoff, Memory, MemoryInput, MemoryVersion, Relation, SearchFilter
from engram.services.search.fusion import relative, rrf
from engram.validation import Limits, validate

LIMITS = Limits(max_content_bytes=100, max_metadata_bytes=100)


def _memory() -> Memory:
    return Memory(
        id=uuid7(), namespace="team", content="c", owner_agent="a@d", memory_type="action-item",
        metadata={"n": 5, "nested": {"a": [1, 2.5, None]}}, created_at=1700000000.125, tags=["x"],
        history=[MemoryVersion(1, "old", updated_at=1.5)], relations=[Relation("supersedes", "m1")],
        handoff=Handoff("b@d", "accepted", 2.0),
    )  # fmt: skip


def test_memory_survives_json_and_protobuf_round_trips() -> None:
    memory = _memory()
    assert Memory.from_dict(memory.to_dict()) == memory
    assert wire.memory_from_proto(wire.memory_to_proto(memory)) == memory


def test_metadata_comes_back_exactly_as_given() -> None:
    back = wire.memory_from_proto(wire.memory_to_proto(_memory()))
    assert back.metadata == {"n": 5, "nested": {"a": [1, 2.5, None]}}
    assert isinstance(back.metadata["n"], int)


def test_json_times_are_rfc3339_utc() -> None:
    assert _memory().to_dict()["created_at"] == "2023-11-14T22:13:20.125Z"


def test_filter_and_input_round_trip() -> None:
    flt = SearchFilter(tags=["a", "b"], owner_agent="x", memory_types=["fact"], created_after=5.0, statuses=["active"])
    assert wire.filter_from_proto(wire.filter_to_proto(flt)) == flt
    draft = MemoryInput(content="c", memory_type="team-summary", expires_at=10.5, metadata_json='{"a":1}')
    assert wire.input_from_proto(wire.input_to_proto(draft)) == draft


def test_uuid7_is_a_time_ordered_version_7_uuid() -> None:
    ids = [uuid7() for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 and is_uuid(i) for i in ids[:10])


def test_rrf_prefers_items_ranked_well_by_both_sources_and_keeps_ranks() -> None:
    fused = rrf({"dense": [("a", 0.9), ("b", 0.8)], "bm25": [("b", 3.0), ("c", 2.0)]}, k=60)
    assert [f.id for f in fused] == ["b", "a", "c"]
    assert fused[0].ranks == {"dense": 2, "bm25": 1}


def test_relative_fusion_keeps_score_gaps_and_weights_sources() -> None:
    lists = {"dense": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "bm25": [("c", 9.0), ("a", 1.0)]}
    fused = relative(lists, weights={"dense": 1.0, "bm25": 1.0})
    assert [f.id for f in fused] == ["a", "c", "b"]  # a: (1 + 0) / 2, c: (0 + 1) / 2 but after a by order
    assert fused[0].score == pytest.approx(0.5)
    heavy = relative(lists, weights={"dense": 1.0, "bm25": 3.0})
    assert heavy[0].id == "c" and heavy[0].ranks == {"dense": 3, "bm25": 1}
    assert relative({"dense": [("only", 0.3)]})[0].score == 1.0


def test_validation_names_the_field_and_what_to_do() -> None:
    with pytest.raises(InvalidArgument, match="content: is required"):
        validate(MemoryInput(content="   "), LIMITS)
    with pytest.raises(InvalidArgument, match="content: is 101 bytes; the limit is 100"):
        validate(MemoryInput(content="x" * 101), LIMITS)
    with pytest.raises(InvalidArgument, match="memory_type: 'fakt' is not one of"):
        validate(MemoryInput(content="c", memory_type="fakt"), LIMITS)
    with pytest.raises(InvalidArgument, match="metadata: must be a JSON object"):
        validate(MemoryInput(content="c", metadata_json="[1]"), LIMITS)


@pytest.mark.parametrize("field", ["valid_at", "invalid_at", "expires_at"])
@pytest.mark.parametrize("moment", [-62135596800.5, 253402300800.0, float("nan"), float("inf")])
def test_validation_refuses_times_outside_the_years_0001_to_9999(field: str, moment: float) -> None:
    # The ingest side of every write path (the gateway refuses such text first, quoting it).
    with pytest.raises(InvalidArgument) as info:
        validate(MemoryInput(content="c", **{field: moment}), LIMITS)
    assert info.value.field == field
    assert ("outside the times Engram stores" if math.isfinite(moment) else "RFC 3339") in str(info.value)


def test_validation_fills_defaults_and_normalises_labels() -> None:
    clean = validate(MemoryInput(content=" c ", tags=["a", " a", "", "b"], memory_type="Action_Item"), LIMITS)
    assert clean.draft.content == "c"
    assert clean.draft.tags == ["a", "b"]
    assert clean.draft.memory_type == "action-item" and clean.draft.importance == "normal"


def test_settings_read_env_then_flags_and_reject_bad_values() -> None:
    settings = Settings.from_env({"ENGRAM_PORT": "9000", "ENGRAM_DEV_MODE": "off"}, home="/tmp/h")
    assert settings.port == 9000 and settings.dev is False
    assert Settings.from_env({"ENGRAM_PORT": "9000"}, port=1234).port == 1234
    assert not Settings.from_env({}, host="0.0.0.0").dev
    with pytest.raises(SettingsError, match="ENGRAM_PORT"):
        Settings.from_env({"ENGRAM_PORT": "many"})
    with pytest.raises(SettingsError, match="ENGRAM_ACCESS_FLUSH_SECONDS must be > 0"):
        Settings.from_env({"ENGRAM_ACCESS_FLUSH_SECONDS": "0"})
    assert Settings.from_env({"ENGRAM_EXPIRY_INTERVAL_SECONDS": "0"}).expiry_interval_seconds == 0
    assert Settings.from_env({}).embed_workers == 1
    assert Settings.from_env({"ENGRAM_EMBED_WORKERS": "0"}).embed_workers == 0
    with pytest.raises(SettingsError, match="ENGRAM_EMBED_WORKERS must be >= 0"):
        Settings.from_env({"ENGRAM_EMBED_WORKERS": "-1"})
