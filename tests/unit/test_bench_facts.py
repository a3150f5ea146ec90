"""The discrete-facts dev set (bench/data/facts): its files match the material, meet the brief's minimums, hold
out a third of the sessions, load in save order, and score queries as documented."""

from __future__ import annotations

import json
from collections import Counter

from bench.facts import DEFAULT_FACTS, FactQuery, load_facts, score, summarize, tables
from bench.facts_build import build, check, summary


def test_data_files_are_the_build_of_the_material() -> None:
    memories, queries, sessions = build()
    for name, records in (("memories", memories), ("queries", queries), ("sessions", sessions)):
        on_disk = [
            json.loads(line) for line in (DEFAULT_FACTS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        assert on_disk == records, f"{name}.jsonl is stale: run python -m bench.facts_build"


def test_set_meets_the_minimums_of_the_brief() -> None:
    assert check(summary(*build())) == []


def test_a_third_of_the_sessions_is_held_out_with_its_queries() -> None:
    facts = load_facts()
    splits = Counter(s.split for s in facts.sessions)
    assert splits["untouched"] == len(facts.sessions) // 3
    split_of = {s.id: s.split for s in facts.sessions}
    session_of = {m.id: m.session for m in facts.memories}
    assert all(split_of[session_of[q.answers[0]]] == q.split for q in facts.queries)
    assert {q.split for q in facts.queries} == {"tune", "untouched"}


def test_memories_load_in_save_order_and_changes_come_after_what_they_change() -> None:
    facts = load_facts()
    position = {m.id: i for i, m in enumerate(facts.memories)}
    for memory in facts.memories:
        older = memory.supersedes or memory.newer_than
        if older:
            assert position[older] < position[memory.id]
            assert next(m for m in facts.memories if m.id == older).session != memory.session
    for session, memories in facts.by_session():
        assert [m.order for m in memories] == list(range(1, len(memories) + 1))
        assert {m.agent for m in memories} <= {session.agent}


def test_quick_subset_keeps_only_queries_answered_inside_it() -> None:
    facts = load_facts(sessions=12)
    present = {m.id for m in facts.memories}
    assert len(facts.sessions) == 12 and facts.note
    assert facts.queries and all(set(q.answers) <= present and set(q.outdated) <= present for q in facts.queries)


def test_latest_version_counts_an_outdated_version_ranked_above_the_current_one() -> None:
    query = FactQuery("q", "latest-version", "?", ("new",), "tune", outdated=("old",))
    below = score(query, [frozenset({"new"}), frozenset({"old"})])
    above = score(query, [frozenset({"x"}), frozenset({"old"}), frozenset({"new"})])
    assert (below.rank, below.outdated_above) == (1, False)
    assert (above.rank, above.outdated_above, above.outdated_first) == (3, True, False)
    figures = summarize([below, above], "latest-version")
    assert figures["top1"] == 0.5 and figures["mrr"] == (1 + 1 / 3) / 2 and figures["outdated_above"] == 1


def test_multi_hop_top1_counts_either_fact_and_recall_counts_both() -> None:
    query = FactQuery("h", "multi-hop", "?", ("a", "b"), "untouched")
    outcome = score(query, [frozenset({"b"}), frozenset({"x"})])
    assert (outcome.rank, outcome.recall, outcome.all_found) == (1, 0.5, False)
    result = tables([query], [outcome])
    assert result["untouched"]["kinds"]["multi-hop"]["both@5"] == 0.0
    assert result["tune"]["overall"]["queries"] == 0


def test_hits_below_the_fifth_do_not_count() -> None:
    query = FactQuery("i", "identifier", "JIRA-4821", ("a",), "tune")
    outcome = score(query, [frozenset({f"x{i}"}) for i in range(5)] + [frozenset({"a"})])
    assert (outcome.rank, outcome.recall) == (0, 0.0)
