"""A speed corpus of any size whose dense vectors are made in the bench (issue 35: a million memories on one node).

Embedding a million texts at the embedder's 150-550 texts/s takes one to two hours, so a large speed run may give the
node its vectors: the import's lines carry them (``vectors``, admin only: docs/api.md) and the node stores them
instead of embedding. The bench embeds a few thousand distinct texts once (``base``); memory ``i`` is base text
``i`` while there are base texts, then the pair of base texts ``a`` and ``b`` (every pair distinct) whose dense
vector is the normalised sum of theirs — a stand-in for the pair's own embedding, close to it (the dense vector
of a two-sentence text leans towards both), and cheap to make on the fly, so the bench never holds a million
vectors. The node still makes every sparse (BM25) vector from the text, and embeds every query, save and update.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

FLAT_MAX = 200_000  # the in-process flat reference holds its vectors as one matrix: 300 MiB at 200k, skipped above


def given_cache(root: Path, model: str, texts: Sequence[str]) -> Path:
    """Where the base texts' vectors are kept between runs: named by the model and the texts."""
    digest = hashlib.sha256("\0".join([model, *texts]).encode()).hexdigest()[:16]
    return root / "given" / f"{len(texts)}-{digest}.npy"


@dataclass(frozen=True, slots=True)
class GivenCorpus:
    """Distinct texts, embedded once, and the texts and vectors of memories built from them."""

    base: list[str]
    vectors: np.ndarray  # [len(base), dim], unit rows, from the node's own embedder
    model: str  # the embedder's model id, as the node reports it

    def pair(self, i: int) -> tuple[int, int]:
        """The two base texts of memory ``i`` (beyond the base texts): every ``i`` a different pair."""
        k, n = i - len(self.base), len(self.base)
        first, step = k % n, 1 + k // n
        if step >= n:
            raise IndexError(f"{n} base texts make {n * (n - 1)} pairs; memory {i} is beyond them")
        return first, (first + step) % n

    def text(self, i: int) -> str:
        if i < len(self.base):
            return self.base[i]
        a, b = self.pair(i)
        return f"{self.base[a]} {self.base[b]}"

    def vector(self, i: int) -> np.ndarray:
        if i < len(self.base):
            return self.vectors[i]
        a, b = self.pair(i)
        summed = self.vectors[a] + self.vectors[b]
        return (summed / np.linalg.norm(summed)).astype(np.float32)

    def matrix(self, size: int) -> np.ndarray:
        """The vectors of memories 0 .. size-1 as one matrix (the flat reference's index)."""
        out = np.empty((size, self.vectors.shape[1]), dtype=np.float32)
        for i in range(size):
            out[i] = self.vector(i)
        return out

    def record(self, i: int, tags: list[str]) -> dict[str, Any]:
        """Memory ``i``'s import line, with its vector as the node takes it (base64 little-endian float32)."""
        dense = base64.b64encode(np.asarray(self.vector(i), dtype="<f4").tobytes()).decode()
        return {"content": self.text(i), "tags": tags, "source_id": f"speed:{i}",
                "vectors": {"model": self.model, "dense": dense}}  # fmt: skip


class GivenRecords(Sequence[dict[str, Any]]):
    """The import lines of memories ``start`` .. ``stop``-1, made when a chunk is sliced (never all at once)."""

    def __init__(self, corpus: GivenCorpus, start: int, stop: int, tags: list[str]) -> None:
        self._corpus, self._start, self._stop, self._tags = corpus, start, stop, tags

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._corpus.record(self._start + index, self._tags)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(len(self)))
