"""Live event streams: the log's events of a namespace, filtered, resumable from a log sequence, through a bounded
queue per client (a slow client loses its oldest events and is told where to resume; it never grows the server's
memory). Also the reading side of the format (EventParser), for clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from engram.config import Settings
from engram.errors import InvalidArgument, Unavailable
from engram.log import Log, LogEntry, Subscription, subject
from engram.log.events import MEMORY_ACCESSED
from engram.model import IMPORTANCES
from engram.process import metrics

log = logging.getLogger(__name__)

GAP_EVENT = "gap"

HEARTBEAT = b": keep-alive\n\n"

INTERNAL_FIELDS = frozenset({"vectors"})  # kept in the log to rebuild the index without re-embedding; not for listeners

QUIET_EVENTS = frozenset({MEMORY_ACCESSED})  # read-count bookkeeping: sent only when asked for by name

IMPORTANCE_RANK = {name: rank for rank, name in enumerate(IMPORTANCES)}

NO_LOG = (
    "Live events are read from the log, and this gateway has none: set ENGRAM_NATS_URL to the log's NATS URL "
    "(the embedded node `engram serve` has it already)."
)

LOG_DOWN = "The log (NATS) is unreachable right now. Reconnect in a few seconds, with Last-Event-ID to miss nothing."

STOPPING = "The gateway is stopping. Reconnect in a few seconds, with Last-Event-ID to miss nothing."


@dataclass(frozen=True, slots=True)
class EventFilter:
    """What one client asked for: every condition given must hold; a set matches any of its members."""

    events: frozenset[str] = frozenset()  # empty: every event except the quiet ones
    topics: frozenset[str] = frozenset()
    importance: str | None = None  # the minimum level
    agent: str | None = None  # only events written by this agent (its id, or agent@device)
    exclude: tuple[str, str] | None = None  # (agent id, device) of the caller, with exclude_self

    def matches(self, event: str, body: dict[str, Any]) -> bool:
        named = event in self.events if self.events else event not in QUIET_EVENTS
        if not named:
            return False
        if self.topics and self.topics.isdisjoint(body.get("topics") or ()):
            return False
        if self.importance and IMPORTANCE_RANK.get(str(body.get("importance")), -1) < IMPORTANCE_RANK[self.importance]:
            return False
        writer, device = str(body.get("agent") or ""), str(body.get("device") or "")
        if self.agent and self.agent not in (writer, f"{writer}@{device}"):
            return False
        return self.exclude is None or not written_by(self.exclude, writer, device)


def written_by(caller: tuple[str, str], agent: str, device: str) -> bool:
    """True when (agent, device) is the caller: the same agent id, on the same device when both are known."""
    my_agent, my_device = caller
    return agent == my_agent and (not my_device or not device or device == my_device)


@dataclass(slots=True)
class Gap:
    """Events dropped for a slow client: the seq it last got before them, and how many there were."""

    resume_from: int
    dropped: int = 0

    def frame(self) -> bytes:
        data = json.dumps({"resume_from": self.resume_from, "dropped": self.dropped})
        return f"event: {GAP_EVENT}\ndata: {data}\n\n".encode()


def event_frame(entry: LogEntry) -> bytes:
    """One log entry as an SSE event: its seq as the id, its name as the event, its body (no vectors) as data."""
    body = {key: value for key, value in entry.body.items() if key not in INTERNAL_FIELDS}
    body["seq"] = entry.seq
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))  # one line: JSON escapes newlines
    return f"id: {entry.seq}\nevent: {entry.event}\ndata: {data}\n\n".encode()


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event as a client reads it."""

    event: str
    data: str
    id: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


class EventParser:
    """Reads an event stream back into events, for clients (tests, the benchmark): feed it the bytes as they come.

    Follows the SSE parsing rules for what the gateway writes; comment lines (heartbeats) are counted, not returned.
    """

    def __init__(self) -> None:
        self._pending = b""
        self._fields: dict[str, list[str]] = {}
        self.comments = 0

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        events = []
        for raw in lines:
            line = raw.decode().removesuffix("\r")
            if not line:
                if self._fields:
                    events.append(self._dispatch())
            elif line.startswith(":"):
                self.comments += 1
            else:
                name, _, value = line.partition(":")
                self._fields.setdefault(name, []).append(value.removeprefix(" "))
        return events

    def _dispatch(self) -> ServerSentEvent:
        fields, self._fields = self._fields, {}
        ids = fields.get("id")
        return ServerSentEvent(
            event=fields.get("event", ["message"])[-1],
            data="\n".join(fields.get("data", [])),
            id=ids[-1] if ids else None,
        )


