"""Fusion of ranked lists (relative-score or reciprocal-rank), keeping each hit's rank in every list for `explain`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_RRF_K = 10.0  # a low k trusts the top of each list more; 60 is the classic web-search value
FUSIONS = ("relative", "rrf")


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
) -> list[Fused]:
    """Relative-score fusion: each list's scores min-max normalised to [0, 1], then a weighted mean.

    Unlike RRF it keeps how far apart the scores are, so a clear BM25 winner is not flattened to a rank.
    A hit missing from a list scores 0 there.
    """
    fused: dict[str, Fused] = {}
    total = sum((1.0 if weights is None else weights.get(source, 1.0)) for source in lists) or 1.0
    for source, ranked in lists.items():
        if not ranked:
            continue
        weight = (1.0 if weights is None else weights.get(source, 1.0)) / total
        scores = [score for _, score in ranked]
        low, high = min(scores), max(scores)
        span = high - low
        for rank, (item_id, score) in enumerate(ranked, start=1):
            entry = fused.setdefault(item_id, Fused(item_id, 0.0))
            entry.score += weight * ((score - low) / span if span > 0 else 1.0)
            entry.ranks[source] = rank
            entry.scores[source] = score
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)
