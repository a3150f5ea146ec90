"""The mutation log's port: what services need from the durable, ordered log, independent of its engine.

The adapter is engram.log.nats (NATS JetStream); nothing else touches the NATS client. Sequence numbers are the
cursor everywhere: every entry has one, in append order, and readers resume from them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

SUBJECT_PREFIX = "engram.events"


def subject(namespace: str, event: str) -> str:
    """engram.events.<namespace>.<event>"""
    return f"{SUBJECT_PREFIX}.{namespace}.{event}"


@dataclass(frozen=True, slots=True)
class Appended:
    """Where an append landed; duplicate means the log had already stored this message id at seq."""

    seq: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One mutation read back from the log."""

    seq: int
    subject: str
    body: dict[str, Any]

    @property
    def event(self) -> str:
        return self.subject.rsplit(".", 1)[-1]


class Overtaken(Exception):
    """A conditional append found a newer entry about the same thing after the sequence it was based on."""

    def __init__(self, entry: LogEntry) -> None:
        super().__init__(f"log entry {entry.seq} changed it first")
        self.entry = entry


# A predicate over the entries appended since a write's base: True means the write is based on stale state.
Stale = Callable[[LogEntry], bool]


class LogState(Protocol):
    """Told when the log becomes unreachable or stops acknowledging writes, and when it recovers."""

    def log_unreachable(self, detail: str) -> None: ...

    def log_reachable(self) -> None: ...

    def log_stalled(self, detail: str) -> None: ...

    def log_acknowledging(self) -> None: ...

    def log_down(self) -> bool:
        """True while the log is known to be unreachable (by the connection, or by whoever runs its server)."""
        ...


class NoState:
    """A LogState that ignores everything (tools and tests that have no health to report)."""

    def log_unreachable(self, detail: str) -> None:
        return None

    def log_reachable(self) -> None:
        return None

    def log_stalled(self, detail: str) -> None:
        return None

    def log_acknowledging(self) -> None:
        return None

    def log_down(self) -> bool:
        return False


class Subscription(Protocol):
    async def unsubscribe(self) -> None: ...


class WorkItem(Protocol):
    """One log entry handed to a worker. Settle it exactly once: ack, nak (retry later) or term (give up)."""

    @property
    def seq(self) -> int: ...

    @property
    def subject(self) -> str: ...

    @property
    def body(self) -> dict[str, Any]: ...

    @property
    def attempt(self) -> int:
        """1 on the first delivery; counts redeliveries after a nak or an expired ack_wait."""

    @property
    def event(self) -> str: ...

    async def ack(self) -> None: ...

    async def nak(self, delay: float = 0.0) -> None: ...

    async def term(self) -> None: ...

    async def in_progress(self) -> None: ...


class WorkQueue(Protocol):
    """A durable queue over the log's entries, shared by the replicas of one worker; restarts resume."""

    durable: str

    async def fetch(self, batch: int = 1, *, timeout: float = ...) -> Sequence[WorkItem]: ...

    async def close(self) -> None: ...


class Log(Protocol):
    """Appends mutations and reads them back in order."""

    @property
    def connected(self) -> bool: ...

    def on_reconnect(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Calls listener after the connection to the log came back (follows resume by themselves)."""

    async def append(
        self,
        namespace: str,
        event: str,
        body: dict[str, Any],
        *,
        msg_id: str,
        based_on: int = 0,
        stale: Stale | None = None,
    ) -> Appended:
        """Appends one entry exactly once per msg_id; raises Unavailable or DiskFull when it cannot.

        With ``stale``, the append is conditional: it happens only if no entry after ``based_on`` (the sequence
        the writer's state reflects) makes ``stale`` true, checked atomically with the append; otherwise it
        raises Overtaken with the first such entry.
        """

    async def erase(self, seqs: Sequence[int]) -> int:
        """Removes entries for good (their data overwritten); returns how many existed and were removed."""

    async def read(self, seq: int) -> LogEntry | None: ...

    async def last_seq(self) -> int: ...

    def seen_seq(self) -> int | None:
        """The newest sequence this process appended (or read as the end) without a round trip: a lower bound of
        last_seq(), or None when it knows none. A conditional append may be based on it (the entries after it are
        read by the append), where a round trip for the exact end would cost every save one more wait."""

    async def count_events(self, event: str) -> int:
        """How many entries of this event type the log holds (all namespaces)."""

    async def read_after(self, seq: int, *, subjects: str, limit: int) -> tuple[list[LogEntry], bool]:
        """Up to ``limit`` entries after ``seq`` on ``subjects``, oldest first, and whether more follow them."""

    async def follow(
        self,
        start_seq: int,
        handler: Callable[[LogEntry], Awaitable[None]],
        *,
        subjects: str | None = None,
        headers_only: bool = False,
    ) -> Subscription:
        """Delivers every entry from start_seq on, in order, to handler; ``headers_only``: entries without their
        bodies (an empty body: for a follower that needs only sequences and subjects)."""

    async def work_queue(
        self, durable: str, subjects: str | Sequence[str], *, ack_wait: float, deliver_all: bool = True
    ) -> WorkQueue:
        """Opens (creating it the first time) the durable work queue ``durable`` over ``subjects``."""

    async def close(self) -> None: ...
