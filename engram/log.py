"""The durable, ordered mutation log: one JetStream stream whose subjects are the public event subjects."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import api

from engram.config import DEFAULT_STREAM
from engram.errors import Unavailable

log = logging.getLogger(__name__)

SUBJECT_PREFIX = "engram.events"
DEFAULT_PUBLISH_TIMEOUT = 5.0
DEFAULT_PUBLISH_ATTEMPTS = 5
MAX_CONFLICTS = 1000
DEFAULT_DUPLICATE_WINDOW = 120.0
_WRONG_LAST_SEQUENCE = 10071


def subject(namespace: str, event: str) -> str:
    """engram.events.<namespace>.<event>"""
    return f"{SUBJECT_PREFIX}.{namespace}.{event}"


@dataclass(frozen=True, slots=True)
class Appended:
    """Where an append landed; duplicate means JetStream had already stored this Nats-Msg-Id at seq."""

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


class EventLog:
    """Appends mutations and reads them back in order. Sequence numbers are the cursor everywhere.

    Every body carries its own sequence (so plain NATS subscribers see it): appends are made with
    `Nats-Expected-Last-Sequence`, which also makes concurrent writers from several ingest replicas safe.
    """

    def __init__(self, nc: NatsClient, *, stream: str = DEFAULT_STREAM) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._stream = stream
        self._lock = asyncio.Lock()
        self._last: int | None = None

    @classmethod
    async def connect(cls, url: str, *, stream: str = DEFAULT_STREAM, name: str = "engram") -> EventLog:
        """Connects to NATS and makes sure the stream exists."""
        try:
            nc = await nats.connect(
                url, name=name, max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=5
            )
        except (OSError, nats.errors.Error) as e:
            raise Unavailable(f"Cannot reach NATS at {url}: {e}. Is nats-server running?") from e
        event_log = cls(nc, stream=stream)
        await event_log.ensure_stream()
        return event_log

    @property
    def nats(self) -> NatsClient:
        return self._nc

    async def ensure_stream(self) -> None:
        """Creates the stream on first use (file storage, dedup window for Nats-Msg-Id)."""
        try:
            await self._js.stream_info(self._stream)
        except nats.js.errors.NotFoundError:
            await self._js.add_stream(
                api.StreamConfig(
                    name=self._stream,
                    subjects=[f"{SUBJECT_PREFIX}.>"],
                    storage=api.StorageType.FILE,
                    retention=api.RetentionPolicy.LIMITS,
                    duplicate_window=DEFAULT_DUPLICATE_WINDOW,
                    max_msg_size=4 * 1024 * 1024,
                )
            )

    async def last_seq(self) -> int:
        """The sequence of the newest entry (0 for an empty log)."""
        info = await self._js.stream_info(self._stream)
        return int(info.state.last_seq)

    async def append(self, namespace: str, event: str, body: dict[str, Any], *, msg_id: str) -> Appended:
        """Appends one mutation and returns its sequence once JetStream has stored it.

        `msg_id` makes retries idempotent: JetStream drops a second copy within the duplicate window.
        """
        async with self._lock:
            failures = conflicts = 0
            while failures < DEFAULT_PUBLISH_ATTEMPTS and conflicts < MAX_CONFLICTS:
                try:
                    if self._last is None:
                        self._last = await self.last_seq()
                    expected = self._last
                    payload = json.dumps({**body, "seq": expected + 1}, ensure_ascii=False).encode()
                    ack = await self._js.publish(
                        subject(namespace, event),
                        payload,
                        timeout=DEFAULT_PUBLISH_TIMEOUT,
                        stream=self._stream,
                        headers={"Nats-Msg-Id": msg_id, "Nats-Expected-Last-Sequence": str(expected)},
                    )
                except nats.js.errors.APIError as e:
                    if e.err_code != _WRONG_LAST_SEQUENCE:
                        raise Unavailable(f"The log refused the write: {e.description}") from e
                    # Another writer appended first: read the new end and retry, with jitter to break lockstep.
                    conflicts += 1
                    self._last = None
                    await asyncio.sleep(random.uniform(0, 0.002 * min(conflicts, 10)))
                    continue
                except (nats.errors.TimeoutError, nats.errors.ConnectionClosedError, nats.errors.NoRespondersError,
                        nats.js.errors.NoStreamResponseError) as e:  # fmt: skip
                    failures += 1
                    log.warning("append attempt %d failed: %r", failures, e)
                    self._last = None
                    await asyncio.sleep(min(0.05 * 2**failures, 1.0))
                    continue
                self._last = None if ack.duplicate else int(ack.seq)
                return Appended(int(ack.seq), bool(ack.duplicate))
        raise Unavailable("The log did not acknowledge the write after retries; nothing was saved. Retry later.")

    async def read(self, seq: int) -> LogEntry | None:
        """The entry at one sequence, or None when it does not exist."""
        try:
            msg = await self._js.get_msg(self._stream, seq)
        except nats.js.errors.NotFoundError:
            return None
        return LogEntry(seq=seq, subject=msg.subject or "", body=json.loads(msg.data or b"{}"))

    async def follow(
        self, start_seq: int, handler: Callable[[LogEntry], Awaitable[None]], *, subjects: str | None = None
    ) -> Any:
        """Delivers every entry from start_seq on, in order, to handler (an ordered push consumer)."""

        async def on_message(msg: Msg) -> None:
            seq = msg.metadata.sequence.stream
            try:
                body = json.loads(msg.data)
            except json.JSONDecodeError:
                log.error("log entry %d is not JSON; skipped", seq)
                return
            await handler(LogEntry(seq=seq, subject=msg.subject, body=body))

        return await self._js.subscribe(
            subjects or f"{SUBJECT_PREFIX}.>",
            cb=on_message,
            stream=self._stream,
            ordered_consumer=True,
            config=api.ConsumerConfig(
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(start_seq, 1)
            ),
        )

    async def close(self) -> None:
        if not self._nc.is_closed:
            await self._nc.drain()
