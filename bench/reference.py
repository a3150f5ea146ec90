"""The in-process reference of the speed run: the embedder alone over the speed corpus, and a flat numpy dense index.

Both run in the bench process with the node's own embedder (same model, precision and thread count) on the same
texts, so Engram's import rate and search latency can be read as ratios to what the hardware gives without any
service around it (issue 27): figures from a loaded machine stay comparable with those from a quiet one.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.metrics import LatencySummary
from bench.progress import Progress

DEFAULT_PRECISION = "int8"
EMBED_CHUNK = 256  # texts per embed() call, as the node's import embeds a request's lines in batches
TOP_K = 10


@dataclasses.dataclass(slots=True)
class Reference:
    """The corpus's vectors and the embedder that made them (kept to embed the queries)."""

    embedder: Any
    vectors: np.ndarray
    seconds: float

    @property
    def per_second(self) -> float:
        return len(self.vectors) / self.seconds if self.seconds > 0 else 0.0


def load_embedder(settings: Mapping[str, str]) -> Any:
    """The node's embedder (its precision and bulk workers), from the model cache the bench's nodes share."""
    from engram.embed import OnnxEmbedder

    cache = Path(settings["ENGRAM_MODEL_CACHE"])
    precision = settings.get("ENGRAM_EMBED_PRECISION", DEFAULT_PRECISION)
    raw = settings.get("ENGRAM_EMBED_WORKERS")
    workers = (int(raw) or None) if raw else 1  # as engram.config reads it (default 1; 0: one per core)
    return OnnxEmbedder.from_package(cache, precision=precision, workers=workers)


def embed_corpus(embedder: Any, texts: Sequence[str]) -> Reference:
    """Embeds ``texts`` in chunks as the import does, timed: the embedder-alone rate."""
    vectors = np.empty((len(texts), embedder.dim), dtype=np.float32)
    started = time.perf_counter()
    with Progress("reference: embed the corpus", len(texts), unit="texts") as bar:
        for start in range(0, len(texts), EMBED_CHUNK):
            part = texts[start : start + EMBED_CHUNK]
            vectors[start : start + len(part)] = embedder.embed(part)
            bar.advance(len(part))
    return Reference(embedder, vectors, time.perf_counter() - started)


def flat_search(reference: Reference, size: int, queries: Sequence[str], *, warmup: int) -> dict[str, Any]:
    """Times query embedding + matmul + top-k over the first ``size`` vectors, one query at a time."""
    matrix = reference.vectors[:size]
    durations: list[float] = []
    for i, query in enumerate(queries):
        began = time.perf_counter()
        q = reference.embedder.embed([query])[0]
        scores = matrix @ q
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        top[np.argsort(-scores[top])]
        if i >= warmup:
            durations.append(time.perf_counter() - began)
    return dataclasses.asdict(LatencySummary.of(durations))


def ratio(value: float | None, reference: float | None) -> float | None:
    """value / reference rounded to two places, or None when either is missing or the reference is zero."""
    if value is None or not reference:
        return None
    return round(value / reference, 2)
