"""The benches' background memories (bench/background.py): the size asked, a mix of sources and agents, and never
a text of the set they surround."""

from __future__ import annotations

import json

import pytest

from bench import background
from bench.consolidation import DEFAULT_DATA, Pair, Side


def _texts(path: str) -> set[str]:
    texts = set()
    for line in (DEFAULT_DATA / path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts |= {row["a"]["content"], row["b"]["content"]}
    return texts


def test_the_consolidation_background_has_the_size_asked_several_agents_and_no_pair_text() -> None:
    lines = background.for_consolidation(600)
    assert len(lines) == 600 and len({line["content"] for line in lines}) == 600
    assert len(background.by_agent(lines)) >= 4, "other projects' agents and a companion app"
    pairs = _texts("contradiction_pairs.jsonl") | _texts("dedupe_pairs.jsonl")
    assert not pairs & {line["content"] for line in lines}


def test_the_facts_background_never_holds_a_fact_of_the_set() -> None:
    lines = background.for_facts_confusable(1000)  # the pairs' memories first, then LoCoMo's when present
    assert len(lines) == 1000
    facts = {json.loads(line)["content"] for line in background.FACTS_MEMORIES.read_text().splitlines() if line}
    assert not facts & {line["content"] for line in lines}
    assert all("agent" not in record for records in background.by_agent(lines).values() for record in records)


def test_the_facts_background_is_locomo_as_a_companion_app_saves_it() -> None:
    if not background.DEFAULT_LOCOMO.exists():
        pytest.skip(f"no LoCoMo at {background.DEFAULT_LOCOMO} (../shared/data beside the checkout)")
    lines = background.for_facts(3000)
    assert len(lines) == 3000 and set(background.by_agent(lines)) == {background.LOCOMO_AGENT}


def test_a_contradiction_pair_is_grouped_by_the_kind_its_note_names() -> None:
    def kind(why: str) -> str:
        return Pair(Side("x"), Side("y"), "contradiction", why=why).kind

    assert kind("preference reversal") == "preference"
    assert kind("negation of the same finding") == "negation"
    assert kind("two people in a one-person role") == "person"
    assert kind("on/off for the same flag") == "state"
    assert kind("different tool for one role") == "choice"
    assert kind("different port for the same listener") == "value"
    assert Pair(Side("x"), Side("y"), "update").kind == "update"
