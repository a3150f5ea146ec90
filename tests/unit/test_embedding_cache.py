"""The embedding cache: LRU in front of a SQLite store keyed by model id and text, surviving restarts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram.embed.cache import CachedEmbedder


class CountingEmbedder:
    """A deterministic stand-in for the model that counts what it was asked to embed."""

    def __init__(self, model_id: str = "m1") -> None:
        self.model_id = model_id
        self.dim = 3
        self.calls: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_repeated_texts_are_embedded_once_and_order_is_kept(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cache = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    first = cache.embed(["aa", "b"])
    second = cache.embed(["b", "aa", "ccc"])
    assert inner.calls == ["aa", "b", "ccc"]
    np.testing.assert_array_equal(second[:2], first[::-1])
    assert (cache.hits, cache.misses) == (2, 3)
    cache.close()


def test_cache_survives_a_restart(tmp_path: Path) -> None:
    CachedEmbedder(CountingEmbedder(), tmp_path / "cache.sqlite").embed(["persisted"])
    inner = CountingEmbedder()
    again = CachedEmbedder(inner, tmp_path / "cache.sqlite")
    assert again.embed(["persisted"])[0][0] == len("persisted")
    assert inner.calls == []
    again.close()


def test_another_model_never_reads_the_first_models_vectors(tmp_path: Path) -> None:
    CachedEmbedder(CountingEmbedder("m1"), tmp_path / "cache.sqlite").embed(["text"])
    other = CountingEmbedder("m2")
    CachedEmbedder(other, tmp_path / "cache.sqlite").embed(["text"])
    assert other.calls == ["text"]


def test_lru_is_bounded(tmp_path: Path) -> None:
    cache = CachedEmbedder(CountingEmbedder(), None, lru_size=2)
    cache.embed(["a", "b", "c"])
    assert cache.embed([]).shape == (0, 3)
    assert len(cache._lru) == 2
