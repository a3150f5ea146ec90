"""Fusion of ranked lists (relative-score or reciprocal-rank), keeping each hit's rank in every list for `explain`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_RRF_K = 10.0  # a low k trusts the top of each list more; 60 is the classic web-search value
FUSIONS = ("adaptive", "relative", "rrf")


@dataclass(slots=True)
class Fused:
    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # source -> 1-based rank
    scores: dict[str, float] = field(default_factory=dict)


def rrf(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: float = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuses (id, score) lists by sum of weight / (k + rank); ties keep the order of first appearance."""
    fused: dict[str, Fused] = {}
    for source, ranked in lists.items():
        weight = 1.0 if weights is None else weights.get(source, 1.0)
        for rank, (item_id, score) in enumerate(ranked, start=1):
            entry = fused.setdefault(item_id, Fused(item_id, 0.0))
            entry.score += weight / (k + rank)
            entry.ranks[source] = rank
            entry.scores[source] = score
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)


def relative(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weights: Mapping[str, float] | None = None,
    caps: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Relative-score fusion: each list's scores min-max normalised to [0, 1], then a weighted mean.

    Unlike RRF it keeps how far apart the scores are, so a clear BM25 winner is not flattened to a rank.
    A hit missing from a list scores 0 there. ``caps``: a list's top normalises to 1 only when it reaches its cap
    (a weak best match stays a weak match).
    """
    fused: dict[str, Fused] = {}
    total = sum((1.0 if weights is None else weights.get(source, 1.0)) for source in lists) or 1.0
    for source, ranked in lists.items():
        if not ranked:
            continue
        weight = (1.0 if weights is None else weights.get(source, 1.0)) / total
        scores = [score for _, score in ranked]
        low, high = min(scores), max(max(scores), (caps or {}).get(source, 0.0))
        span = high - low
        for rank, (item_id, score) in enumerate(ranked, start=1):
            entry = fused.setdefault(item_id, Fused(item_id, 0.0))
            entry.score += weight * ((score - low) / span if span > 0 else 1.0)
            entry.ranks[source] = rank
            entry.scores[source] = score
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)


# --- adaptive fusion: the mix follows the kind of query (services/search/queries.py) ----------------------------


@dataclass(frozen=True, slots=True)
class Adaptive:
    """The knobs of adaptive fusion, tuned on the tune halves of bench's facts set, LoCoMo and SciFact
    (docs/search.md has the figures on the halves kept aside).

    BM25 scores are compared with what the query could reach (``reach``: its term count times half the log of the
    index's size, about what a memory holding every term scores), never only with the best hit: when the best BM25
    hit matched one common word, min-max normalisation would make it a perfect match."""

    bm25_named: float = 1.5  # named questions and statements: relative fusion, BM25 weighted against dense 1.0
    bm25_identifier: float = 3.0  # identifiers: exact matching leads
    strong_match: float = 0.5  # a BM25 score of this share of the reach is a full match when normalising
    bm25_question: float = 0.15  # questions naming nothing: dense cosine plus this much of BM25 coverage squared
    coverage_gate: tuple[float, float] = (0.3, 0.6)  # ... counted only as the best BM25 hit covers this much
    dense_gate: tuple[float, float] = (0.1, 0.4)  # ... and as the memory's own meaning is this close to the query


def reach(terms: int, points: int) -> float:
    """About what a memory holding every one of the query's ``terms`` scores in BM25 over ``points`` memories."""
    return max(1, terms) * 0.5 * math.log1p(max(1, points))


def adaptive(
    lists: Mapping[str, Sequence[tuple[str, float]]],
    kind: str,
    reachable: float,
    *,
    sparse: str,
    dense: Sequence[str],
    knobs: Adaptive = Adaptive(),
) -> list[Fused]:
    """Fuses per the query's kind: questions naming nothing are led by meaning (dense cosine, plus BM25 only where
    it matched much of the query and the memory is close in meaning); the others by relative fusion whose BM25
    weight grows for identifiers."""
    if kind != "question":
        weight = knobs.bm25_identifier if kind == "identifier" else knobs.bm25_named
        caps = {sparse: knobs.strong_match * reachable}
        return relative(lists, weights={sparse: weight}, caps=caps)
    fused: dict[str, Fused] = {}
    for source in dense:  # the memory's meaning: the best of its dense and question vectors
        for rank, (item_id, score) in enumerate(lists.get(source, ()), start=1):
            entry = fused.setdefault(item_id, Fused(item_id, score))
            entry.score = max(entry.score, score)
            entry.ranks[source] = rank
            entry.scores[source] = score
    floor = min((f.score for f in fused.values()), default=0.0)  # a BM25-only hit: below every dense candidate
    ranked = lists.get(sparse, ())
    coverage_of_best = ranked[0][1] / reachable if ranked and reachable > 0 else 0.0
    weight = knobs.bm25_question * _ramp(coverage_of_best, *knobs.coverage_gate)
    for rank, (item_id, score) in enumerate(ranked, start=1):
        entry = fused.setdefault(item_id, Fused(item_id, floor))
        entry.ranks[sparse] = rank
        entry.scores[sparse] = score
        entry.score += weight * _ramp(entry.score, *knobs.dense_gate) * (score / reachable) ** 2
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)


def _ramp(value: float, low: float, high: float) -> float:
    """0 below ``low``, 1 above ``high``, linear between."""
    return min(1.0, max(0.0, (value - low) / (high - low)))