class ClientQueue:
    """The frames waiting for one client, at most ``capacity``.

    put() never waits, so the log consumer never waits for a client: when the queue is full the oldest frame is
    dropped, and the client gets a gap frame (where to resume from) in front of its next frame.
    """

    def __init__(self, capacity: int, cursor: int) -> None:
        self._frames: deque[tuple[int, bytes]] = deque()
        self.capacity = capacity
        self._cursor = cursor  # the seq of the last frame handed out (or the one before the first to come)
        self._gap: Gap | None = None
        self._changed = asyncio.Event()  # a frame was put, or the queue ended
        self._taken = asyncio.Event()  # a frame was handed out, or the queue ended
        self._ended = False
        self.newest = cursor  # the seq of the newest frame put
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def ended(self) -> bool:
        return self._ended

    def put(self, seq: int, frame: bytes) -> None:
        if len(self._frames) >= self.capacity:
            self._frames.popleft()
            # Frames go out oldest first, so the dropped ones always follow the last one handed out.
            if self._gap is None:
                self._gap = Gap(self._cursor)
            self._gap.dropped += 1
            self.dropped += 1
            metrics.SSE_DROPPED.inc()
        self._frames.append((seq, frame))
        self.newest = seq
        self._changed.set()

    def end(self) -> None:
        """Ends the stream: next() answers None from now on (the client resumes with Last-Event-ID)."""
        self._ended = True
        self._changed.set()
        self._taken.set()

    async def room(self) -> None:
        """Returns once a put() would not drop a frame (or the queue has ended): a reader that can wait, waits here."""
        while len(self._frames) >= self.capacity and not self._ended:
            self._taken.clear()
            await self._taken.wait()

    async def next(self, heartbeat: float) -> bytes | None:
        """What to send next: a frame (after a gap frame if frames were dropped), HEARTBEAT when nothing came
        for ``heartbeat`` seconds, or None once the queue has ended."""
        if not self._frames and not self._ended:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(heartbeat):
                    await self._changed.wait()
        if self._ended:
            return None
        if not self._frames:
            return HEARTBEAT
        self._cursor, frame = self._frames.popleft()
        self._taken.set()
        gap, self._gap = self._gap, None
        return frame if gap is None else gap.frame() + frame


@dataclass(frozen=True, slots=True)
class StreamStats:
    queued: int  # frames waiting for the client (at most ENGRAM_SSE_QUEUE_EVENTS)
    dropped: int  # frames dropped because the client read too slowly, since the stream opened
    newest: int  # the seq of the newest frame queued


