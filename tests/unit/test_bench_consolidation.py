"""The consolidation bench (bench/consolidation.py): how it scores what the node proposed and merged, and the
labelled pairs it reads (bench/data/consolidation): sizes, labels, a fixed untouched third, no text twice."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from bench.consolidation import (
    DEFAULT_DATA,
    EXISTING_DATA,
    Pair,
    PairSet,
    Side,
    Verdict,
    _record,
    checks,
    contradiction_figures,
    dedupe_figures,
    load_pairs,
    mistakes,
)

LABELS = {
    "contradiction_pairs.jsonl": {"contradiction", "update", "related", "duplicate"},
    "dedupe_pairs.jsonl": {"duplicate", "distinct", "update"},
}


def _pairs(*labels: str, split: str = "tune") -> list[Pair]:
    return [Pair(Side(f"a{i}"), Side(f"b{i}"), label, split) for i, label in enumerate(labels)]


def test_an_update_counts_as_found_when_proposed_as_update_or_as_contradiction_and_both_ways_are_reported() -> None:
    pairs = _pairs("update", "update", "update", "contradiction")
    verdicts = [Verdict("update"), Verdict("contradiction"), Verdict(), Verdict("update")]
    figures = contradiction_figures(pairs, verdicts)
    assert figures["update_recall_as_update"] == 0.3333
    assert figures["update_recall_any_kind"] == 0.6667
    assert figures["recall"] == 1.0 and figures["recall_as_contradiction"] == 0.0
    assert figures["contradictions_proposed_as_update"] == 1


def test_a_supersession_kind_is_an_update_and_a_missing_kind_a_contradiction() -> None:
    assert Verdict("supersession").as_update and Verdict("update").as_update
    assert not Verdict("contradiction").as_update and not Verdict("").as_update


def test_duplicates_and_related_pairs_proposed_are_false_alarms_against_precision() -> None:
    pairs = _pairs("contradiction", "duplicate", "related", "related")
    verdicts = [Verdict("contradiction", "value"), Verdict("contradiction", "antonym"), Verdict("update"), Verdict()]
    figures = contradiction_figures(pairs, verdicts)
    assert figures["precision"] == 0.3333
    assert (figures["duplicates_flagged"], figures["related_flagged"]) == (1, 1)
    assert figures["rules"] == {"value": 1, "antonym": 1, "-": 1}
    assert "update_recall_as_update" not in figures, "a set without updates reports no update recall"


def test_dedupe_counts_a_save_answered_duplicate_of_as_a_merge_and_every_update_or_distinct_merged() -> None:
    pairs = _pairs("duplicate", "duplicate", "duplicate", "distinct", "update", "update")
    verdicts = [Verdict(merged=True), Verdict(at_save=True), Verdict("contradiction"), Verdict(merged=True),
                Verdict(merged=True), Verdict("update")]  # fmt: skip
    figures = dedupe_figures(pairs, verdicts)
    assert (figures["merged"], figures["merged_at_save"]) == (4, 1)
    assert (figures["precision"], figures["recall"]) == (0.5, 0.6667)
    assert (figures["distinct_merged"], figures["updates_merged"]) == (1, 1)
    assert (figures["duplicates_flagged"], figures["updates_proposed_as_update"]) == (1, 1)


def test_nothing_proposed_or_merged_gives_no_precision_rather_than_a_perfect_one() -> None:
    assert contradiction_figures(_pairs("contradiction"), [Verdict()])["precision"] is None
    assert dedupe_figures(_pairs("duplicate"), [Verdict()])["precision"] is None


def test_checks_put_each_target_beside_its_figure() -> None:
    result = checks("dedupe", {"precision": 0.99, "recall": 0.5, "updates_merged": 0})
    assert result["precision"] == {"value": 0.99, "target": ">= 0.98", "ok": True}
    assert result["recall"]["ok"] is False and result["updates_merged"]["ok"] is True
    assert checks("contradiction", {"precision": None})["precision"]["ok"] is None


def test_mistakes_name_what_was_expected_and_what_the_node_did() -> None:
    pairs = _pairs("update", "related", "contradiction")
    found = mistakes("contradiction", pairs, [Verdict("contradiction", "value"), Verdict(), Verdict(error="boom")])
    assert [(m["label"], m["got"]) for m in found] == [("update", "contradiction"), ("contradiction", "error")]


def test_the_untouched_split_is_scored_but_its_pairs_are_never_written_out() -> None:
    pairs = _pairs("contradiction", "related") + _pairs("contradiction", "related", split="untouched")
    out: dict[str, Any] = {}
    _record(out, PairSet("contradiction", "x.jsonl", pairs), [Verdict(), Verdict("contradiction")] * 2)
    assert out["contradiction"]["tune"]["mistakes"] and "mistakes" not in out["contradiction"]["untouched"]
    assert out["contradiction"]["untouched"]["precision"] == 0.0


def test_each_new_set_has_300_pairs_in_5_domains_with_its_labels_and_both_sides_alike() -> None:
    for name, labels in LABELS.items():
        rows = _rows(name)
        assert len(rows) >= 300 and len({r["domain"] for r in rows}) >= 5
        assert {r["label"] for r in rows} == labels
        for row in rows:
            assert row["a"]["topics"] == row["b"]["topics"] and row["a"]["memory_type"] == row["b"]["memory_type"]
            assert (row.get("older"), row.get("newer")) == (("a", "b") if row["label"] == "update" else (None, None))


def test_every_third_pair_of_a_domain_and_label_is_untouched_and_the_split_is_a_third() -> None:
    for name in LABELS:
        rows = _rows(name)
        seen: Counter[tuple[str, str]] = Counter()
        for row in rows:
            index = seen[row["domain"], row["label"]]
            seen[row["domain"], row["label"]] += 1
            assert row["split"] == ("untouched" if index % 3 == 2 else "tune"), row
        assert abs(sum(r["split"] == "untouched" for r in rows) - len(rows) / 3) < 0.05 * len(rows)


def test_no_memory_text_appears_twice_across_the_new_and_the_older_sets() -> None:
    texts = [
        side.content.casefold()
        for path in (DEFAULT_DATA / "contradiction_pairs.jsonl", DEFAULT_DATA / "dedupe_pairs.jsonl",
                     EXISTING_DATA / "contradiction_pairs.jsonl", EXISTING_DATA / "duplicate_pairs.jsonl")
        for pair in load_pairs(path)
        for side in (pair.a, pair.b)
    ]  # fmt: skip
    assert [t for t, n in Counter(texts).items() if n > 1] == []


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DEFAULT_DATA / name).read_text(encoding="utf-8").splitlines() if line]
