"""The speed run's given vectors (bench/given.py): every memory a distinct text with a unit vector of the node's
width, made chunk by chunk, in the import line's shape the node checks."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from bench.given import GivenCorpus, GivenRecords, given_cache

DIM = 4


def corpus(n: int = 5) -> GivenCorpus:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return GivenCorpus([f"text {i}" for i in range(n)], vectors, "model#int8")


def test_every_memory_is_a_distinct_text_with_a_unit_vector_until_the_pairs_run_out() -> None:
    given = corpus()
    pairs = 5 * 4
    texts = [given.text(i) for i in range(5 + pairs)]
    assert len(set(texts)) == len(texts) and texts[:5] == given.base
    for i in range(5 + pairs):
        assert abs(float(np.linalg.norm(given.vector(i))) - 1.0) < 1e-6
    a, b = given.pair(7)
    assert given.text(7) == f"text {a} text {b}"
    summed = given.vectors[a] + given.vectors[b]
    assert np.allclose(given.vector(7), summed / np.linalg.norm(summed))
    with pytest.raises(IndexError, match="20 pairs"):
        given.text(5 + pairs)


def test_records_are_import_lines_made_when_a_chunk_is_sliced() -> None:
    given = corpus()
    records = GivenRecords(given, 3, 9, ["bench-speed"])
    assert len(records) == 6
    chunk = records[2:4]
    assert [r["source_id"] for r in chunk] == ["speed:5", "speed:6"]
    line = chunk[0]
    assert line["content"] == given.text(5) and line["tags"] == ["bench-speed"]
    assert line["vectors"]["model"] == "model#int8"
    dense = np.frombuffer(base64.b64decode(line["vectors"]["dense"]), dtype="<f4")
    assert np.array_equal(dense, given.vector(5))
    assert np.array_equal(given.matrix(6)[5], given.vector(5))


def test_the_cache_is_named_by_the_model_and_the_texts(tmp_path: Path) -> None:
    root = tmp_path
    first = given_cache(root, "m", ["a", "b"])
    assert first == given_cache(root, "m", ["a", "b"])
    assert first != given_cache(root, "other", ["a", "b"])
    assert first != given_cache(root, "m", ["a", "c"])
