"""Embedding cache: an in-process LRU in front of a persistent SQLite store keyed by model id and text hash."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram.embed import Embedder

DEFAULT_LRU_SIZE = 4096


class CachedEmbedder:
    """An Embedder that remembers what it embedded, across restarts. Safe to share between threads."""

    def __init__(self, inner: Embedder, path: Path | None, *, lru_size: int = DEFAULT_LRU_SIZE) -> None:
        self._inner = inner
        self._lru: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lru_size = lru_size
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            # A cache: losing the newest entries in a crash is fine, waiting for fsync on every query is not.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(text) for text in texts]
        found: dict[int, np.ndarray] = {}
        with self._lock:
            for i, key in enumerate(keys):
                vector = self._lookup(key)
                if vector is not None:
                    found[i] = vector
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            computed = self._inner.embed([texts[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, computed, strict=True):
                    found[i] = vector
                    self._store(keys[i], vector)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[i] for i in range(len(texts))]).astype(np.float32, copy=False)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self._inner.model_id}\0{text}".encode()).digest()

    def _lookup(self, key: bytes) -> np.ndarray | None:
        if key in self._lru:
            self._lru.move_to_end(key)
            return self._lru[key]
        if self._db is None:
            return None
        row = self._db.execute("SELECT vector FROM embeddings WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        vector = np.frombuffer(row[0], dtype="<f4")
        self._remember(key, vector)
        return vector

    def _store(self, key: bytes, vector: np.ndarray) -> None:
        self._remember(key, vector)
        if self._db is not None:
            blob = np.asarray(vector, dtype="<f4").tobytes()
            self._db.execute("INSERT OR REPLACE INTO embeddings (key, vector) VALUES (?, ?)", (key, blob))

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._lru[key] = vector
        if len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)
