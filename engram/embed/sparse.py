"""Sparse BM25 document and query vectors (term frequencies; IDF is applied by the index's IDF modifier)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import qdrant_edge as qe

DEFAULT_K = 0.9  # the BEIR/Anserini BM25 parameters
DEFAULT_B = 0.4
DEFAULT_AVG_LEN = 48.0  # memories are a sentence or a paragraph, not a 256-token page
CONTEXT_WEIGHT = 0.7  # a term only the context holds counts this much of one of the content (LoCoMo's tune half)


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: list[int]
    values: list[float]


class Bm25Encoder:
    """English BM25 with stemming and stop words (Qdrant's tokenizer), identical at write and query time."""

    def __init__(self, *, k: float = DEFAULT_K, b: float = DEFAULT_B, avg_len: float = DEFAULT_AVG_LEN) -> None:
        self.model_id = f"bm25-en-k{k}-b{b}-avg{avg_len:g}"
        self._bm25 = qe.Bm25(qe.Bm25Config(k=k, b=b, avg_len=avg_len, language="english"))
        self._lock = threading.Lock()

    def document(self, text: str) -> SparseVector:
        with self._lock:
            vector = self._bm25.embed_document(text)
        return SparseVector(list(vector.indices), list(vector.values))

    def fields(self, content: str, context: str = "", *, context_weight: float = CONTEXT_WEIGHT) -> SparseVector:
        """A memory's document vector: the context and the content as one text (one length, as BM25 expects), with
        the terms that only the context holds scaled by ``context_weight``, so that a memory whose content matches
        a query outranks one that matches only through its context."""
        if not context.strip():
            return self.document(content)
        joined = self.document(f"{context}\n{content}")
        own = set(self.document(content).indices)
        values = [v if i in own else v * context_weight for i, v in zip(joined.indices, joined.values, strict=True)]
        return SparseVector(joined.indices, values)

    def query(self, text: str) -> SparseVector:
        with self._lock:
            vector = self._bm25.embed_query(text)
        return SparseVector(list(vector.indices), list(vector.values))
