"""The Edge index keeps its segments small, so that each build of the vector graph (which holds the GIL and so
stops the whole process) stays short; shards created with the optimizer's defaults get the bound when loaded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import IndexPoint, IndexQuery
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_edge import settings as shard_settings
from engram.model import SearchFilter

pytestmark = pytest.mark.integration
DIM = 384  # the embedder's: 1.5 KB of vector per point
BM25 = Bm25Encoder()


def points(count: int, seed: int) -> list[IndexPoint]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for row in vectors:
        memory_id = uuid7()
        payload = {"id": memory_id, "namespace": "a", "status": "active", "content": memory_id, "_created_ts": 1.0}
        out.append(IndexPoint(memory_id, payload, row.tolist(), BM25.document("memory")))
    return out


def fill(index: EdgeIndex, batches: list[list[IndexPoint]]) -> None:
    """As the indexer does: a batch of points, then the graph build when idle."""
    for batch in batches:
        index.upsert(batch)
        index.maintain()
        index.finish_build()


def segments(index: EdgeIndex) -> int:
    count: int = index._shard.core._shard.info().segments_count  # type: ignore[union-attr]  # a test-only peek
    return count


def nearest(index: EdgeIndex, point: IndexPoint) -> str:
    request = IndexQuery(namespace="a", filter=SearchFilter(), limit=1, dense=point.dense)
    return index.search(request)["dense"][0].id


def test_segments_stay_small_and_a_shard_made_with_the_defaults_gets_the_bound_when_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index"
    # A shard as before the bound: everything merged into one segment.
    monkeypatch.setattr(shard_settings, "SEGMENT_KB", 1_000_000)
    monkeypatch.setattr(shard_settings, "SEGMENTS", 1)
    monkeypatch.setattr(shard_settings, "INDEXING_KB", 32)  # a batch of 100 points gets a graph
    index = EdgeIndex(path, dim=DIM, optimize_after=1)
    first = points(400, seed=1)
    fill(index, [first[i : i + 100] for i in range(0, 400, 100)])
    assert segments(index) <= 2  # merged into one segment (plus an empty appendable one)
    index.close()

    # Loaded with a bound of about 40 points per segment: batches of 100 are never merged any more.
    monkeypatch.setattr(shard_settings, "SEGMENT_KB", 64)
    index = EdgeIndex(path, dim=DIM, optimize_after=1)
    second = points(400, seed=2)
    fill(index, [second[i : i + 100] for i in range(0, 400, 100)])
    assert segments(index) >= 4
    assert index.count("a") == 800
    for point in (first[0], first[-1], second[0], second[-1]):
        assert nearest(index, point) == point.id  # every segment is searched
    index.close()
