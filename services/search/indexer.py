"""Applies the log to the index, in order and idempotently, and lets reads wait for a sequence."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from engram.errors import Unavailable
from engram.events import MEMORY_ENRICHED, MEMORY_STATE_EVENTS, decode_dense, decode_questions, decode_sparse
from engram.index import IndexPoint, MemoryIndex
from engram.index.edge import CREATED_TS
from engram.log import EventLog, LogEntry
from engram.model import parse_time

log = logging.getLogger(__name__)

APPLIED_SEQ_EVERY = 1  # write the cursor with every entry: cheap in Qdrant Edge, and restarts replay nothing


class Indexer:
    """Follows the log from the index's last applied sequence; on start it catches up before reads are served."""

    def __init__(self, event_log: EventLog, index: MemoryIndex) -> None:
        self._log = event_log
        self._index = index
        self._applied = 0
        self._changed = asyncio.Condition()
        self._subscription: Any = None

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
        self._subscription = await self._log.follow(applied + 1, self._apply)
        if last > applied:
            log.info("catching up the index from seq %d to %d", applied, last)
            await self.wait_for(last, timeout=None)

    async def stop(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None
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

    async def _apply(self, entry: LogEntry) -> None:
        if entry.seq <= self._applied:
            return  # already applied: replays after a restart or a consumer reset
        try:
            if entry.body.get("event") == MEMORY_ENRICHED:
                await asyncio.to_thread(self._add_questions, entry.body)
            elif (point := self._point(entry)) is not None:
                await asyncio.to_thread(self._upsert_if_newer, point)
            await asyncio.to_thread(self._index.set_applied_seq, entry.seq)
        except Exception:
            # A bad entry must not stop the index forever; it is logged with its sequence for an operator.
            log.exception("failed to apply log entry %d (%s)", entry.seq, entry.subject)
        async with self._changed:
            self._applied = entry.seq
            self._changed.notify_all()

    def _point(self, entry: LogEntry) -> IndexPoint | None:
        body = entry.body
        if body.get("event") not in MEMORY_STATE_EVENTS or "memory" not in body or "vectors" not in body:
            return None
        payload: dict[str, Any] = dict(body["memory"])
        payload["seq"] = entry.seq
        payload[CREATED_TS] = parse_time(payload.get("created_at")) or 0.0
        vectors = body["vectors"]
        return IndexPoint(
            id=payload["id"], payload=payload, dense=decode_dense(vectors), sparse=decode_sparse(vectors)
        )

    def _add_questions(self, body: dict[str, Any]) -> None:
        vectors = decode_questions(body.get("vectors", {}))
        namespace, memory_id = body["namespace"], body["memory_id"]
        if vectors and not self._index.update_questions(namespace, memory_id, vectors, body["questions"]):
            log.warning("questions for unknown memory %s in %s ignored", memory_id, namespace)

    def _upsert_if_newer(self, point: IndexPoint) -> None:
        existing = self._index.retrieve(point.payload["namespace"], [point.id])
        if existing and int(existing[0].get("version", 0)) > int(point.payload.get("version", 0)):
            return  # version guard: an older version never overwrites a newer one
        self._index.upsert([point])
