"""The team summary's Markdown as a value: categories, headlines, and how it fits the content limit."""

from __future__ import annotations

from engram.model import Memory
from engram.services.consolidation.team_summary import MAX_BULLET_CHARS, count_by_category, headline, render

T0 = 1_763_900_000.0


def memory(n: int, memory_type: str = "finding", *, content: str = "", summary: str = "") -> Memory:
    return Memory(
        id=f"id-{n:03d}", namespace="ns", content=content or f"Memory number {n}", owner_agent="claude-code",
        summary=summary, memory_type=memory_type, created_at=T0 - n * 86400,
    )  # fmt: skip


def test_types_outside_the_five_categories_are_other() -> None:
    memories = [memory(1, "finding"), memory(2, "fact"), memory(3, "handoff"), memory(4, "general")]
    assert count_by_category(memories) == {
        "finding": 1, "decision": 0, "hypothesis": 0, "blocker": 0, "action-item": 0, "other": 3
    }  # fmt: skip


def test_a_headline_is_the_summary_else_the_first_line_in_one_trimmed_line() -> None:
    assert headline(memory(1, content="Long content", summary="Short  summary")) == "Short summary"
    assert headline(memory(1, content="\n\n  First   line \nsecond line")) == "First line"
    long = headline(memory(1, content="word " * 100))
    assert len(long) == MAX_BULLET_CHARS and long.endswith("…")


def test_when_it_does_not_fit_the_oldest_bullets_go_and_each_section_says_how_many_more() -> None:
    memories = [memory(n, "decision" if n % 2 else "finding") for n in range(10)]  # newest first
    full, left_out = render("auth", memories, day="2025-11-23", budget=100_000)
    assert left_out == 0 and "more" not in full
    text, left_out = render("auth", memories, day="2025-11-23", budget=len(full.encode()) // 2)

    assert len(text.encode()) <= len(full.encode()) // 2 and left_out > 0
    shown = [m.id for m in memories if m.id in text]
    assert shown == [m.id for m in memories[: len(shown)]], "the newest are kept"
    assert len(shown) + left_out == len(memories)
    for category in ("finding", "decision"):
        hidden = sum(m.id not in text for m in memories if m.memory_type == category)
        assert (f"- …and {hidden} more" in text) == (hidden > 0)
    assert text.splitlines()[0] == "# Team auth: summary of 10 memories (2025-11-23)"


def test_a_budget_smaller_than_the_title_cuts_at_a_character_boundary() -> None:
    text, left_out = render("ünïcödé", [memory(1)], day="2025-11-23", budget=12)
    assert len(text.encode()) <= 12 and left_out == 1
    text.encode().decode()  # whole characters only
