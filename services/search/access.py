"""Counts reads of memories and writes them to the log in batches, never one log entry per read.

A search hit or a get notes the memory; every ``interval`` seconds the counts gathered so far go to the log as
one ``memory_accessed`` entry per namespace, which the indexer adds to each memory's ``access_count`` and
``last_accessed_at`` (no new version: a read is not a change). The entry also names who read ("readers": agent,
device, source, the time of its last read, and "from_key" when the API key is bound to that agent), which the
agent registry counts as a sighting (last seen, devices, clients) but not as a write; a reader that named itself
(a shared key, dev mode) only refreshes an agent already known, so a made-up name never enters the registry by a
read. Counts not yet flushed when the process dies are lost: they are
statistics, not memories.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from engram.errors import EngramError
from engram.ids import uuid7
from engram.log import Log
from engram.log.events import MEMORY_ACCESSED, SCHEMA_VERSION
from engram.model import Caller, format_time
from engram.process import metrics
from engram.process.periodic import Periodic
from engram.scrub import scrub_text

DEFAULT_FLUSH_SECONDS = 10.0
MAX_PENDING_IDS = 100_000  # per namespace; beyond it, new ids wait for the next flush (counts are approximate)
MAX_PENDING_READERS = 1000  # per namespace; beyond it, new readers wait for a later read to be named

# Who read: (agent, device, source, whether the agent is the one its API key is bound to).
Reader = tuple[str, str, str, bool]


@dataclass(slots=True)
class _Pending:
    """What one namespace's reads gathered since the last flush."""

    counts: Counter[str] = field(default_factory=Counter)
    readers: dict[Reader, float] = field(default_factory=dict)  # the time of each reader's last read

    def merge(self, other: _Pending) -> None:
        self.counts.update(other.counts)
        for reader, at in other.readers.items():
            self.readers[reader] = max(at, self.readers.get(reader, at))

    def body(self, namespace: str, now: float) -> dict[str, object]:
        return {
            "schema": SCHEMA_VERSION,
            "event": MEMORY_ACCESSED,
            "namespace": namespace,
            "time": format_time(now),
            "counts": dict(self.counts),
            "readers": [
                _reader_json(agent, device, source, from_key, at)
                for (agent, device, source, from_key), at in self.readers.items()
            ],
        }


def _reader_json(agent: str, device: str, source: str, from_key: bool, at: float) -> dict[str, object]:
    # The client name is free text from the client: scrubbed like every text that reaches the log.
    source = scrub_text(source).text
    reader: dict[str, object] = {"agent": agent, "device": device, "source": source, "time": format_time(at)}
    if from_key:  # the agent its API key is bound to: the registry may add it (see agents.py)
        reader["from_key"] = True
    return reader


class AccessRecorder:
    """Gathers read counts and readers in memory and flushes them to the log periodically (and on stop)."""

    def __init__(
        self,
        event_log: Log,
        *,
        interval: float = DEFAULT_FLUSH_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._log = event_log
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._pending_reads = 0  # the reads counted in _pending, kept as a number for the metrics' scrape thread
        self._periodic = Periodic("access-flush", interval, self.flush)

    def note(self, caller: Caller, memory_ids: Iterable[str] = ()) -> None:
        """Counts one read of each memory by the caller (no memories: a read that found none); cheap,
        synchronous, never touches the log."""
        if not caller.namespace:
            return
        pending = self._pending.setdefault(caller.namespace, _Pending())
        for memory_id in memory_ids:
            if memory_id in pending.counts or len(pending.counts) < MAX_PENDING_IDS:
                pending.counts[memory_id] += 1
                self._pending_reads += 1
        reader = (caller.agent_id, caller.device, caller.source, caller.agent_from_key)
        if caller.agent_id and (reader in pending.readers or len(pending.readers) < MAX_PENDING_READERS):
            pending.readers[reader] = self._clock()

    def sample(self) -> Mapping[str, float]:
        """The reads waiting for the next flush (engram.process.metrics)."""
        return {metrics.ACCESS_PENDING_READS: self._pending_reads}

    async def start(self) -> None:
        self._periodic.start()
        metrics.watch(self)

    async def stop(self) -> None:
        metrics.unwatch(self)
        await self._periodic.stop()
        with contextlib.suppress(EngramError):  # the log may be gone at shutdown: the counts are statistics
            await self.flush()

    async def flush(self) -> int:
        """Writes what was gathered: one entry per namespace. Returns the number of entries written."""
        pending, self._pending, self._pending_reads = self._pending, {}, 0
        written = 0
        for position, (namespace, gathered) in enumerate(pending.items()):
            if not gathered.counts and not gathered.readers:
                continue
            body = gathered.body(namespace, self._clock())
            try:
                await self._log.append(namespace, MEMORY_ACCESSED, body, msg_id=f"accessed:{uuid7()}")
            except EngramError:
                for unwritten, rest in list(pending.items())[position:]:  # kept for the next flush
                    self._pending.setdefault(unwritten, _Pending()).merge(rest)
                    self._pending_reads += rest.counts.total()
                raise
            written += 1
        return written
