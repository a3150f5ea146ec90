"""Reciprocal rank fusion of ranked lists, keeping each hit's rank in every list for `explain`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_RRF_K = 60.0


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
