"""Retrieval and latency metrics: recall@k (LoCoMo), nDCG@k (BEIR/trec_eval), percentiles.

The examples below are the self-check; run them with ``python -m doctest bench/metrics.py -v``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_PERCENTILES = (50.0, 95.0, 99.0)


def unique(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order without repeats (a document counts once, at its best rank).

    >>> unique(["a", "b", "a", "c", "b"])
    ['a', 'b', 'c']
    """
    return list(dict.fromkeys(ids))


def recall_at_k(retrieved: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids found among the first k retrieved (LoCoMo's evidence recall).

    >>> recall_at_k(["D1:1", "D1:2", "D2:5"], ["D1:2", "D3:1"], 2)
    0.5
    >>> recall_at_k(["D1:1", "D1:2", "D2:5"], ["D1:2", "D3:1"], 1)
    0.0
    >>> recall_at_k(["x", "x", "y"], ["y"], 2)  # a repeated hit does not push others out
    1.0
    >>> recall_at_k(["a"], [], 5)
    Traceback (most recent call last):
    ...
    ValueError: recall needs at least one relevant id
    """
    wanted = set(relevant)
    if not wanted:
        raise ValueError("recall needs at least one relevant id")
    top = set(unique(retrieved)[:k])
    return len(wanted & top) / len(wanted)


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain: sum of gain / log2(rank + 1), ranks from 1.

    >>> dcg([1, 1])
    1.6309297535714575
    >>> dcg([])
    0.0
    """
    return float(sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1)))


def ndcg_at_k(retrieved: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k with graded relevance, as BEIR (pytrec_eval) computes it: gain = rel, ideal from the qrels.

    Documents with relevance <= 0 give no gain; the ideal ranking uses every positive judgement.

    >>> ndcg_at_k(["d1", "d2"], {"d1": 1})
    1.0
    >>> round(ndcg_at_k(["d2", "d1"], {"d1": 1}), 4)
    0.6309
    >>> round(ndcg_at_k(["d3", "d1", "d2"], {"d1": 2, "d2": 1}), 4)  # dcg 2/log2(3)+1/2 over ideal 2+1/log2(3)
    0.6697
    >>> ndcg_at_k(["d9"], {"d1": 1})
    0.0
    >>> ndcg_at_k(["d1"], {"d1": 0})
    Traceback (most recent call last):
    ...
    ValueError: nDCG needs at least one positive judgement
    """
    ideal = dcg(sorted((r for r in qrels.values() if r > 0), reverse=True)[:k])
    if ideal <= 0:
        raise ValueError("nDCG needs at least one positive judgement")
    gains = [max(qrels.get(doc, 0.0), 0.0) for doc in unique(retrieved)[:k]]
    return dcg(gains) / ideal


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; NaN for no values (shown as "n/a" in the report).

    >>> mean([1, 2, 3])
    2.0
    >>> math.isnan(mean([]))
    True
    """
    items = list(values)
    return sum(items) / len(items) if items else math.nan


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile with linear interpolation between closest ranks (numpy's default method).

    >>> percentile([1, 2, 3, 4], 50)
    2.5
    >>> percentile(list(range(1, 101)), 95)
    95.05
    >>> percentile([7], 99)
    7.0
    >>> math.isnan(percentile([], 50))
    True
    """
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Latency percentiles in milliseconds over ``count`` sequential calls."""

    count: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, seconds: Sequence[float]) -> LatencySummary:
        """Summarises call durations given in seconds.

        >>> s = LatencySummary.of([0.001 * i for i in range(1, 101)])
        >>> (s.count, round(s.p50_ms, 2), round(s.p95_ms, 2), round(s.p99_ms, 2), round(s.max_ms, 1))
        (100, 50.5, 95.05, 99.01, 100.0)
        """
        ms = [s * 1000.0 for s in seconds]
        return cls(
            count=len(ms),
            mean_ms=mean(ms),
            p50_ms=percentile(ms, 50),
            p95_ms=percentile(ms, 95),
            p99_ms=percentile(ms, 99),
            max_ms=max(ms) if ms else math.nan,
        )
