"""Adaptive fusion, query kinds and the context as a weaker BM25 field (issue 24)."""

from __future__ import annotations

import pytest

from engram.embed.sparse import Bm25Encoder
from engram.services.search.fusion import Adaptive, adaptive, reach, relative
from engram.services.search.queries import query_kind


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("JIRA-4821", "identifier"), ("ERR_CART_LOCKED", "identifier"), ("pnpm -r build", "identifier"),
        ("port 8443", "identifier"), ("infra/argocd/root.yaml", "identifier"), ("`make test`", "identifier"),
        ("what coding tools do I use", "question"), ("why did we change the date library?", "question"),
        ("where is the brand palette defined for the UI kit?", "question"),  # an acronym names nothing
        ("When did Caroline go to the support group?", "named"), ("Vitamin D lowers the risk of falls", "named"),
        ("what do we know about useInfiniteQuery?", "named"), ("at what time does orders_daily run?", "named"),
        ("which iOS version is the minimum?", "named"), ("what does ERR_CART_LOCKED mean?", "named"),  # identifiers
        ("what is the minimum TLS version on the public endpoints?", "question"),  # acronyms are words
        ("", "named"),
    ],
)  # fmt: skip
def test_query_kinds(query: str, kind: str) -> None:
    assert query_kind(query) == kind


def test_a_weak_best_bm25_match_is_not_made_a_perfect_one() -> None:
    """Min-max normalisation made the best BM25 hit 1.0 even when it matched one common word; the cap keeps it
    weak, so the strong semantic match stays first."""
    lists = {"dense": [("meaning", 0.62), ("word", 0.20)], "bm25": [("word", 2.0), ("meaning", 0.5)]}
    assert [f.id for f in relative(lists, weights={"bm25": 1.5})] == ["word", "meaning"]  # the old behaviour
    capped = relative(lists, weights={"bm25": 1.5}, caps={"bm25": 10.0})
    assert [f.id for f in capped] == ["meaning", "word"]


def test_a_question_is_led_by_meaning_and_bm25_adds_only_a_strong_match() -> None:
    lists = {"dense": [("meaning", 0.55), ("word", 0.30)], "bm25": [("word", 3.0)], "questions": []}
    fused = adaptive(lists, "question", reach(6, 1000), sparse="bm25", dense=("dense", "questions"))
    assert [f.id for f in fused] == ["meaning", "word"]
    assert fused[1].ranks == {"dense": 2, "bm25": 1}
    strong = {"dense": [("a", 0.50), ("b", 0.48)], "bm25": [("b", reach(2, 1000))]}  # b holds every query term
    assert adaptive(strong, "question", reach(2, 1000), sparse="bm25", dense=("dense",))[0].id == "b"


def test_identifiers_lean_on_exact_matching() -> None:
    lists = {"dense": [("near", 0.50), ("exact", 0.30)], "bm25": [("exact", 9.0), ("near", 1.0)]}
    fused = adaptive(lists, "identifier", reach(1, 1000), sparse="bm25", dense=("dense",), knobs=Adaptive())
    assert fused[0].id == "exact"


def test_the_context_is_a_weaker_field_than_the_content() -> None:
    bm25 = Bm25Encoder()
    in_content = bm25.fields("JIRA-4821 tracks the flaky login test", "Prefers FastAPI over Flask")
    in_context = bm25.fields("Switched from Cursor to Claude Code", "JIRA-4821 tracks the flaky login test")
    query = bm25.query("JIRA-4821")

    def score(doc: object) -> float:
        weights = dict(zip(doc.indices, doc.values, strict=True))  # type: ignore[attr-defined]
        return sum(weights.get(i, 0.0) for i in query.indices)

    assert score(in_content) > 1.3 * score(in_context) > 0
    assert bm25.fields("same text") == bm25.document("same text"), "no context: the content's own vector"
