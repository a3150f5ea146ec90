"""What counts as saying the same thing again (engram.sameness): the normalization, and what the key covers."""

from __future__ import annotations

import dataclasses

import pytest

from engram.model import PACK_FILE, Handoff, Memory
from engram.sameness import content_key, key_of, normalized


def memory(content: str = "Use pnpm, not npm.", **fields: object) -> Memory:
    return Memory(id="m1", namespace="default", content=content, owner_agent="claude-code", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "variant",
    [
        "Use pnpm, not npm.",
        "use pnpm, not npm",
        "  USE  pnpm,\n\tnot npm!  ",
        "Use pnpm, not npm...",
        "\uff35\uff53\uff45 pnpm, not npm\u3002",  # full-width letters, a CJK full stop
    ],
)
def test_case_whitespace_width_and_trailing_punctuation_do_not_make_another_memory(variant: str) -> None:
    assert normalized(variant) == "use pnpm, not npm"
    assert key_of(memory(variant)) == key_of(memory())


def test_words_inside_the_text_and_a_closing_bracket_still_count() -> None:
    assert key_of(memory("Use pnpm, not yarn.")) != key_of(memory())
    assert normalized('He said "ship it"') == 'he said "ship it"'
    assert normalized("Deploy (prod).") == "deploy (prod)"


def test_the_scope_is_part_of_the_key_and_the_labels_are_not() -> None:
    base = key_of(memory())
    for scoped in (
        memory(project="shop"), memory(team="platform"), memory(conversation_id="c1"), memory(sensitivity="private"),
        memory(metadata={"pack": "python"}),
    ):  # fmt: skip
        assert key_of(scoped) != base, scoped
    relabelled = memory(memory_type="decision", tags=["ci"], topics=["tooling"], importance="high", summary="pnpm")
    assert key_of(relabelled) == base
    assert key_of(memory(sensitivity="normal")) == content_key({"content": "use pnpm, not npm"})


def test_a_session_summary_repeats_the_same_summary_of_another_session_of_its_project() -> None:
    summary = "Session summary (claude-code, project shop). Asked: fix the cart total. Changed: cart.py."
    replayed = [memory(summary, memory_type="session-summary", project="shop", conversation_id=c) for c in "ab"]
    assert key_of(replayed[0]) == key_of(replayed[1])
    assert key_of(memory(summary, memory_type="session-summary", project="blog")) != key_of(replayed[0])
    facts = [memory(summary, project="shop", conversation_id=c) for c in "ab"]  # any other type: its conversation
    assert key_of(facts[0]) != key_of(facts[1])


def test_handoffs_pack_files_and_empty_text_repeat_nothing() -> None:
    assert key_of(memory(handoff=Handoff("gemini-cli", "pending", 0.0))) == ""
    assert key_of(memory(memory_type=PACK_FILE)) == ""
    assert key_of(memory(" ... ")) == ""


def test_the_key_of_a_memory_and_of_its_json_form_agree() -> None:
    saved = memory(project="shop", metadata={"pack": "python", "n": 1}, conversation_id="c1")
    assert content_key(saved.to_dict()) == key_of(saved)
    assert content_key(dataclasses.replace(saved, content="Other").to_dict()) != key_of(saved)
