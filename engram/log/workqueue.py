"""The work queue adapter on JetStream: a durable pull consumer whose entries are acked, retried later or dropped."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from engram.config import DEFAULT_STREAM
from engram.errors import Unavailable

log = logging.getLogger(__name__)

DEFAULT_ACK_WAIT_SECONDS = 120.0
DEFAULT_FETCH_TIMEOUT = 5.0
DEFAULT_MAX_ACK_PENDING = 256
DEFAULT_ACK_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class NatsWorkItem:
    """One log entry handed to a worker. Settle it exactly once: ack, nak (retry later) or term (give up)."""

    seq: int
    subject: str
    body: dict[str, Any]
    attempt: int  # 1 on the first delivery; counts redeliveries after a nak or an expired ack_wait
    msg: Msg = field(repr=False, compare=False)

    @property
    def event(self) -> str:
        return self.subject.rsplit(".", 1)[-1]

    async def ack(self) -> None:
        """Done: never delivered again. Waits for the server, so a restart right after cannot redeliver it."""
        async with _settling(self, "ack"):
            await self.msg.ack_sync(timeout=DEFAULT_ACK_TIMEOUT)

    async def nak(self, delay: float = 0.0) -> None:
        """Not done: deliver again after `delay` seconds (at once for 0)."""
        async with _settling(self, "nak"):
            await self.msg.nak(delay=delay if delay > 0 else None)

    async def term(self) -> None:
        """Give up: never delivered again."""
        async with _settling(self, "term"):
            await self.msg.term()

    async def in_progress(self) -> None:
        """Still working: restarts the ack_wait clock so the entry is not redelivered meanwhile."""
        async with _settling(self, "in_progress"):
            await self.msg.in_progress()


@contextlib.asynccontextmanager
async def _settling(item: NatsWorkItem, what: str) -> AsyncIterator[None]:
    try:
        yield
    except (nats.errors.Error, OSError) as e:
        # The entry stays unsettled on the server and comes back after ack_wait: nothing is lost.
        raise Unavailable(f"Could not {what} log entry {item.seq}: {e!r}. It will be delivered again.") from e


class NatsWorkQueue:
    """A durable pull consumer on the log's stream. Restarts resume after the last settled entry; an entry
    that is neither acked nor termed within `ack_wait` is delivered again (to this or another replica)."""

    def __init__(self, subscription: JetStreamContext.PullSubscription, *, durable: str) -> None:
        self._sub = subscription
        self.durable = durable

    @classmethod
    async def open(
        cls,
        nc: NatsClient,
        *,
        durable: str,
        subjects: str | Sequence[str],
        stream: str = DEFAULT_STREAM,
        ack_wait: float = DEFAULT_ACK_WAIT_SECONDS,
        max_ack_pending: int = DEFAULT_MAX_ACK_PENDING,
        deliver_policy: api.DeliverPolicy = api.DeliverPolicy.ALL,
    ) -> NatsWorkQueue:
        """Creates the durable consumer (or updates the settings an existing one may change) and binds to it.

        `deliver_policy` only matters the first time: afterwards the consumer remembers its position.
        """
        js = nc.jetstream()
        filters = [subjects] if isinstance(subjects, str) else list(subjects)
        config = api.ConsumerConfig(
            name=durable,
            durable_name=durable,
            deliver_policy=deliver_policy,
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=ack_wait,
            max_deliver=-1,  # the worker counts attempts itself and terms, so it can log what it gave up on
            max_ack_pending=max_ack_pending,
            filter_subject=filters[0] if len(filters) == 1 else None,
            filter_subjects=filters if len(filters) > 1 else None,
        )
        try:
            await js.add_consumer(stream, config=config)
        except nats.js.errors.APIError as e:
            # An existing consumer whose fixed settings (e.g. deliver policy) differ: keep it and its position.
            log.warning("work queue %s keeps its existing consumer settings: %s", durable, e.description)
        except (nats.errors.Error, OSError) as e:
            raise Unavailable(f"Cannot create the work queue {durable} on stream {stream}: {e!r}.") from e
        subscription = await js.pull_subscribe_bind(durable=durable, stream=stream)
        return cls(subscription, durable=durable)

    async def fetch(self, batch: int = 1, *, timeout: float = DEFAULT_FETCH_TIMEOUT) -> list[NatsWorkItem]:
        """Waits up to `timeout` seconds for entries; returns at most `batch` of them (none on timeout)."""
        try:
            messages = await self._sub.fetch(batch, timeout=timeout)
        except TimeoutError:  # nats' own and asyncio's: no entry arrived in time
            return []
        except (nats.errors.Error, OSError) as e:
            raise Unavailable(f"Cannot fetch from the work queue {self.durable}: {e!r}. Is NATS up?") from e
        items = []
        for msg in messages:
            item = await self._item(msg)
            if item is not None:
                items.append(item)
        return items

    async def info(self) -> api.ConsumerInfo:
        """The consumer's server-side state (pending and unacknowledged counts, position)."""
        return await self._sub.consumer_info()

    async def close(self) -> None:
        """Stops receiving. Unsettled entries are redelivered after ack_wait (or at once if nak'ed)."""
        try:
            await self._sub.unsubscribe()
        except (nats.errors.Error, ValueError) as e:
            log.debug("work queue %s: unsubscribe failed: %r", self.durable, e)

    async def _item(self, msg: Msg) -> NatsWorkItem | None:
        meta = msg.metadata
        try:
            body = json.loads(msg.data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            log.error("work queue %s: log entry %d is not a JSON object; skipped", self.durable, meta.sequence.stream)
            with contextlib.suppress(nats.errors.Error):
                await msg.term()
            return None
        return NatsWorkItem(meta.sequence.stream, msg.subject, body, meta.num_delivered, msg)
