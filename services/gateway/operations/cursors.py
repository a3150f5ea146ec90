"""Read-your-writes: the log sequences this gateway acknowledged per namespace, and those of its replicas."""

from __future__ import annotations

import contextlib
import threading

from engram.log import Log, LogEntry, Subscription


class CursorTracker:
    """The highest log sequence this gateway process acknowledged per namespace.

    Reads ask the index to have applied at least this much, so a read through this gateway sees every
    write this gateway acknowledged before it (read-your-writes across agents of a namespace).
    """

    def __init__(self) -> None:
        self._seqs: dict[str, int] = {}
        self._lock = threading.Lock()  # stdio and HTTP may share one tracker across threads

    def observe(self, namespace: str, seq: int) -> None:
        """Records an acknowledged write."""
        with self._lock:
            if seq > self._seqs.get(namespace, 0):
                self._seqs[namespace] = seq

    def namespaces(self) -> list[str]:
        with self._lock:
            return list(self._seqs)

    def get(self, namespace: str) -> int:
        """The highest acknowledged sequence of ``namespace`` (0 if none)."""
        return self._seqs.get(namespace, 0)

    def min_seq(self, namespace: str, requested: int | None = None) -> int:
        """What a read waits for: the caller's ``min_seq`` or this gateway's cursor, whichever is later."""
        return max(self.get(namespace), requested or 0)

    async def follow(self, event_log: Log) -> LogFollower:
        """Also records every write other gateway replicas acknowledge, as the log delivers it (sequences and
        subjects only, no bodies), so a caller whose requests land on different replicas still reads its writes."""
        follower = LogFollower(event_log, self)
        await follower.start()
        return follower


class LogFollower:
    """A CursorTracker's subscription to the log, from the log's end on (what was acknowledged before is at or
    before that end); after a reconnection the log resumes it after the last entry it saw."""

    def __init__(self, event_log: Log, cursors: CursorTracker) -> None:
        self._log = event_log
        self._cursors = cursors
        self._subscription: Subscription | None = None

    async def start(self) -> None:
        end = await self._log.last_seq()
        for namespace in self._cursors.namespaces():
            self._cursors.observe(namespace, end)  # what was acknowledged while this gateway was not following
        self._subscription = await self._log.follow(end + 1, self._observe, headers_only=True)

    async def _observe(self, entry: LogEntry) -> None:
        parts = entry.subject.split(".")
        if len(parts) == 4:  # engram.events.<namespace>.<event>
            self._cursors.observe(parts[2], entry.seq)

    async def unsubscribe(self) -> None:
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            with contextlib.suppress(Exception):  # the log's connection may be gone already
                await subscription.unsubscribe()
