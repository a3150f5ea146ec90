"""Counts reads of memories and writes them to the log in batches, never one log entry per read.

A search hit or a get notes the memory; every ``interval`` seconds the counts gathered so far go to the log as
one ``memory_accessed`` entry per namespace, which the indexer adds to each memory's ``access_count`` and
``last_accessed_at`` (no new version: a read is not a change). Counts not yet flushed when the process dies are
lost: they are statistics, not memories.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable

from engram.errors import EngramError
from engram.events import MEMORY_ACCESSED, SCHEMA_VERSION
from engram.ids import uuid7
from engram.log import Log
from engram.model import format_time
from engram.periodic import Periodic

DEFAULT_FLUSH_SECONDS = 10.0
MAX_PENDING_IDS = 100_000  # per namespace; beyond it, new ids wait for the next flush (counts are approximate)


class AccessRecorder:
    """Gathers read counts in memory and flushes them to the log periodically (and on stop)."""

    def __init__(
        self,
        event_log: Log,
        *,
        interval: float = DEFAULT_FLUSH_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._log = event_log
        self._clock = clock
        self._pending: dict[str, Counter[str]] = {}
        self._periodic = Periodic("access-flush", interval, self.flush)

    def note(self, namespace: str, memory_ids: Iterable[str]) -> None:
        """Counts one read of each memory; cheap, synchronous, never touches the log."""
        counts = self._pending.setdefault(namespace, Counter())
        for memory_id in memory_ids:
            if memory_id in counts or len(counts) < MAX_PENDING_IDS:
                counts[memory_id] += 1

    async def start(self) -> None:
        self._periodic.start()

    async def stop(self) -> None:
        await self._periodic.stop()
        with contextlib.suppress(EngramError):  # the log may be gone at shutdown: the counts are statistics
            await self.flush()

    async def flush(self) -> int:
        """Writes what was gathered: one entry per namespace. Returns the number of entries written."""
        pending, self._pending = self._pending, {}
        written = 0
        for position, (namespace, counts) in enumerate(pending.items()):
            if not counts:
                continue
            body = {
                "schema": SCHEMA_VERSION,
                "event": MEMORY_ACCESSED,
                "namespace": namespace,
                "time": format_time(self._clock()),
                "counts": dict(counts),
            }
            try:
                await self._log.append(namespace, MEMORY_ACCESSED, body, msg_id=f"accessed:{uuid7()}")
            except EngramError:
                for unwritten, rest in list(pending.items())[position:]:  # kept for the next flush
                    self._pending.setdefault(unwritten, Counter()).update(rest)
                raise
            written += 1
        return written