class EventStream:
    """One client: its filter, its queue, and what fills the queue from the log.

    Missed events (a resume from Last-Event-ID) are read from the log at the client's pace, one by one while the
    queue has room, so a long replay holds no more than the queue; then a log subscription delivers the live
    events, and a client too slow for them loses the oldest (put() never waits).
    """

    def __init__(self, event_log: Log, namespace: str, wanted: EventFilter, queue: ClientQueue, heartbeat: float):
        self.wanted = wanted
        self.queue = queue
        self._log = event_log
        self._subjects = subject(namespace, ">")
        self._prefix = subject(namespace, "")
        self._heartbeat = heartbeat
        self._subscription: Subscription | None = None
        self._replay: asyncio.Task[None] | None = None

    async def follow(self, start: int) -> None:
        """Delivers the namespace's entries from ``start`` on as they are appended."""
        self._subscription = await self._log.follow(start, self.on_entry, subjects=self._subjects)

    def replay(self, after: int) -> None:
        """Sends the entries after ``after`` first, then follows the log (in the background)."""
        self._replay = asyncio.create_task(self._catch_up(after), name="sse-replay")

    async def _catch_up(self, after: int) -> None:
        seq = after
        try:
            # Close enough to the end, the live subscription delivers the rest (at most a queue) at once.
            while not self.queue.ended and (last := await self._log.last_seq()) - seq > self.queue.capacity:
                while seq < last and not self.queue.ended:
                    await self.queue.room()
                    seq += 1
                    entry = await self._log.read(seq)
                    if entry is not None and entry.subject.startswith(self._prefix):
                        await self.on_entry(entry)
            if not self.queue.ended:
                await self.follow(seq + 1)
        except Exception:  # the top of this task: the client reconnects with its Last-Event-ID
            log.warning("a replay of the log for an event stream failed; the stream ends", exc_info=True)
            self.queue.end()

    async def on_entry(self, entry: LogEntry) -> None:
        """The log consumer's handler: filters and enqueues, never waits for the client."""
        if self.wanted.matches(entry.event, entry.body):
            self.queue.put(entry.seq, event_frame(entry))
            # The consumer hands over a burst without yielding; yielding here lets the writer send each frame at
            # once, so a client that keeps up never loses events to a burst longer than its queue.
            await asyncio.sleep(0)

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self.queue.next(self._heartbeat)) is not None:
            yield chunk

    async def close(self) -> None:
        self.queue.end()
        if self._replay is not None:
            self._replay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._replay
        if self._subscription is not None:
            with contextlib.suppress(Exception):  # the log's connection may already be gone
                await self._subscription.unsubscribe()
            self._subscription = None


class EventStreams:
    """The open streams of one gateway, each following the log from its own cursor.

    stop() ends them all: the HTTP server waits for every open response before it stops. A reconnection of the
    log ends them too (a restarted NATS server has forgotten their consumers); clients resume with Last-Event-ID.
    """

    def __init__(self, event_log: Log | None, settings: Settings) -> None:
        self._log = event_log
        self._capacity = settings.sse_queue_events
        self._heartbeat = settings.sse_heartbeat_seconds
        self._open: set[EventStream] = set()
        self._stopped = False
        if event_log is not None:
            event_log.on_reconnect(self._end_all)
        metrics.watch(self)

    def __len__(self) -> int:
        return len(self._open)

    def sample(self) -> Mapping[str, float]:
        """The streams' gauges (engram.process.metrics), read by the scrape thread: a copy of the set, then lengths."""
        depths = [len(stream.queue) for stream in list(self._open)]
        return {
            metrics.SSE_CLIENTS: len(depths),
            metrics.SSE_QUEUED_EVENTS: sum(depths),
            metrics.SSE_QUEUE_DEPTH_MAX: max(depths, default=0),
        }

    def stats(self) -> list[StreamStats]:
        """What each open stream holds (for tests and diagnostics)."""
        return [StreamStats(len(s.queue), s.queue.dropped, s.queue.newest) for s in self._open]

    async def open(self, namespace: str, wanted: EventFilter, after: int | None) -> EventStream:
        """A stream of the namespace's events after seq ``after`` (replayed from the log), or after the newest."""
        if self._log is None:
            raise Unavailable(NO_LOG, retry_after=60.0)
        if self._stopped:
            raise Unavailable(STOPPING)
        if not self._log.connected:
            raise Unavailable(LOG_DOWN)
        last = await self._log.last_seq()
        if after is not None and after > last:
            raise InvalidArgument(
                "Last-Event-ID",
                f"{after} is beyond the end of the log ({last}): it comes from another node or an older log. "
                "Reconnect without it.",
            )
        queue = ClientQueue(self._capacity, last if after is None else after)
        stream = EventStream(self._log, namespace, wanted, queue, self._heartbeat)
        if after is None:
            await stream.follow(last + 1)  # subscribed before the answer: nothing appended after it is missed
        else:
            stream.replay(after)
        self._open.add(stream)
        return stream

    async def release(self, stream: EventStream) -> None:
        """Unsubscribes a stream whose response has ended, however it ended."""
        self._open.discard(stream)
        await stream.close()

    def stop(self) -> None:
        """Ends every open stream and refuses new ones."""
        self._stopped = True
        self._end_streams()
        metrics.unwatch(self)

    async def _end_all(self) -> None:
        self._end_streams()

    def _end_streams(self) -> None:
        for stream in self._open:
            stream.queue.end()
