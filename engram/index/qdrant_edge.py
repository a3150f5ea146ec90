"""Qdrant Edge adapter: an in-process shard in the data dir (embedded and edge modes)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from engram.errors import DiskFull
from engram.index import (
    BOOKKEEPING_IDS,
    CREATED_TS,
    DENSE,
    FLOAT_FIELDS,
    INDEXED_FIELDS,
    KEY,
    KEYWORD_FIELDS,
    META_ID,
    POINT,
    QUESTIONS,
    SPARSE,
    STATE_ID,
    IndexDamaged,
    IndexPoint,
    Position,
    Scored,
    SearchRequest,
    filters,
    keyed,
    point_id,
    stored_point,
)
from engram.index.filters import Condition, Filter, Match, MatchAny, Range, conditions
from engram.index.listing import recent_page
from engram.model import STATUSES, SearchFilter
from engram.process.children import python_module
from engram.process.health import MIB
from engram.process.heap import page_out

log = logging.getLogger(__name__)

# The applied log sequence lives in the shard itself (META_ID), written after the points it covers, so the
# shard's WAL recovers both together: on restart the indexer never skips an entry it did not apply. The
# indexer's state (STATE_ID), when given, is written in the same update.

# Qdrant Edge has no background optimizer: until optimize() runs, new points are searched by brute force.
# optimize() builds the HNSW graphs of the segments it merges, and it holds the GIL meanwhile (qdrant-edge-py 0.9):
# the whole process, gateway included in the embedded node, answers nothing until it ends (measured: a 5-8 s build
# of 10k points let a polling thread run once). So it runs in a child process (BUILDING, below), when the indexer
# is idle or busy for long and enough points wait to be indexed, and segments are kept small: by default the optimizer
# merges everything into two segments and rebuilds them whole every time (11 s per 10k new points at 50k on
# 2 cores, measured; 17-27 s in the node after a 40k import). With segments of at most SEGMENT_KB of vectors,
# each build stays about 2.8 s per 10k new points at any size, and a dense query costs about 1 ms more at 50k.
DEFAULT_OPTIMIZE_AFTER = 2000
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
CONFIG_FILE = "edge_config.json"  # where the shard keeps the configuration it was created or last loaded with
# Files a load reads whole and the searches after it hardly touch: the payload indexes (an appendable segment's,
# 78 MiB of files per shard whatever it holds, are read into memory) and the WAL's closed segment (replayed).
# Their pages would stay mapped after the load, so they are handed back at once (docs/benchmarks.md: about 200
# MiB less after a restart at 50k memories, the same search latency).
LOADED_ONLY = ("/payload_index/", "/wal/closed-")
# A load reads the vectors kept in RAM into memory: on a tmpfs that allocates the holes of their sparse files (a
# restart at 15k memories allocated 25 MiB for the dense vectors' 24 MiB of holes), and a mapped page that cannot be
# allocated kills the process (SIGBUS). So a start needs that much room, plus this for the small files a load fills
# (payload index flags, id trackers: 1-4 MiB measured).
LOAD_MARGIN = 16 * MIB
# A flush writes the shard's dirty pages and small files; with less room than this it is left to the WAL (which
# replays at the next load): a flush on a full tmpfs died with SIGBUS.
FLUSH_ROOM = 32 * MIB
# Deleted points stay in the shard's files (the WAL, the segments' payload and vector storage) until they are
# rewritten, and no setting of Qdrant Edge rewrites the WAL in place (removing its files loses later updates:
# measured). So after a purge the shard is copied into a fresh one without them (erase_deleted): this marker,
# written before the delete, says a copy is due, so a crash in between is caught by the next call.
ERASE_PENDING = "erase-pending"
REWRITING = ".rewriting"  # the fresh copy while it is written (a leftover is incomplete: removed at open)
ERASING = ".erasing"  # the old shard between the swap and its removal (removed at open)
DAMAGED = ".damaged"  # a damaged shard moved aside for inspection (move_aside)
# The vector index is built out of the serving path (maintain): optimize() holds the GIL for its whole run (27 s for
# 50k memories on 2 cores, measured; nothing else in the process runs meanwhile), so it runs in a child process
# (engram.index.edge_build) on a copy of the flushed shard, while this one goes on serving and taking writes. The
# writes are recorded; once the child has ended, a thread of its own loads the built copy and replays them on it
# while this shard goes on serving and taking writes, and the lock is held only for the last few writes and the
# swap itself (the load, 0.3 s at 50k, and the replay once held it or stopped the indexer: seconds, measured).
# BUILDING is the copy while it is built; it is then renamed to a LOADED name, under which it is loaded and keeps its
# files open: after the swap that name stays as a symbolic link to the shard's own name (Qdrant Edge names its
# files by the path it was loaded from), removed once that shard is closed. REPLACED is the old shard after the
# swap. Any of them left over by a crash is removed at open.
BUILDING = ".building"
LOADED = ".loaded-"
REPLACED = ".replaced"
# An empty shard with its payload indexes, kept beside the index and copied where a shard starts over (a rebuild
# from the log, an erasure's fresh copy): creating its 20 payload indexes anew took 0.7-5 s, each holding the GIL
# (a 10k rebuild spent 5 s of its 14 there with two indexes, measured). EMPTY_KIND in it names the settings it was
# made with; a copy made otherwise is not used.
EMPTY = ".empty"
EMPTY_KIND = "engram-empty.json"
# The swap takes the lock once no more than this many writes made during the build wait to be replayed.
SWAP_TAIL = 32
QUESTIONS_KEY = "questions"  # in the applied-sequence record: whether any point may hold question vectors
CLOSE_WAIT = 30.0  # seconds a close waits for a swap under way to drop its copy
COPY_PAGE = 1024  # points per read while copying: the lock is held per page, so reads go on meanwhile
# The copy builds its vector index every this many points, each build short (optimize() holds the GIL: the node
# answers nothing meanwhile): at 50k memories 2.6-3.8 s per build, where one build after the copy took 24 s and
# left it to maintain() froze the node for 20-33 s after the purge (measured).
COPY_INDEX_EVERY = 10_000
CHECK_PAGE = 256  # points per read while checking the files at start: a page of vectors is ~8 MiB as Python lists
# qdrant-edge-py converts a payload value by value, trying bool, then each number type, then string... in turn, and
# every failed try costs a Python exception: about 12 us per string or list, 550 us for a memory's 46 fields, all of
# it holding the GIL (cProfile of a rebuild: half its time). So only the fields that filters, payload indexes,
# facets, set_payload and listings name are stored as fields; the rest travel as one JSON string (PACKED), which
# reads unpack (150 us per point with the JSON). Points stored whole before this still read as they are.
PACKED = "_packed"
TOP_LEVEL = frozenset((*INDEXED_FIELDS, KEY, "relations", "metadata", "questions", "access_count", "last_accessed_at"))


class EdgeIndex:
    """MemoryIndex on a Qdrant Edge shard. Thread-safe: every call holds one lock."""

    def __init__(
        self,
        path: Path,
        *,
        dim: int,
        optimize_after: int = DEFAULT_OPTIMIZE_AFTER,
        vectors: str = VECTORS_RAM,
        segments: tuple[int, int, int] | None = None,
    ) -> None:
        """``segments``: the optimizer's (segment count, segment KB, indexing KB); SEGMENTS, SEGMENT_KB and
        INDEXING_KB by default."""
        if vectors not in VECTOR_STORAGES:
            raise ValueError(f"vectors must be one of {VECTOR_STORAGES}, got {vectors!r}")
        self._path = path
        self._dim = dim
        self._optimize_after = optimize_after
        self._vectors = vectors
        # Read here, not at import: a test (or a build's child process) may set them.
        self._segments = segments or (SEGMENTS, SEGMENT_KB, INDEXING_KB)
        self._unindexed = 0
        self._build: EdgeBuild | None = None  # a vector index build under way in a child process, or its swap
        self._alias: Path | None = None  # the LOADED link the shard was loaded from, if it was swapped in
        self._swapper: threading.Thread | None = None  # the latest swap's thread (closing waits for it)
        self._swaps = 0
        self._lock = threading.Lock()
        self._storage_problem: str | None = None
        self._shard = self._open()
        # Whether any point may hold question vectors: a search without them skips that retriever, which costs a
        # scan of the (absent) vectors all the same (1.7 of 5.6 ms at 50k, measured). Recorded with the applied
        # sequence; a shard that does not record it (written before, or loaded as it is) is taken to hold some.
        self._questions = self._recorded_questions()

    def _storage(self) -> dict[str, tuple[str, bool]]:
        """Per dense vector: its memory placement and whether an int8 copy is kept, as the shard's config file
        records them."""
        on_disk = self._vectors == VECTORS_DISK
        return {DENSE: ("cold" if on_disk else "cached", on_disk), QUESTIONS: ("cold", False)}

    def _vector_params(self, name: str, **extra: Any) -> qe.EdgeVectorParams:
        memory, quantized = self._storage()[name]
        int8 = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=qe.Memory.Pinned)
        return qe.EdgeVectorParams(
            size=self._dim,
            distance=qe.Distance.Cosine,
            memory=qe.Memory.Cold if memory == "cold" else qe.Memory.Cached,
            quantization_config=int8 if quantized else None,
            **extra,
        )

    def _config(self) -> qe.EdgeConfig:
        dense = self._vector_params(DENSE)
        questions = self._vector_params(
            QUESTIONS, multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim)
        )
        return qe.EdgeConfig(
            vectors={DENSE: dense, QUESTIONS: questions},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            # Applies to shards created before too: load() takes the optimizer settings given (tested).
            optimizers=qe.EdgeOptimizersConfig(
                default_segment_number=self._segments[0],
                max_segment_size=self._segments[1],
                indexing_threshold=self._segments[2],
            ),
        )

    def _open(self) -> qe.EdgeShard:
        self._storage_problem = None
        self._drop_alias()
        for leftover in (REWRITING, ERASING, BUILDING, REPLACED):  # interrupted by a crash (erase_deleted, maintain)
            shutil.rmtree(self._sibling(leftover), ignore_errors=True)
        for loaded in self._path.parent.glob(f"{self._path.name}{LOADED}*"):  # a swap's, from an earlier run
            _remove(loaded)
        if (self._path / CONFIG_FILE).exists() or any(self._path.glob("segments*")):
            # Storage settings apply to segments when they are written, so a shard stored otherwise is loaded as
            # it is (its config file unchanged, so a crash before the rebuild finds it again) and check() asks
            # for a rebuild from the log.
            self._storage_problem = self._stored_otherwise()
            try:
                shard = qe.EdgeShard.load(str(self._path), None if self._storage_problem else self._config())
            except Exception as e:  # the Rust side reports any damage as a plain Exception
                raise IndexDamaged(str(self._path), f"it cannot be loaded ({e})") from e
            page_out(self._path, LOADED_ONLY)
            return shard
        return self._create(self._path)

    def _create(self, path: Path) -> qe.EdgeShard:
        """A new, empty shard at ``path``: a copy of the EMPTY one kept beside this index when there is one made
        with the same settings, otherwise created (and then kept as EMPTY for the next time)."""
        empty, kind = self._sibling(EMPTY), self._empty_kind()
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        if not path.exists() and _read_text(empty / EMPTY_KIND) == kind:
            try:
                _copy_tree(empty, path)
                (path / EMPTY_KIND).unlink()
                return qe.EdgeShard.load(str(path), self._config())
            except Exception:  # a damaged copy: created anew below (the Rust side raises plain Exceptions)
                log.warning("the empty index kept at %s cannot be used; creating one", empty, exc_info=True)
                shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True, exist_ok=True)
        shard = qe.EdgeShard.create(str(path), self._config())
        shard.update(qe.UpdateOperation.create_field_index("namespace", qe.KeywordIndexParams(is_tenant=True)))
        for name in KEYWORD_FIELDS:
            shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
        for name in FLOAT_FIELDS:
            shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Float))
        self._keep_empty(shard, path, kind)
        return shard

    def _empty_kind(self) -> str:
        """What an EMPTY copy must have been made with to be used: the settings a new shard is created with."""
        fields = ["namespace", *KEYWORD_FIELDS, *FLOAT_FIELDS]
        return json.dumps({"dim": self._dim, "vectors": self._vectors, "fields": fields}, sort_keys=True)

    def _keep_empty(self, shard: qe.EdgeShard, path: Path, kind: str) -> None:
        """Keeps a copy of a shard just created (nothing in it yet) as EMPTY; without room, none is kept."""
        empty = self._sibling(EMPTY)
        making = empty.with_name(empty.name + REWRITING)
        try:
            shard.flush()
            shutil.rmtree(making, ignore_errors=True)
            _copy_tree(path, making)
            (making / EMPTY_KIND).write_text(kind)
            shutil.rmtree(empty, ignore_errors=True)
            making.rename(empty)
        except OSError as e:
            log.info("no empty index kept beside %s (%s); a rebuild creates one anew", path, e)
            shutil.rmtree(making, ignore_errors=True)

    def upsert(self, points: list[IndexPoint]) -> None:
        edge_points = []
        for point in points:
            vectors: dict[str, Any] = {
                DENSE: point.dense,
                SPARSE: qe.SparseVector(point.sparse.indices, point.sparse.values),
            }
            if point.questions:
                vectors[QUESTIONS] = point.questions
                self._questions = True
            payload = _packed({**point.payload, KEY: point.id})
            edge_points.append(qe.Point(point_id(point.payload["namespace"], point.id), vectors, payload))
        with self._lock:
            self._update(qe.UpdateOperation.upsert_points(edge_points))
            self._unindexed += len(edge_points)

    def retrieve(self, namespace: str, ids: list[str]) -> list[dict[str, Any]]:
        points = [point_id(namespace, key) for key in ids]
        with self._lock:
            records = self._shard.retrieve(list[Any](points), with_payload=True, with_vector=False)
        return keyed([_unpacked(r.payload) for r in records if r.payload], namespace)

    def retrieve_points(self, namespace: str, ids: list[str], *, dense_only: bool = False) -> list[IndexPoint]:
        points = [point_id(namespace, key) for key in ids]
        with self._lock:
            records = self._shard.retrieve(
                list[Any](points), with_payload=True, with_vector=[DENSE] if dense_only else True
            )
        return [
            stored_point(
                str(r.payload.get(KEY) or r.id), _unpacked(r.payload), r.vector if isinstance(r.vector, dict) else {}
            )
            for r in records
            if r.payload and r.payload.get("namespace") == namespace
        ]

    def versions_of(self, namespace: str, memory_id: str) -> list[dict[str, Any]]:
        return self._scroll_all(to_edge(filters.memory_points(namespace, memory_id)))

    def _scroll_all(self, condition: qe.Filter, page: int = 256) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset = None
        while True:
            with self._lock:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=page, filter=condition, with_payload=True)
                )
            out.extend(_unpacked(r.payload) for r in records if r.payload)
            if offset is None:
                return out

    def delete_memory(self, namespace: str, memory_id: str) -> None:
        condition = to_edge(filters.memory_points(namespace, memory_id))
        with self._lock:
            if not self._shard.count(qe.CountRequest(exact=True, filter=condition)):
                return
            _write_marker(self._path / ERASE_PENDING)
            self._update(qe.UpdateOperation.delete_points_by_filter(condition))

    def set_fields(self, namespace: str, fields: dict[str, dict[str, Any]]) -> None:
        present = {p["id"] for p in self.retrieve(namespace, list(fields))}  # keys are memory ids here
        with self._lock:
            for key, values in fields.items():
                if key in present:
                    self._update(qe.UpdateOperation.set_payload([point_id(namespace, key)], values))
            # No count towards optimize(): a payload change leaves the point in its indexed segment (measured).

    def facet(self, namespace: str, key: str, flt: SearchFilter | None = None) -> dict[str, int]:
        condition = _filter(namespace, flt or SearchFilter(statuses=list(STATUSES)))
        with self._lock:
            response = self._shard.facet(qe.FacetRequest(key, limit=10_000, exact=True, filter=condition))
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.value not in (None, "")}

    def namespaces(self) -> dict[str, int]:
        active = to_edge(filters.ACTIVE)
        with self._lock:
            response = self._shard.facet(qe.FacetRequest("namespace", limit=100_000, exact=True, filter=active))
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.value not in (None, "")}

    def due(self, at: float, limit: int) -> list[dict[str, Any]]:
        condition = to_edge(filters.due(at))
        with self._lock:
            records, _ = self._shard.scroll(qe.ScrollRequest(limit=limit, filter=condition, with_payload=True))
        return [_unpacked(r.payload) for r in records if r.payload]

    def update_questions(self, namespace: str, id: str, questions: list[list[float]], texts: list[str]) -> bool:
        if not self.retrieve(namespace, [id]):
            return False
        point = point_id(namespace, id)
        self._questions = self._questions or bool(questions)
        with self._lock:
            self._update(qe.UpdateOperation.update_vectors([qe.PointVectors(point, {QUESTIONS: questions})]))
            self._update(qe.UpdateOperation.set_payload([point], {"questions": texts}))
        return True

    def search(self, request: SearchRequest) -> dict[str, list[Scored]]:
        flt = _filter(request.namespace, request.filter)
        queries: list[tuple[str, Any]] = []
        if request.dense is not None:
            queries.append((DENSE, request.dense))
        if request.sparse is not None and request.sparse.indices:
            queries.append((SPARSE, qe.SparseVector(request.sparse.indices, request.sparse.values)))
        if request.questions is not None:
            queries.append((QUESTIONS, request.questions))
        batch = qe.QueryBatchRequest(
            [
                qe.QueryRequest(
                    limit=request.limit,
                    query=qe.Query.Nearest(vector, using=name),
                    filter=flt,
                    with_payload=True if request.with_payload else qe.PayloadSelector.Include([KEY]),
                )
                for name, vector in queries
            ]
        )
        with self._lock:
            results = self._shard.query_batch(batch) if queries else []
        return {
            name: [Scored(_key(p.payload, p.id), float(p.score), _unpacked(p.payload or {})) for p in points]
            for (name, _), points in zip(queries, results, strict=True)
        }

    def recent(
        self, namespace: str, flt: SearchFilter, limit: int, after: Position | None = None, *, by: str = CREATED_TS
    ) -> list[dict[str, Any]]:
        condition = conditions(namespace, flt)

        def by_time(older_than: float | None, size: int) -> list[dict[str, Any]]:
            bounded = to_edge(condition if older_than is None else condition.also(Range(by, lt=older_than)))
            order = qe.OrderBy(by, qe.Direction.Desc)
            return self._scroll(qe.ScrollRequest(limit=size, filter=bounded, with_payload=True, order_by=order))

        def at_time(ts: float, from_point: str, size: int) -> list[dict[str, Any]]:
            tied = to_edge(condition.also(Range(by, gte=ts, lte=ts)))
            return self._scroll(qe.ScrollRequest(offset=from_point or None, limit=size, filter=tied, with_payload=True))

        return recent_page(by_time, at_time, limit, after, by=by)

    def _scroll(self, request: qe.ScrollRequest) -> list[dict[str, Any]]:
        """The payloads of a listing, each with its stored point id (POINT: a listing's tie order)."""
        with self._lock:
            records, _ = self._shard.scroll(request)
        return [{**_unpacked(r.payload), POINT: str(r.id)} for r in records if r.payload]

    def scan(
        self, namespace: str, flt: SearchFilter, *, with_vectors: bool = False, page: int = 256
    ) -> Iterator[list[tuple[dict[str, Any], list[float]]]]:
        condition = _filter(namespace, flt)
        offset = None
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=page, filter=condition, with_payload=True,
                with_vector=[DENSE] if with_vectors else False,
            )  # fmt: skip
            with self._lock:
                records, offset = self._shard.scroll(request)
            yield [(_unpacked(r.payload), _dense(r.vector) if with_vectors else []) for r in records if r.payload]
            if offset is None:
                return

    def count(self, namespace: str, flt: SearchFilter | None = None) -> int:
        with self._lock:
            return int(self._shard.count(qe.CountRequest(exact=True, filter=_filter(namespace, flt))))

    def held_elsewhere(self, namespace: str, memory_id: str) -> bool:
        condition = to_edge(filters.held_elsewhere(namespace, memory_id))
        with self._lock:
            return int(self._shard.count(qe.CountRequest(exact=True, filter=condition))) > 0

    def point_count(self) -> int:
        with self._lock:
            total = int(self._shard.info().points_count)
            bookkeeping = len(self._shard.retrieve(list[Any](BOOKKEEPING_IDS), with_payload=False, with_vector=False))
        return total - bookkeeping

    def check(self) -> str | None:
        if self._storage_problem is not None:
            return self._storage_problem
        with self._lock:
            schema = set(self._shard.info().payload_schema)
        missing = [name for name in INDEXED_FIELDS if name not in schema]
        if missing:
            return f"payload indexes missing: {', '.join(missing)}"
        return self._unreadable()

    def _unreadable(self) -> str | None:
        """Reads every point's payload and vectors once and queries each vector index: a file truncated or
        overwritten while the node was stopped loads without complaint, and then fails every search that touches
        it (measured); found here, the indexer rebuilds the index instead. The payloads' pages are handed back
        after (see LOADED_ONLY)."""
        offset, probe = None, dict[str, Any]()
        try:
            while True:
                request = qe.ScrollRequest(offset=offset, limit=CHECK_PAGE, with_payload=True, with_vector=True)
                with self._lock:
                    records, offset = self._shard.scroll(request)
                probe = probe or next((r.vector for r in records if isinstance(r.vector, dict) and r.vector), {})
                if offset is None:
                    break
            with self._lock:
                for name, vector in probe.items():
                    self._shard.query(qe.QueryRequest(limit=1, query=qe.Query.Nearest(vector, using=name)))
        except Exception as e:  # the Rust side reports any damage as a plain Exception
            return f"its files cannot be read ({e})"
        finally:
            page_out(self._path, ("/payload_storage/",))
        return None

    def _stored_otherwise(self) -> str | None:
        """How the shard's vector storage differs from the one asked for, or None. A shard from before the
        storage settings counts as vectors in RAM without int8 copies (Qdrant's defaults then)."""
        try:
            stored = json.loads((self._path / CONFIG_FILE).read_text()).get("vectors") or {}
        except (OSError, ValueError):
            return None  # no readable config: loading decides whether the shard is usable
        for name, (memory, quantized) in self._storage().items():
            params = stored.get(name) or {}
            found = (params.get("memory") or "cached", params.get("quantization_config") is not None)
            if found != (memory, quantized):
                wanted = _describe(memory, quantized)
                return f"built with other storage settings: its {name} vectors {_describe(*found)}, now {wanted}"
        return None

    def applied_seq(self) -> int:
        return int(self._meta().get("applied_seq", 0))

    def holds_questions(self) -> bool:
        return self._questions

    def _recorded_questions(self) -> bool:
        """What the shard recorded of holding questions; True when it cannot say (not recorded, or its files are
        damaged: check() finds that, and the rebuild starts over from an empty shard)."""
        try:
            return bool(self._meta().get(QUESTIONS_KEY, self.point_count() > 0))
        except Exception:  # the Rust side reports damage as a plain Exception
            return True

    def skipped_count(self) -> int:
        return int(self._meta().get("skipped", 0))

    def indexer_state(self) -> dict[str, Any]:
        return dict(self._meta(STATE_ID).get("state") or {})

    def _meta(self, point_id: str = META_ID) -> dict[str, Any]:
        with self._lock:
            records = self._shard.retrieve([point_id], with_payload=True, with_vector=False)
        return dict(records[0].payload) if records and records[0].payload else {}

    def set_applied_seq(self, seq: int, *, skipped: int = 0, state: dict[str, Any] | None = None) -> None:
        points = [] if state is None else [qe.Point(STATE_ID, {}, {"state": state})]
        points.append(qe.Point(META_ID, {}, {"applied_seq": seq, "skipped": skipped, QUESTIONS_KEY: self._questions}))
        with self._lock:
            self._update(qe.UpdateOperation.upsert_points(points))
        self._swap_if_built()  # once per applied batch: a finished build waits no longer than that

    def reset(self) -> None:
        """Drops everything (the index is rebuilt from the log); a damaged copy is kept aside for inspection."""
        with self._lock:
            self._cancel_build()
            self._shard.close()
            move_aside(self._path)
            self._shard = self._open()
            self._questions = False

    def maintain(self) -> None:
        """Builds the vector index of the points written since the last build, in a child process on a copy of the
        shard (see BUILDING); a later call (or write) swaps the built copy in once the child has ended."""
        if self._build is not None:
            self._swap_if_built()
            return
        with self._lock:
            if self._unindexed < self._optimize_after:
                return
            self._flush()
            building = self._sibling(BUILDING)
            if shutil.disk_usage(self._path).free < _allocated(self._path) + load_room(self._path) + FLUSH_ROOM:
                self._optimize_here()  # no room for a copy: the old way, in this process
                return
        # Without the lock: reads go on; the caller (the indexer, the only writer) does not write meanwhile.
        shutil.rmtree(building, ignore_errors=True)
        _copy_tree(self._path, building)
        with self._lock:
            self._build = EdgeBuild.start(building, self._child_arguments(), points=self._unindexed)
            self._unindexed = 0

    def finish_build(self, timeout: float | None = None) -> None:
        """Waits for a build under way to end and be swapped in (for a caller that must see it done: tests)."""
        build = self._build
        if build is not None:
            build.process.wait(timeout)
            self._swap_if_built()
        if self._swapper is not None:
            self._swapper.join(timeout)

    def _child_arguments(self) -> list[str]:
        count, segment_kb, indexing_kb = self._segments
        return ["--dim", str(self._dim), "--vectors", self._vectors,
                "--segments", f"{count},{segment_kb},{indexing_kb}"]  # fmt: skip

    @property
    def building(self) -> bool:
        """Whether a vector index build is under way (its child process running, or its copy being swapped in)."""
        return self._build is not None

    def _optimize_here(self) -> None:
        started = time.monotonic()
        if self._shard.optimize():
            # The segments it merged stay mapped, in memory and on disk, until the next flush (measured: 300
            # MiB at 50k memories, until the node stopped); a flush costs about 70 ms.
            self._shard.flush()
        log.info("indexed %d new points in %.1fs", self._unindexed, time.monotonic() - started)
        self._unindexed = 0

    def _update(self, operation: qe.UpdateOperation) -> None:
        """Applies a write (the lock held), and records it for the build under way, if any."""
        self._shard.update(operation)
        if self._build is not None:
            self._build.written.append(operation)

    def _swap_if_built(self) -> None:
        """Once the build's child has ended, starts swapping the built copy in (see _swap); a failed build is
        dropped and its points wait for the next one. Called by the index's writer between its writes."""
        build = self._build
        if build is None or build.swapper is not None or not build.ended():
            return
        if build.process.returncode != 0:
            log.warning("building the vector index failed (exit code %s); retried at the next maintenance",
                        build.process.returncode)  # fmt: skip
            self._drop_build(build)
            return
        build.swapper = self._swapper = threading.Thread(
            target=self._swap, args=(build,), name="index-swap", daemon=True
        )
        build.swapper.start()

    def _swap(self, build: EdgeBuild) -> None:
        """Loads the built copy, replays on it the writes made since the copy (reads and writes go on at this shard
        meanwhile), and replaces this shard with it holding the lock only for the last SWAP_TAIL writes and the
        renames. A copy that cannot be loaded is dropped: this shard serves on and its points wait."""
        started = time.monotonic()
        self._swaps += 1
        loaded_as = self._sibling(f"{LOADED}{os.getpid()}-{self._swaps}")
        _remove(loaded_as)
        try:
            build.path.rename(loaded_as)
            build.path = loaded_as
            built = qe.EdgeShard.load(str(loaded_as), self._config())
        except Exception:
            log.exception("loading the built vector index failed; keeping the index as it is")
            self._drop_build(build)
            return
        replayed = 0
        try:
            while len(build.written) - replayed > SWAP_TAIL and self._build is build:
                pending = len(build.written)  # the writer appends meanwhile (under the lock): a snapshot
                for operation in build.written[replayed:pending]:
                    built.update(operation)
                replayed = pending
            built.flush()
        except Exception:
            log.exception("replaying writes on the built vector index failed; keeping the index as it is")
            built.close()
            self._drop_build(build)
            return
        caught_up = time.monotonic()
        replaced = self._sibling(REPLACED)
        with self._lock:
            if self._build is not build:  # cancelled meanwhile (a reset, an erasure, a close)
                built.close()
                _remove(build.path)
                return
            tail = len(build.written) - replayed
            try:
                for operation in build.written[replayed:]:
                    built.update(operation)
            except Exception:
                log.exception("replaying writes on the built vector index failed; keeping the index as it is")
                built.close()
                self._build = None
                self._unindexed += build.points
                _remove(build.path)
                return
            self._build = None
            old, self._shard = self._shard, built  # reads and writes go to the built copy from here on
            alias, self._alias = self._alias, None
        swapped = time.monotonic()
        old.close()  # not holding the lock: a close takes 0.4-0.5 s (measured); the old files are still in place
        if alias is not None:
            _remove(alias)
        with self._lock:
            if self._shard is not built:  # reset or closed meanwhile: it dropped the built copy too
                _remove(loaded_as)
                return
            shutil.rmtree(replaced, ignore_errors=True)
            self._path.rename(replaced)
            loaded_as.rename(self._path)
            loaded_as.symlink_to(self._path.name)  # the built shard's files, by the path it was loaded from
            self._alias = loaded_as
        page_out(self._path, LOADED_ONLY)
        shutil.rmtree(replaced, ignore_errors=True)
        log.info("indexed %d points in a child process in %.1fs; loaded and replayed %d writes made meanwhile in "
                 "%.2fs, then %d more and swapped in %.3fs holding the lock", build.points, started - build.started,
                 replayed, caught_up - started, tail, swapped - caught_up)  # fmt: skip

    def _drop_build(self, build: EdgeBuild) -> None:
        with self._lock:
            if self._build is build:
                self._build = None
                self._unindexed += build.points
        _remove(build.path)

    def _cancel_build(self) -> None:
        """Stops a build under way and drops its copy (before the shard is closed, replaced or reset); a copy being
        swapped in is dropped by its swap, which finds the build gone."""
        if self._build is not None:
            self._unindexed += self._build.points
            self._build.cancel()
            self._build = None

    def _drop_alias(self) -> None:
        """Removes the link a swapped-in shard was loaded from (once that shard is closed)."""
        if self._alias is not None:
            _remove(self._alias)
            self._alias = None

    def _sibling(self, suffix: str) -> Path:
        return self._path.with_name(self._path.name + suffix)

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def close(self) -> None:
        with self._lock:
            self._cancel_build()
            self._flush()
            self._shard.close()
            self._drop_alias()
        if self._swapper is not None:
            self._swapper.join(CLOSE_WAIT)  # a swap under way finds the build gone and drops its copy

    def _flush(self) -> None:
        free = shutil.disk_usage(self._path).free
        if free < FLUSH_ROOM:
            log.warning("index not flushed: only %d MiB free in %s; its WAL replays what it holds at the next start",
                        free // MIB, self._path)  # fmt: skip
            return
        self._shard.flush()

    def erase_deleted(self) -> None:
        """After a purge: copies the live points into a fresh shard and replaces this one with it, so that no file
        under the data dir keeps what was deleted (its WAL and segments would), and removes a damaged copy kept
        aside (it may hold it too). Nothing to do unless delete_memory deleted something since the last copy.

        Reads go on meanwhile (the lock is held per page read, then for the swap), except during the copy's vector
        index builds (COPY_INDEX_EVERY); the caller (the indexer) is the only writer and does not write meanwhile.
        Raises DiskFull, with nothing changed, when the disk lacks room for the copy. Measured in the node: about
        1 s at 2k memories, 2 s at 5k, 27 s at 50k (docs/operations.md).
        """
        if not (self._path / ERASE_PENDING).exists():
            return
        started = time.monotonic()
        with self._lock:
            self._cancel_build()  # the copy builds its own vector index
        fresh = self._path.with_name(self._path.name + REWRITING)
        shutil.rmtree(fresh, ignore_errors=True)
        self._require_copy_room()
        copy = self._create(fresh)
        try:
            copied = self._copy_into(copy)
            copy.flush()
        finally:
            copy.close()
        with self._lock:
            self._shard.close()
            self._path.rename(self._path.with_name(self._path.name + ERASING))
            fresh.rename(self._path)
            self._shard = self._open()  # which removes the old shard, as after a crash at this point
            self._unindexed = 0  # the copy built its vector index
        shutil.rmtree(self._path.with_name(self._path.name + DAMAGED), ignore_errors=True)
        log.info("rewrote %s without purged data (%d points) in %.1fs", self._path, copied,
                 time.monotonic() - started)  # fmt: skip

    def _copy_into(self, copy: qe.EdgeShard) -> int:
        """Copies every point, building the copy's vector index as it goes (see COPY_INDEX_EVERY)."""
        copied, unindexed, offset = 0, 0, None
        while True:
            request = qe.ScrollRequest(offset=offset, limit=COPY_PAGE, with_payload=True, with_vector=True)
            with self._lock:
                records, offset = self._shard.scroll(request)
            points = [qe.Point(r.id, r.vector if isinstance(r.vector, dict) else {}, r.payload or {}) for r in records]
            if points:
                copy.update(qe.UpdateOperation.upsert_points(points))
            copied += len(points)
            unindexed += len(points)
            if unindexed >= COPY_INDEX_EVERY or (offset is None and unindexed >= self._optimize_after):
                copy.optimize()
                unindexed = 0
            if offset is None:
                return copied

    def _require_copy_room(self) -> None:
        """The copy takes about the space the shard takes now, plus what loading it takes."""
        needed = _allocated(self._path) + load_room(self._path) + FLUSH_ROOM
        free = shutil.disk_usage(self._path).free
        if free < needed:
            raise DiskFull(
                f"only {free // MIB} MiB free in {self._path.parent}; erasing purged memories from the search index "
                f"needs about {needed // MIB} MiB there (a fresh copy of {self._path.name}).",
                hint="Free some space; the index finishes the erasure by itself.",
            )


@dataclass(slots=True)
class EdgeBuild:
    """A vector index build in a child process (engram.index.edge_build) on a copy of the shard at ``path``."""

    path: Path
    process: subprocess.Popen[bytes]
    points: int  # the points it indexes that were not indexed before
    started: float = field(default_factory=time.monotonic)
    written: list[qe.UpdateOperation] = field(default_factory=list)  # writes since the copy, replayed on it
    swapper: threading.Thread | None = None  # the thread swapping the built copy in, once the child has ended

    @classmethod
    def start(cls, path: Path, arguments: list[str], *, points: int) -> EdgeBuild:
        command = [*python_module("engram.index.edge_build"), str(path), *arguments]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        return cls(path, process, points)

    def ended(self) -> bool:
        return self.process.poll() is not None

    def cancel(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.swapper is None:  # otherwise the swapper has the copy open, and removes it
            shutil.rmtree(self.path, ignore_errors=True)


def build_vector_index(path: Path, *, dim: int, vectors: str, segments: tuple[int, int, int]) -> None:
    """What the child process of a build does: loads the shard copy at ``path``, builds its vector index, flushes
    it and closes it."""
    index = EdgeIndex(path, dim=dim, vectors=vectors, segments=segments)
    with index._lock:
        started = time.monotonic()
        index._shard.optimize()
        log.info("built the vector index of %s in %.1fs", path, time.monotonic() - started)
    index.close()


def _remove(path: Path) -> None:
    """Removes a directory, or a symbolic link (not what it points to)."""
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _copy_tree(source: Path, target: Path) -> None:
    """Copies a flushed shard; its sparse files stay sparse where cp can do it (the vector storages are mostly
    holes: copied whole they would take several times the disk)."""
    try:
        subprocess.run(["cp", "-a", "--sparse=always", str(source), str(target)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)


def load_room(path: Path) -> int:
    """Disk space a load of the shard at ``path`` may take (0 when there is none): the holes of the vector files
    it reads into memory, those of the vectors it keeps in RAM as its config file records them (see
    LOAD_MARGIN), plus LOAD_MARGIN."""
    try:
        stored = json.loads((path / CONFIG_FILE).read_text()).get("vectors") or {}
    except (OSError, ValueError):
        stored = {}
    if not path.is_dir():
        return 0
    in_ram = [name for name in (DENSE, QUESTIONS) if ((stored.get(name) or {}).get("memory") or "cached") != "cold"]
    holes = sum(
        max(0, stat.st_size - stat.st_blocks * 512)
        for name in in_ram
        for file in path.glob(f"segments/*/vector_storage-{name}/**/*")
        if file.is_file() and (stat := file.stat())
    )
    return holes + LOAD_MARGIN


def _allocated(path: Path) -> int:
    """Bytes the files under ``path`` take on disk."""
    return sum(file.stat().st_blocks * 512 for file in path.rglob("*") if file.is_file())


def _write_marker(path: Path) -> None:
    """Creates an empty file, durably (it must survive a crash that the change it announces survives)."""
    with open(path, "wb") as handle:
        os.fsync(handle.fileno())
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def move_aside(path: Path) -> Path | None:
    """Renames a damaged index to <name>.damaged (replacing an older one), so a rebuild starts clean. One that
    still holds purged data (its erasure was interrupted) is removed instead: a purge leaves no copy behind."""
    if not path.exists():
        return None
    if (path / ERASE_PENDING).exists():
        shutil.rmtree(path)
        log.warning("removed the old index %s (it still held purged memories)", path)
        return None
    aside = path.with_name(f"{path.name}{DAMAGED}")
    shutil.rmtree(aside, ignore_errors=True)
    path.rename(aside)
    log.warning("moved the old index aside to %s", aside)
    return aside


def _describe(memory: str, quantized: bool) -> str:
    where = "on disk" if memory == "cold" else "in RAM"
    return f"{where} with int8 copies" if quantized else where


def _packed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as stored: TOP_LEVEL fields as they are, the others in one JSON string (see PACKED)."""
    stored = {k: v for k, v in payload.items() if k in TOP_LEVEL}
    rest = {k: v for k, v in payload.items() if k not in TOP_LEVEL}
    if rest:
        stored[PACKED] = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return stored


def _unpacked(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as written (see _packed); a field set later by set_payload wins over its packed value."""
    packed = payload.pop(PACKED, None)
    if packed is None:
        return payload
    out: dict[str, Any] = json.loads(packed)
    out.update(payload)
    return out


def _key(payload: dict[str, Any] | None, point: Any) -> str:
    """The id a search hit is known by: its KEY (the point id itself for a point stored without one)."""
    return str((payload or {}).get(KEY) or point)


def _dense(vector: Any) -> list[float]:
    return list(vector.get(DENSE) or []) if isinstance(vector, dict) else []


def to_edge(flt: Filter) -> qe.Filter:
    """The filter in qdrant-edge's words."""
    return qe.Filter(must=[_condition(c) for c in flt.must], must_not=[_condition(c) for c in flt.must_not] or None)


def _condition(condition: Condition) -> qe.FieldCondition:
    match condition:
        case Match(key, value):
            return qe.FieldCondition(key, match=qe.MatchValue(value))
        case MatchAny(key, values):
            return qe.FieldCondition(key, match=qe.MatchAny(list(values)))
        case Range(key, gte, gt, lte, lt):
            return qe.FieldCondition(key, range=qe.RangeFloat(gte=gte, gt=gt, lte=lte, lt=lt))


def _filter(namespace: str, flt: SearchFilter | None) -> qe.Filter:
    return to_edge(conditions(namespace, flt))
