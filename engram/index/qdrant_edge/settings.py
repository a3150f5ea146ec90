"""A Qdrant Edge shard's settings: where its vectors live, how its optimizer cuts segments, its configuration."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from engram.index import DENSE, FLOAT_FIELDS, KEYWORD_FIELDS, QUESTIONS, SPARSE
from engram.index.qdrant_edge.disk import CONFIG_FILE

# Qdrant Edge has no background optimizer: until optimize() runs, new points are searched by brute force.
# optimize() builds the HNSW graphs of the segments it merges, and it holds the GIL meanwhile (qdrant-edge-py 0.9):
# the whole process answers nothing until it ends (measured: a 5-8 s build of 10k points let a polling thread run
# once). So it runs in a child process (engram.index.qdrant_edge.swap), and segments are kept small: by default the
# optimizer merges everything into two segments and rebuilds them whole every time (11 s per 10k new points at 50k
# on 2 cores, measured; 17-27 s in the node after a 40k import). With segments of at most SEGMENT_KB of vectors,
# each build stays about 2.8 s per 10k new points at any size, and a dense query costs about 1 ms more at 50k.
SEGMENT_KB = 20_000  # the vectors of about 13k memories
SEGMENTS = 8  # the optimizer merges small segments until there are this many, never beyond SEGMENT_KB
INDEXING_KB = 10_000  # Qdrant's default: a segment with fewer vectors than this is searched without a graph

# Where the dense vectors live (ENGRAM_INDEX_VECTORS). "ram": memory-mapped and read into memory at load, scored
# exactly. "disk": memory-mapped and read only where touched, searched through int8 copies kept in memory (a
# quarter of the size) without rescoring: rescoring reads the originals back and with them the memory it saved
# (measured in docs/benchmarks.md). Question vectors are always left on disk until read: most memories have
# none, yet each segment maps 64 MiB of their storage, which "ram" read in whole (450 MiB at 50k memories).
VECTORS_RAM = "ram"
VECTORS_DISK = "disk"
VECTOR_STORAGES = (VECTORS_RAM, VECTORS_DISK)


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """What a shard is created or loaded with (also handed to the processes that build or serve it)."""

    dim: int
    vectors: str = VECTORS_RAM
    # The optimizer's segment count, segment KB and indexing KB.
    segments: tuple[int, int, int] = (SEGMENTS, SEGMENT_KB, INDEXING_KB)

    def __post_init__(self) -> None:
        if self.vectors not in VECTOR_STORAGES:
            raise ValueError(f"vectors must be one of {VECTOR_STORAGES}, got {self.vectors!r}")

    def arguments(self) -> list[str]:
        """These settings as a child process's command-line arguments (see from_arguments)."""
        count, segment_kb, indexing_kb = self.segments
        return ["--dim", str(self.dim), "--vectors", self.vectors, "--segments", f"{count},{segment_kb},{indexing_kb}"]

    @classmethod
    def from_arguments(cls, dim: int, vectors: str, segments: str) -> ShardSettings:
        count, segment_kb, indexing_kb = (int(part) for part in segments.split(","))
        return cls(dim, vectors, (count, segment_kb, indexing_kb))

    def storage(self) -> dict[str, tuple[str, bool]]:
        """Per dense vector: its memory placement and whether an int8 copy is kept, as the shard's config file
        records them."""
        on_disk = self.vectors == VECTORS_DISK
        return {DENSE: ("cold" if on_disk else "cached", on_disk), QUESTIONS: ("cold", False)}

    def config(self) -> qe.EdgeConfig:
        dense = self._vector_params(DENSE)
        questions = self._vector_params(
            QUESTIONS, multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim)
        )
        return qe.EdgeConfig(
            vectors={DENSE: dense, QUESTIONS: questions},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            # Applies to shards created before too: load() takes the optimizer settings given (tested).
            optimizers=qe.EdgeOptimizersConfig(
                default_segment_number=self.segments[0],
                max_segment_size=self.segments[1],
                indexing_threshold=self.segments[2],
            ),
        )

    def _vector_params(self, name: str, **extra: Any) -> qe.EdgeVectorParams:
        memory, quantized = self.storage()[name]
        int8 = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned)
        return qe.EdgeVectorParams(
            size=self.dim,
            distance=qe.Distance.Cosine,
            memory=qe.Memory.Cold if memory == "cold" else qe.Memory.Cached,
            quantization_config=int8 if quantized else None,
            **extra,
        )

    def empty_kind(self) -> str:
        """What an EMPTY copy must have been made with to be used: the settings a new shard is created with."""
        fields = ["namespace", *KEYWORD_FIELDS, *FLOAT_FIELDS]
        return json.dumps({"dim": self.dim, "vectors": self.vectors, "fields": fields}, sort_keys=True)

    def stored_otherwise(self, path: Path) -> str | None:
        """How the vector storage of the shard at ``path`` differs from these settings', or None. A shard from before
        the storage settings counts as vectors in RAM without int8 copies (Qdrant's defaults then)."""
        try:
            stored = json.loads((path / CONFIG_FILE).read_text()).get("vectors") or {}
        except (OSError, ValueError):
            return None  # no readable config: loading decides whether the shard is usable
        for name, (memory, quantized) in self.storage().items():
            params = stored.get(name) or {}
            found = (params.get("memory") or "cached", params.get("quantization_config") is not None)
            if found != (memory, quantized):
                wanted = _describe(memory, quantized)
                return f"built with other storage settings: its {name} vectors {_describe(*found)}, now {wanted}"
        return None


def _describe(memory: str, quantized: bool) -> str:
    where = "on disk" if memory == "cold" else "in RAM"
    return f"{where} with int8 copies" if quantized else where
