"""Applies the log to the index in order, in batches and idempotently, and lets reads wait for a sequence."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from engram.errors import Unavailable
from engram.events import MEMORY_ENRICHED, MEMORY_STATE_EVENTS, decode_dense, decode_questions, decode_sparse
from engram.index import CREATED_TS, IndexPoint, MemoryIndex
from engram.log import EventLog, LogEntry
from engram.model import parse_time

log = logging.getLogger(__name__)

MAX_BATCH = 256  # entries applied per index call; bounds how long one apply holds the index
# No new entries for this long: a good moment for index maintenance. Short, so that after a bulk import the
# vector index is rebuilt before searches pile up on brute force; maintenance never delays acknowledgements.
IDLE_SECONDS = 1.0


class Indexer:
    """Follows the log from the index's last applied sequence; on start it catches up before reads are served."""

    def __init__(self, event_log: EventLog, index: MemoryIndex) -> None:
        self._log = event_log
        self._index = index
        self._applied = 0
        self._changed = asyncio.Condition()
        self._queue: asyncio.Queue[LogEntry] = asyncio.Queue()
        self._subscription: Any = None
        self._worker: asyncio.Task[None] | None = None

    @property
    def applied_seq(self) -> int:
        return self._applied

    async def start(self) -> None:
        applied = await asyncio.to_thread(self._index.applied_seq)
        last = await self._log.last_seq()
        if applied > last:
            # The index is ahead of the log: it belongs to another log (a wiped data dir). Rebuild it.
            log.warning("index at seq %d but log ends at %d: rebuilding the index from the log", applied, last)
            await asyncio.to_thread(self._index.reset)
            applied = 0
        self._applied = applied
        self._worker = asyncio.create_task(self._run(), name="indexer")
        self._subscription = await self._log.follow(applied + 1, self._queue.put)
        if last > applied:
            log.info("catching up the index from seq %d to %d", applied, last)
            await self.wait_for(last, timeout=None)

    async def stop(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        await asyncio.to_thread(self._index.flush)

    async def wait_for(self, seq: int, *, timeout: float | None) -> None:
        """Returns once the index has applied seq; raises Unavailable after timeout seconds."""
        if seq <= self._applied:
            return
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: self._applied >= seq), timeout)
            except TimeoutError as e:
                raise Unavailable(
                    f"The index has not caught up with your write yet (at {self._applied}, need {seq}). Retry shortly."
                ) from e

    async def _run(self) -> None:
        while True:
            try:
                first = await asyncio.wait_for(self._queue.get(), IDLE_SECONDS)
            except TimeoutError:
                # Idle: let the index do its housekeeping (Qdrant Edge builds its HNSW graph here).
                await asyncio.to_thread(self._index.maintain)
                continue
            batch = [first]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            batch = [entry for entry in batch if entry.seq > self._applied]  # replays after a consumer reset
            if not batch:
                continue
            await asyncio.to_thread(self._apply, batch)
            async with self._changed:
                self._applied = batch[-1].seq
                self._changed.notify_all()

    def _apply(self, batch: list[LogEntry]) -> None:
        """Applies entries in log order: runs of memory versions are upserted together, then the cursor."""
        run: list[IndexPoint] = []
        for entry in batch:
            try:
                if entry.body.get("event") == MEMORY_ENRICHED:
                    self._upsert_newest(run)
                    run = []
                    self._add_questions(entry.body)
                elif (point := _point(entry)) is not None:
                    run.append(point)
            except (KeyError, ValueError, TypeError):
                # A malformed entry must not stop the index forever; it is logged with its sequence.
                log.exception("skipped malformed log entry %d (%s)", entry.seq, entry.subject)
        self._upsert_newest(run)
        self._index.set_applied_seq(batch[-1].seq)

    def _upsert_newest(self, points: list[IndexPoint]) -> None:
        """Version guard: an older version never overwrites a newer one (in the index or later in the batch)."""
        if not points:
            return
        newest: dict[str, IndexPoint] = {}
        for point in points:
            held = newest.get(point.id)
            if held is None or _version(point) >= _version(held):
                newest[point.id] = point
        by_namespace: dict[str, list[str]] = {}
        for point in newest.values():
            by_namespace.setdefault(point.payload["namespace"], []).append(point.id)
        stored = {
            payload["id"]: int(payload.get("version", 0))
            for namespace, ids in by_namespace.items()
            for payload in self._index.retrieve(namespace, ids)
        }
        fresh = [p for p in newest.values() if stored.get(p.id, 0) <= _version(p)]
        if fresh:
            self._index.upsert(fresh)

    def _add_questions(self, body: dict[str, Any]) -> None:
        vectors = decode_questions(body.get("vectors", {}))
        namespace, memory_id = body["namespace"], body["memory_id"]
        if vectors and not self._index.update_questions(namespace, memory_id, vectors, body["questions"]):
            log.warning("questions for unknown memory %s in %s ignored", memory_id, namespace)


def _point(entry: LogEntry) -> IndexPoint | None:
    body = entry.body
    if body.get("event") not in MEMORY_STATE_EVENTS or "memory" not in body or "vectors" not in body:
        return None
    payload: dict[str, Any] = dict(body["memory"])
    payload["seq"] = entry.seq
    payload[CREATED_TS] = parse_time(payload.get("created_at")) or 0.0
    vectors = body["vectors"]
    return IndexPoint(id=payload["id"], payload=payload, dense=decode_dense(vectors), sparse=decode_sparse(vectors))


def _version(point: IndexPoint) -> int:
    return int(point.payload.get("version", 0))
