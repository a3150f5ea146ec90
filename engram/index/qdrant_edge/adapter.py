"""EdgeIndex: the index port on a Qdrant Edge shard in the data dir (embedded mode and edge devices)."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engram.errors import DiskFull
from engram.index import (
    CREATED_TS,
    DENSE,
    KEY,
    META_ID,
    QUESTIONS,
    SPARSE,
    STATE_ID,
    IndexPoint,
    IndexQuery,
    Position,
    Scored,
    filters,
    keyed,
    point_id,
    stored_point,
)
from engram.index.filters import Filter, Range, conditions
from engram.index.listing import recent_page
from engram.index.qdrant_edge import settings as shard_settings
from engram.index.qdrant_edge.disk import (
    DAMAGED,
    ERASE_PENDING,
    ERASING,
    REWRITING,
    copy_room,
    move_aside,
    remove_leftovers,
    sibling,
    write_marker,
)
from engram.index.qdrant_edge.process import InProcess, ShardProcess
from engram.index.qdrant_edge.settings import VECTORS_RAM, ShardSettings
from engram.index.qdrant_edge.shard import ShardCore
from engram.index.qdrant_edge.swap import SwapBuilds
from engram.model import STATUSES, SearchFilter
from engram.process.health import MIB

log = logging.getLogger(__name__)

# The applied log sequence lives in the shard itself (META_ID), written after the points it covers, so the
# shard's WAL recovers both together: on restart the indexer never skips an entry it did not apply. The
# indexer's state (STATE_ID), when given, is written in the same update.
DEFAULT_OPTIMIZE_AFTER = 2000
QUESTIONS_KEY = "questions"  # in the applied-sequence record: whether any point may hold question vectors
COPY_PAGE = 1024  # points per read while copying: the lock is held per page, so reads go on meanwhile
# The copy builds its vector index every this many points, each build short (optimize() holds the GIL: the node
# answers nothing meanwhile): at 50k memories 2.6-3.8 s per build, where one build after the copy took 24 s and
# left it to maintain() froze the node for 20-33 s after the purge (measured).
COPY_INDEX_EVERY = 10_000


class EdgeIndex(SwapBuilds):
    """MemoryIndex on a Qdrant Edge shard. Thread-safe: every call holds one lock.

    With ``process`` (the node's default, ENGRAM_INDEX_PROCESS), the shard lives in a process of its own
    (engram.index.qdrant_edge.process), so nothing it does holds the node's GIL; otherwise in this process."""

    def __init__(
        self,
        path: Path,
        *,
        dim: int,
        optimize_after: int = DEFAULT_OPTIMIZE_AFTER,
        vectors: str = VECTORS_RAM,
        segments: tuple[int, int, int] | None = None,
        process: bool = False,
    ) -> None:
        """``segments``: the optimizer's (segment count, segment KB, indexing KB); SEGMENTS, SEGMENT_KB and
        INDEXING_KB by default (engram.index.qdrant_edge.settings)."""
        # Read here, not at import: a test may set them.
        default = (shard_settings.SEGMENTS, shard_settings.SEGMENT_KB, shard_settings.INDEXING_KB)
        settings = ShardSettings(dim, vectors, segments or default)
        super().__init__(path, settings, process=process)
        self._optimize_after = optimize_after
        self._lock = threading.Lock()
        self._shard = self._open()
        # Whether any point may hold question vectors: a search without them skips that retriever, which costs a
        # scan of the (absent) vectors all the same (1.7 of 5.6 ms at 50k, measured). Recorded with the applied
        # sequence; a shard that does not record it (written before, or loaded as it is) is taken to hold some.
        self._questions = self._recorded_questions()

    def _open(self) -> InProcess | ShardProcess:
        self._drop_alias()
        remove_leftovers(self._path)  # interrupted by a crash (erase_deleted, maintain)
        return self._start(self._path)

    # Writes

    def upsert(self, points: list[IndexPoint]) -> None:
        plain = []
        for point in points:
            vectors: dict[str, Any] = {DENSE: point.dense, SPARSE: (point.sparse.indices, point.sparse.values)}
            if point.questions:
                vectors[QUESTIONS] = point.questions
                self._questions = True
            plain.append((point_id(point.payload["namespace"], point.id), vectors, {**point.payload, KEY: point.id}))
        with self._lock:
            self._update("upsert", plain)
            self._unindexed += len(plain)

    def delete_memory(self, namespace: str, memory_id: str) -> None:
        condition = filters.memory_points(namespace, memory_id)
        with self._lock:
            if not self._shard.call("count", condition):
                return
            write_marker(self._path / ERASE_PENDING)
            self._update("delete", condition)

    def set_fields(self, namespace: str, fields: dict[str, dict[str, Any]]) -> None:
        present = {p["id"] for p in self.retrieve(namespace, list(fields))}  # keys are memory ids here
        with self._lock:
            for key, values in fields.items():
                if key in present:
                    self._update("set_payload", [point_id(namespace, key)], values)
            # No count towards optimize(): a payload change leaves the point in its indexed segment (measured).

    def update_questions(self, namespace: str, id: str, questions: list[list[float]], texts: list[str]) -> bool:
        if not self.retrieve(namespace, [id]):
            return False
        point = point_id(namespace, id)
        self._questions = self._questions or bool(questions)
        with self._lock:
            self._update("set_vectors", point, {QUESTIONS: questions})
            self._update("set_payload", [point], {"questions": texts})
        return True

    def set_applied_seq(self, seq: int, *, skipped: int = 0, state: dict[str, Any] | None = None) -> None:
        points: list[tuple[str, dict[str, Any]]] = [] if state is None else [(STATE_ID, {"state": state})]
        points.append((META_ID, {"applied_seq": seq, "skipped": skipped, QUESTIONS_KEY: self._questions}))
        with self._lock:
            self._update("write_raw", points)
        self._swap_if_built()  # once per applied batch: a finished build waits no longer than that

    # Reads

    def _read(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._shard.call(method, *args, **kwargs)

    def retrieve(self, namespace: str, ids: list[str]) -> list[dict[str, Any]]:
        records = self._read("retrieve", [point_id(namespace, key) for key in ids])
        return keyed([payload for _, payload, _ in records], namespace)

    def retrieve_points(self, namespace: str, ids: list[str], *, dense_only: bool = False) -> list[IndexPoint]:
        points = [point_id(namespace, key) for key in ids]
        records = self._read("retrieve", points, vectors=[DENSE] if dense_only else True)
        return [
            stored_point(str(payload.get(KEY) or pid), payload, vectors)
            for pid, payload, vectors in records
            if payload.get("namespace") == namespace
        ]

    def versions_of(self, namespace: str, memory_id: str) -> list[dict[str, Any]]:
        return self._scroll_all(filters.memory_points(namespace, memory_id))

    def _scroll_all(self, condition: Filter, page: int = 256) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset = None
        while True:
            records, offset = self._read("scroll", condition, page, offset)
            out.extend(payload for _, payload, _ in records)
            if offset is None:
                return out

    def facet(self, namespace: str, key: str, flt: SearchFilter | None = None) -> dict[str, int]:
        condition = conditions(namespace, flt or SearchFilter(statuses=list(STATUSES)))
        return dict(self._read("facet", key, condition, 10_000))

    def namespaces(self) -> dict[str, int]:
        return dict(self._read("facet", "namespace", filters.ACTIVE, 100_000))

    def due(self, at: float, limit: int) -> list[dict[str, Any]]:
        records, _ = self._read("scroll", filters.due(at), limit)
        return [payload for _, payload, _ in records]

    def search(self, request: IndexQuery) -> dict[str, list[Scored]]:
        queries: list[tuple[str, Any]] = []
        if request.dense is not None:
            queries.append((DENSE, request.dense))
        if request.sparse is not None and request.sparse.indices:
            queries.append((SPARSE, (request.sparse.indices, request.sparse.values)))
        if request.questions is not None:
            queries.append((QUESTIONS, request.questions))
        flt = conditions(request.namespace, request.filter)
        selected = True if request.with_payload else list(request.fields)
        results = self._read("search", flt, request.limit, queries, selected) if queries else []
        return {
            name: [Scored(key, score, payload) for key, score, payload in hits]
            for (name, _), hits in zip(queries, results, strict=True)
        }

    def recent(
        self, namespace: str, flt: SearchFilter, limit: int, after: Position | None = None, *, by: str = CREATED_TS
    ) -> list[dict[str, Any]]:
        condition = conditions(namespace, flt)

        def by_time(older_than: float | None, size: int) -> list[dict[str, Any]]:
            bounded = condition if older_than is None else condition.also(Range(by, lt=older_than))
            return list(self._read("listing", bounded, size, None, by))

        def at_time(ts: float, from_point: str, size: int) -> list[dict[str, Any]]:
            tied = condition.also(Range(by, gte=ts, lte=ts))
            return list(self._read("listing", tied, size, from_point or None, None))

        return recent_page(by_time, at_time, limit, after, by=by)

    def scan(
        self, namespace: str, flt: SearchFilter, *, with_vectors: bool = False, page: int = 256
    ) -> Iterator[list[tuple[dict[str, Any], list[float]]]]:
        condition = conditions(namespace, flt)
        offset = None
        while True:
            rows, offset = self._read("scan_page", condition, page, offset, with_vectors)
            yield rows
            if offset is None:
                return

    def count(self, namespace: str, flt: SearchFilter | None = None) -> int:
        return int(self._read("count", conditions(namespace, flt)))

    def held_elsewhere(self, namespace: str, memory_id: str) -> bool:
        return int(self._read("count", filters.held_elsewhere(namespace, memory_id))) > 0

    def point_count(self) -> int:
        return int(self._read("point_count"))

    def check(self) -> str | None:
        return self._read("check")  # type: ignore[no-any-return]

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

    def _meta(self, point: str = META_ID) -> dict[str, Any]:
        return dict(self._read("raw", point))

    # Housekeeping

    def flush(self) -> None:
        with self._lock:
            self._shard.call("flush")

    def close(self) -> None:
        with self._lock:
            self._cancel_build()
            self._shard.call("flush")
            self._shard.close()
            self._drop_alias()
        self._join_swapper()  # a swap under way finds the build gone and drops its copy
        with self._lock:
            self._drop_alias()  # the link a swap that ended meanwhile made, renaming the shard it had swapped in

    def reset(self) -> None:
        """Drops everything (the index is rebuilt from the log); a damaged copy is kept aside for inspection."""
        with self._lock:
            self._cancel_build()
            self._shard.close()
            move_aside(self._path)
            self._shard = self._open()
            self._questions = False

    def erase_deleted(self) -> None:
        """After a purge: copies the live points into a fresh shard and replaces this one with it, so that no file
        under the data dir keeps what was deleted (its WAL and segments would), and removes a damaged copy kept
        aside (it may hold it too). Nothing to do unless delete_memory deleted something since the last copy.

        Reads go on meanwhile (the lock is held per page read, then for the swap), except during the copy's vector
        index builds (COPY_INDEX_EVERY), which run in this process; the caller (the indexer) is the only writer and
        does not write meanwhile. Raises DiskFull, with nothing changed, when the disk lacks room for the copy.
        Measured in the node: about 1 s at 2k memories, 2 s at 5k, 27 s at 50k (docs/operations.md).
        """
        if not (self._path / ERASE_PENDING).exists():
            return
        started = time.monotonic()
        with self._lock:
            self._cancel_build()  # the copy builds its own vector index
        fresh = sibling(self._path, REWRITING)
        shutil.rmtree(fresh, ignore_errors=True)
        self._require_copy_room()
        copy = ShardCore(fresh, self._settings, beside=self._path)
        try:
            copied = self._copy_into(copy)
            copy.flush()
        finally:
            copy.close()
        with self._lock:
            self._shard.close()
            self._path.rename(sibling(self._path, ERASING))
            fresh.rename(self._path)
            self._shard = self._open()  # which removes the old shard, as after a crash at this point
            self._unindexed = 0  # the copy built its vector index
        shutil.rmtree(sibling(self._path, DAMAGED), ignore_errors=True)
        log.info("rewrote %s without purged data (%d points) in %.1fs", self._path, copied,
                 time.monotonic() - started)  # fmt: skip

    def _copy_into(self, copy: ShardCore) -> int:
        """Copies every point, building the copy's vector index as it goes (see COPY_INDEX_EVERY)."""
        copied, unindexed, offset = 0, 0, None
        while True:
            records, offset = self._read("scroll", None, COPY_PAGE, offset, vectors=True, raw=True)
            if records:
                copy.write_records(records)
            copied += len(records)
            unindexed += len(records)
            if unindexed >= COPY_INDEX_EVERY or (offset is None and unindexed >= self._optimize_after):
                copy.optimize()
                unindexed = 0
            if offset is None:
                return copied

    def _require_copy_room(self) -> None:
        """The copy takes about the space the shard takes now, plus what loading it takes."""
        needed = copy_room(self._path)
        free = shutil.disk_usage(self._path).free
        if free < needed:
            raise DiskFull(
                f"only {free // MIB} MiB free in {self._path.parent}; erasing purged memories from the search index "
                f"needs about {needed // MIB} MiB there (a fresh copy of {self._path.name}).",
                hint="Free some space; the index finishes the erasure by itself.",
            )
