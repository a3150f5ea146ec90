"""Session context without a node: scoring (quality, recency, weights, relevance), the Markdown within its token
budget counted with the embedder's real tokenizer, and which resources a log event changes."""

from __future__ import annotations

import uuid

import pytest

from engram.model import Handoff, Memory, Origin
from engram.services.gateway.mcp.prompts import system_prompt
from engram.services.gateway.mcp.resources import memory_markdown
from engram.services.gateway.mcp.subscriptions import changed_uris
from engram.services.gateway.operations.context import (
    MAX_PINNED,
    PINNED_TAG,
    RECENCY_HALF_LIFE_SECONDS,
    TOKEN_BUDGET_DESCRIPTION,
    TokenCounter,
    Weights,
    compose,
    detail,
    quality,
    rank,
    recency,
    title,
)
from tests.helpers.tokens import tokens

NOW = 1_800_000_000.0
DAY = 86400.0
DEFAULT = Weights(0.6, 0.4)


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter()


def memory(content: str = "", *, age_days: float = 0.0, **fields: object) -> Memory:
    values: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "namespace": "ns",
        "content": content or f"The build cache lives in S3 bucket {uuid.uuid4().hex[:8]}",
        "owner_agent": "claude-code",
        "updated_at": NOW - age_days * DAY,
        "created_at": NOW - age_days * DAY,
    }
    values.update(fields)
    return Memory(**values)  # type: ignore[arg-type]


def test_quality_follows_importance_and_lowers_inferred_memories() -> None:
    levels = [quality(memory(importance=level)) for level in ("low", "normal", "high", "critical")]
    assert levels == sorted(levels) and len(set(levels)) == 4
    assert quality(memory(importance="high", confidence="inferred")) < quality(memory(importance="high"))
    assert quality(memory(access_count=50)) > quality(memory(access_count=0))
    assert quality(memory(importance="critical", access_count=10**6)) <= 1.0


def test_recency_halves_every_half_life() -> None:
    assert recency(memory(), NOW) == 1.0
    week = RECENCY_HALF_LIFE_SECONDS / DAY
    assert recency(memory(age_days=week), NOW) == pytest.approx(0.5)
    assert recency(memory(age_days=2 * week), NOW) == pytest.approx(0.25)


def test_weights_decide_between_important_and_recent() -> None:
    important_old = memory(importance="critical", age_days=10)
    trivial_new = memory(importance="low")
    by_quality = rank([important_old, trivial_new], [], Weights(1.0, 0.0), now=NOW)
    by_recency = rank([important_old, trivial_new], [], Weights(0.0, 1.0), now=NOW)
    assert [c.memory.id for c in by_quality] == [important_old.id, trivial_new.id]
    assert [c.memory.id for c in by_recency] == [trivial_new.id, important_old.id]


def test_a_search_hit_adds_its_relevance_and_each_memory_counts_once() -> None:
    plain, hit, weak = memory(importance="high"), memory(importance="low"), memory(importance="normal")
    ranked = rank([plain, hit, weak], [(hit, 0.03), (weak, 0.01)], DEFAULT, now=NOW)
    assert [c.memory.id for c in ranked] == [hit.id, plain.id, weak.id]  # the weakest hit gets no relevance
    negative = rank([], [(hit, -2.0), (weak, -7.5)], DEFAULT, now=NOW)  # a reranker's logits
    assert [c.memory.id for c in negative] == [hit.id, weak.id]


@pytest.mark.parametrize("budget", [50, 100, 300, 800, 2000])
def test_the_markdown_stays_within_the_budget_counted_with_the_embedders_tokenizer(
    counter: TokenCounter, budget: int
) -> None:
    memories = [
        memory(f"Decision {i}: " + "we keep the retry budget at three attempts " * (1 + i % 4)) for i in range(40)
    ]
    memories[0].tags.append(PINNED_TAG)
    out = compose(rank(memories, [], DEFAULT, now=NOW), counter, budget)
    assert out.tokens == tokens(out.markdown) <= budget
    assert out.token_budget == budget
    assert out.memories, "something fits in every budget"
    assert out.omitted == len(memories) - len(out.memories)


def test_pinned_memories_come_first_in_detail_capped_then_top_three_then_titles(counter: TokenCounter) -> None:
    pinned = [memory(f"Pinned rule {i}: never push to main on Fridays", tags=[PINNED_TAG]) for i in range(7)]
    others = [memory(f"Finding {i}: the flaky test waits on a real clock", importance="high") for i in range(6)]
    out = compose(rank([*others, *pinned], [], DEFAULT, now=NOW), counter, 8000)
    shown = [(m.pinned, m.shown) for m in out.memories]
    assert shown[:MAX_PINNED] == [(True, "detail")] * MAX_PINNED
    assert shown[MAX_PINNED : MAX_PINNED + 3] == [(False, "detail")] * 3
    assert all(how == "title" for _, how in shown[MAX_PINNED + 3 :])
    assert sum(1 for pinned_, _ in shown if pinned_) == 7  # the pinned ones past the cap are listed as titles
    markdown = out.markdown
    assert markdown.index("## Pinned") < markdown.index("## Most useful now") < markdown.index("## More")
    for m in out.memories:
        assert m.id in markdown


