"""The kernel's rules on values no index can store (issue 33): non-finite numbers, integers beyond 64 bits and lone
surrogates are refused with the path of the value, at any depth, in the metadata and in every text of a memory; a
memory read from JSON (a device's push) holds the types its fields declare."""

from __future__ import annotations

from typing import Any

import pytest

from engram.errors import InvalidArgument
from engram.model import Handoff, Memory, MemoryInput, Relation
from engram.packs.format import parse_meta
from engram.validation import MAX_STORED_INT, MIN_STORED_INT, Limits, check_fields, check_storable, validate

LIMITS = Limits(max_content_bytes=1000, max_metadata_bytes=10_000)


@pytest.mark.parametrize(
    ("raw", "path", "words"),
    [
        ('{"x": NaN}', "metadata.x", "is NaN"),
        ('{"x": Infinity}', "metadata.x", "is Infinity"),
        ('{"x": -Infinity}', "metadata.x", "is -Infinity"),
        ('{"x": 1e400}', "metadata.x", "too large for a double"),
        ('{"a": [1, {"b": -1e999}]}', "metadata.a[1].b", "is -Infinity"),
        ('{"x": 9223372036854775808}', "metadata.x", "beyond 64 bits"),
        ('{"x": -9223372036854775809}', "metadata.x", "beyond 64 bits"),
        ('{"x": 18446744073709551616}', "metadata.x", "beyond 64 bits"),
        ('{"x": "a\\ud800b"}', "metadata.x", "lone UTF-16 surrogate"),
        ('{"\\udfff": 1}', "metadata", "a key with a lone UTF-16 surrogate"),
        ('{"two words": NaN}', 'metadata["two words"]', "is NaN"),
        ('{"x": 1' + "0" * 5000 + "}", "metadata", "is not valid JSON"),
    ],
)
def test_metadata_the_index_cannot_store_is_refused_naming_its_path(raw: str, path: str, words: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate(MemoryInput(content="c", metadata_json=raw), LIMITS)
    assert info.value.field == path and words in info.value.problem


def test_values_at_the_limits_the_index_stores_pass() -> None:
    edges = [1e308, -1e308, 5e-324, -0.0, 0.0, MAX_STORED_INT, MIN_STORED_INT, "a\x00b", "\u202eRTL", "😀", "", None]
    raw = '{"edges": [1e308, -1e308, 5e-324, -0.0, 0.0, 9223372036854775807, -9223372036854775808, "a\\u0000b", '
    raw += '"\\u202eRTL", "\\ud83d\\ude00", "", null]}'  # a surrogate pair is one character, not two lone ones
    clean = validate(MemoryInput(content="c", metadata_json=raw), LIMITS)
    assert clean.metadata == {"edges": edges}


@pytest.mark.parametrize("field", ["content", "summary", "context", "team", "project", "conversation_id"])
def test_a_lone_surrogate_in_any_text_is_refused_naming_the_field(field: str) -> None:
    values: dict[str, Any] = {"content": "c", field: "x\udc00"}
    with pytest.raises(InvalidArgument) as info:
        validate(MemoryInput(**values), LIMITS)
    assert info.value.field == field


def test_a_lone_surrogate_in_a_label_names_its_position() -> None:
    with pytest.raises(InvalidArgument) as info:
        validate(MemoryInput(content="c", tags=["ok", "\ud83d"]), LIMITS)
    assert info.value.field == "tags[1]"


def test_nesting_far_past_the_recursion_limit_is_walked_without_recursion() -> None:
    deep: Any = float("nan")
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(InvalidArgument) as info:
        check_storable("memory", {"metadata": deep})
    field = info.value.field
    assert field.startswith("memory.metadata[0][0]") and "...[0][0]" in field and len(field) < 400, field


def test_a_long_or_odd_key_is_quoted_and_cut_in_the_path() -> None:
    with pytest.raises(InvalidArgument) as info:
        check_storable("metadata", {"k\r\n" + "x" * 100: float("nan")})
    assert info.value.field == 'metadata["k\\r\\n' + "x" * 34 + '..."]'


def test_a_pack_meta_json_holding_nan_is_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"meta.json.version: is NaN"):
        parse_meta('{"name": "p", "description": "d", "version": NaN}')


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"access_count": 1.5}, "memory.access_count", "must be a whole number, not a number with a fraction"),
        ({"version": True}, "memory.version", "must be a whole number, not true or false"),
        ({"summary": ["a"]}, "memory.summary", "must be text, not a list"),
        ({"tags": ["ok", 3]}, "memory.tags[1]", "must be text, not a whole number"),
        ({"metadata": [1]}, "memory.metadata", "must be a JSON object, not a list"),
        ({"conversation_id": {"a": 1}}, "memory.conversation_id", "must be text, not an object"),
        ({"handoff": {"target_agent": 5}}, "memory.handoff.target_agent", "must be text"),
        ({"relations": [{"kind": "supersedes", "memory_id": None}]}, "memory.relations[0].memory_id", "not null"),
    ],
)
def test_a_memory_read_from_json_holds_the_types_its_fields_declare(
    changes: dict[str, Any], path: str, words: str
) -> None:
    """A device pushes whole memories as JSON: a field of another type is refused, naming it (sync's edge)."""
    memory = Memory.from_dict({"id": "m", "namespace": "n", "content": "c", "owner_agent": "a", **changes})
    with pytest.raises(InvalidArgument) as info:
        check_fields("memory", memory)
    assert info.value.field == path and words in info.value.problem


def test_a_memory_of_every_field_passes_the_type_check() -> None:
    memory = Memory(
        id="m", namespace="n", content="c", owner_agent="a", tags=["t"], metadata={"x": [1, {"y": None}]},
        created_at=1.0, relations=[Relation("supersedes", "m0")], handoff=Handoff("b", "pending", 2.0, 3.0),
        questions=["q"], access_count=2**53 - 1,
    )  # fmt: skip
    check_fields("memory", Memory.from_dict(memory.to_dict()))
