"""What an agent reads of a tool's answer (engram.services.gateway.mcp.answers) and of tools/list
(engram.services.gateway.mcp.published), without a node."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import ToolAnnotations
from pydantic import BaseModel

from engram.model import Handoff, Memory, Origin
from engram.services.gateway.mcp.answers import COMPACT_MEMORY, INTERNAL, answer, shape
from engram.services.gateway.mcp.published import lean_annotations, lean_schema
from engram.services.gateway.schemas import results
from engram.services.gateway.schemas.results import HitOut, MemoryOut, SaveResult, SearchResult

MEMORY = Memory(
    id="m1", namespace="default", content="Deploys happen on Tuesdays.", owner_agent="claude-code",
    memory_type="decision", tags=["deploy"], metadata={"n": 1}, source="claude-code", created_at=1.7e9,
    updated_at=1.7e9, origin=Origin(device="laptop"),
)  # fmt: skip


def _result_fields() -> set[str]:
    models = [v for v in vars(results).values() if isinstance(v, type) and issubclass(v, BaseModel)]
    return {name for model in models for name in model.model_fields}


def test_the_compact_fields_are_fields_of_a_memory_and_the_internal_ones_fields_of_a_result() -> None:
    assert set(COMPACT_MEMORY) <= set(MemoryOut.model_fields)
    assert set(INTERNAL) <= _result_fields()


def test_a_hit_is_its_memory_with_its_score_without_empty_internal_or_unremarkable_fields() -> None:
    hit = HitOut(score=0.71428571, memory=MemoryOut.of(MEMORY))
    found = SearchResult(hits=[hit], applied_seq=7, reranked=False, rerank_note="rerank is off")
    assert shape(found) == {
        "hits": [
            {
                "id": "m1", "content": "Deploys happen on Tuesdays.", "memory_type": "decision",
                "owner_agent": "claude-code", "tags": ["deploy"], "updated_at": "2023-11-14T22:13:20.000Z",
                "score": 0.7143,
            }
        ]
    }  # fmt: skip


def test_a_memory_shows_what_an_agent_needs_to_act_when_set() -> None:
    moved = Memory(
        id="m2", namespace="default", content="Hand over the migration.", owner_agent="a", memory_type="handoff",
        status="superseded", superseded_by="m3", handoff=Handoff(target_agent="b"),
    )  # fmt: skip
    shown = shape(SaveResult(id="m2", version=2, seq=9, memory=MemoryOut.of(moved), redactions=[]))
    assert shown["memory"]["status"] == "superseded" and shown["memory"]["superseded_by"] == "m3"
    assert shown["memory"]["handoff"]["target_agent"] == "b"
    assert "redactions" not in shown and "warnings" not in shown
    assert (shown["id"], shown["version"], shown["seq"]) == ("m2", 2, 9)


def test_full_detail_and_a_memory_by_itself_are_shown_whole() -> None:
    memory = MemoryOut.of(MEMORY)
    found = SearchResult(hits=[HitOut(score=0.5, memory=memory)], applied_seq=7, reranked=False)
    assert shape(found, full=True) == found.model_dump(mode="json")
    assert shape(memory) == memory.model_dump(mode="json")


def test_an_answer_carries_the_same_json_as_structured_content_and_as_text() -> None:
    result = answer(SaveResult(id="m1", version=1, seq=3, memory=MemoryOut.of(MEMORY), redactions=[]))
    text: Any = result.content[0]
    assert json.loads(text.text) == result.structured_content
    assert "\n" not in text.text


def test_a_lean_schema_drops_titles_and_null_defaults_and_folds_nullable_types() -> None:
    schema = {
        "type": "object", "title": "toolArguments",
        "properties": {
            "title": {"title": "Title", "anyOf": [{"type": "string", "maxLength": 9}, {"type": "null"}],
                      "default": None, "description": "A property named title stays."},
            "kind": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}], "default": None},
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string"}, {"type": "null"}]},
            "limit": {"type": "integer", "default": 10, "title": "Limit"},
        },
    }  # fmt: skip
    assert lean_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": ["string", "null"], "maxLength": 9, "description": "A property named title stays."},
            "kind": {"enum": ["a", "b", None], "type": ["string", "null"]},
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string"}, {"type": "null"}]},
            "limit": {"type": "integer", "default": 10},
        },
    }


def test_lean_annotations_leave_out_the_hints_mcp_assumes() -> None:
    write = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
    lean = lean_annotations(write)
    assert lean is not None
    assert lean.model_dump(exclude_none=True) == {"destructive_hint": False, "open_world_hint": False}