def test_a_completed_handoff_is_listed_by_title_never_among_the_most_useful_now(counter: TokenCounter) -> None:
    def handoff(status: str) -> Memory:
        return memory(
            f"Handoff ({status}): finish the flaky-test fix", memory_type="handoff", importance="critical",
            handoff=Handoff(target_agent="codex", status=status),
        )  # fmt: skip

    done, open_ = handoff("completed"), handoff("accepted")
    others = [memory(f"Finding {i}: the flaky test waits on a real clock", age_days=3) for i in range(3)]
    candidates = rank([done, open_, *others], [], DEFAULT, now=NOW)
    assert candidates[0].memory.id in {done.id, open_.id}  # by score a completed handoff would lead
    out = compose(candidates, counter, 8000)
    how = {m.id: m.shown for m in out.memories}
    assert how[done.id] == "title" and how[open_.id] == "detail"
    assert [m.shown for m in out.memories].count("detail") == 3
    assert out.markdown.index("## More") < out.markdown.index(title(done))
    pinned_done = memory("Handoff kept on purpose", memory_type="handoff", tags=[PINNED_TAG],
                         handoff=Handoff(target_agent="codex", status="completed"))  # fmt: skip
    assert compose(rank([pinned_done], [], DEFAULT, now=NOW), counter, 8000).memories[0].shown == "detail"


def test_a_detailed_memory_too_long_for_the_budget_becomes_a_title(counter: TokenCounter) -> None:
    long = memory(
        "The deployment runbook. " + "Step: check the dashboards and the queues. " * 200, importance="critical"
    )
    short = memory("Use pnpm, not npm.")
    out = compose(rank([long, short], [], DEFAULT, now=NOW), counter, 300)
    assert {m.id: m.shown for m in out.memories} == {short.id: "detail", long.id: "title"}


def test_only_when_nothing_else_fits_a_detailed_memory_is_cut(counter: TokenCounter) -> None:
    long = memory("The deployment runbook. " + "Step: check the dashboards and the queues. " * 200, summary="Runbook")
    out = compose(rank([long], [], DEFAULT, now=NOW), counter, 120)
    assert [m.shown for m in out.memories] == ["truncated"]
    assert "Step: check the dashboards" in out.markdown and out.markdown.rstrip().endswith(f"id {long.id}_")
    assert tokens(out.markdown) <= 120


def test_an_empty_namespace_says_how_to_start(counter: TokenCounter) -> None:
    out = compose([], counter, 100)
    assert "save_memory" in out.markdown and out.memories == [] and out.candidates == 0


def test_detail_shows_content_type_owner_date_and_id_and_a_title_is_one_line() -> None:
    m = memory("First line\nsecond line", memory_type="decision", importance="high", origin=Origin(device="laptop"))
    block = detail(m)
    assert block.startswith("### First line\nsecond line\n")
    assert "decision · high · claude-code@laptop · 2027-01-15" in block and m.id in block
    assert title(memory("x " * 200)).endswith("…") and "\n" not in title(memory("a\nb"))


def test_no_text_is_said_twice_neither_a_long_first_line_nor_a_summary_repeating_a_fix(counter: TokenCounter) -> None:
    fix = (
        "Fixed: `nginx -t` failed with unknown directive proxy_request_bufering in site.conf:41; it passed after "
        "correcting the directive's spelling."
    )
    summary = f"Session summary (claude-code, project media-portal). Asked: uploads over 10 MB fail. Learned: {fix}"
    observation = memory(fix, memory_type="observation", importance="high")
    recap = memory(summary, memory_type="session-summary", age_days=0.1)
    out = compose(rank([observation, recap], [], DEFAULT, now=NOW), counter, 8000)
    assert [m.shown for m in out.memories] == ["detail", "detail"]
    assert out.markdown.count("proxy_request_bufering") == 1, out.markdown
    assert f"### {fix}\n_observation" in out.markdown  # the whole line is the heading, not cut then repeated
    assert "Asked: uploads over 10 MB fail. Learned: (above)\n_session-summary" in out.markdown


def test_a_change_names_the_resources_that_may_read_differently() -> None:
    body = {"memory_id": "m1", "memory": {"memory_type": "fact", "tags": [], "project": ""}}
    assert changed_uris("memory_saved", body) == ["engram://recent", "engram://memory/m1"]
    preference = {"memory_id": "m2", "memory": {"memory_type": "preference", "tags": [], "project": "api"}}
    assert set(changed_uris("memory_updated", preference)) == {
        "engram://recent", "engram://memory/m2", "engram://projects", "engram://profile",
    }  # fmt: skip
    style = {"memory_id": "m3", "memory": {"memory_type": "general", "tags": ["workflow"]}}
    assert "engram://profile" in changed_uris("handoff_created", style)
    assert len(changed_uris("memory_purged", {"memory_id": "m4"})) == 4
    assert changed_uris("memory_accessed", {"memory_ids": ["m1"]}) == []


def test_the_memory_resource_lists_the_fields_that_are_set() -> None:
    m = memory("Use pnpm.", memory_type="preference", project="web", tags=["tooling"], metadata={"n": 1})
    text = memory_markdown(m)
    assert text.startswith("# Use pnpm.\n\nUse pnpm.\n")
    for line in ("- **type**: preference", "- **project**: web", "- **tags**: tooling", '- **metadata**: `{"n": 1}`'):
        assert line in text
    assert "**team**" not in text and "**handoff**" not in text


def test_the_system_prompt_names_the_agent_and_project_when_known() -> None:
    text = system_prompt(None)
    assert "session_context" in text and "create_handoff" in text and "list_handoffs" in text
    assert "search_memory" in text and "memory_type" in text and "<your agent id>" in text
    assert "50-8000" in TOKEN_BUDGET_DESCRIPTION
