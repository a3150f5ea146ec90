"""The log adapter on NATS JetStream: one stream whose subjects are the public event subjects."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import api
from nats.js.client import JetStreamContext

from engram.config import DEFAULT_STREAM
from engram.errors import DiskFull, Unavailable
from engram.log import SUBJECT_PREFIX, Appended, LogEntry, LogState, NoState, Overtaken, Stale, Subscription, subject
from engram.log.scrubbing import scrubbed_body
from engram.log.workqueue import NatsWorkQueue

log = logging.getLogger(__name__)

DEFAULT_PUBLISH_TIMEOUT = 5.0
DEFAULT_PUBLISH_ATTEMPTS = 2
MAX_CONFLICTS = 1000
DEFAULT_DUPLICATE_WINDOW = 120.0
READ_CONSUMER_IDLE_SECONDS = 30.0  # a page reader's consumer left behind (a dropped connection) is removed then
READ_FETCH_SECONDS = 5.0
READ_ONE_BY_ONE = 4  # a conditional append reads up to this many entries one by one, more in pages
DEFAULT_RECONNECT_WAIT = 0.5
# A follower's consumer lives on one server of a NATS cluster; when that server dies while the client stays connected
# to another, two missed heartbeats make the client create it again where it left off (nats-py's default, 5 s,
# stalled every indexer and event stream on it for 10 s when a stream leader was killed).
FOLLOW_HEARTBEAT_SECONDS = 1.0
FOLLOW_RETRY_FIRST_SECONDS = 0.2  # a follow resumed after a reconnection retries this soon, doubling up to the max
FOLLOW_RETRY_MAX_SECONDS = 3.0
_WRONG_LAST_SEQUENCE = 10071
_INSUFFICIENT_RESOURCES = 10047
_STREAM_NAME_IN_USE = 10058
_DUPLICATE_IN_PROCESS = 10158  # JSStreamDuplicateMessageConflict
INTERRUPTED_WAIT = 3.0  # how long an append whose connection dropped waits for the reconnection
LOG_DOWN = "The log (NATS) is unreachable right now; nothing was saved. Retry in a few seconds."


@dataclass(slots=True)
class _Attempts:
    """Where one append stands: the log entry its check reached, and the attempts that failed or lost a race."""

    based_on: int
    failures: int = 0
    conflicts: int = 0
    interrupted: bool = False


class _Interrupted(Exception):
    """The connection dropped while an append waited for its acknowledgement."""


_CONNECTION_ERRORS = (
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
)


@dataclass(frozen=True, slots=True)
class NatsCredentials:
    """How Engram authenticates to a NATS server that requires it: a user and password, or a .creds file."""

    user: str | None = None
    password: str | None = None
    creds_file: str | None = None

    def options(self) -> dict[str, Any]:
        if self.creds_file:
            return {"user_credentials": self.creds_file}
        if self.user:
            return {"user": self.user, "password": self.password or ""}
        return {}


def _duplicate_in_process(e: nats.js.errors.APIError) -> bool:
    """A clustered stream still proposing an earlier attempt with the same message id (which it may yet refuse)."""
    return e.err_code == _DUPLICATE_IN_PROCESS or "duplicate message id is in process" in (e.description or "")


def _redact(url: str) -> str:
    """A NATS URL without its credentials, for messages."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


class NatsLog:
    """Appends mutations and reads them back in order. Sequence numbers are the cursor everywhere.

    Every body carries its own sequence (so plain NATS subscribers see it): appends are made with
    `Nats-Expected-Last-Sequence`, which also makes concurrent writers from several ingest replicas safe.
    """

    def __init__(self, *, stream: str = DEFAULT_STREAM, state: LogState | None = None, replicas: int = 1) -> None:
        self._nc = NatsClient()
        self._js = self._nc.jetstream()
        self._stream = stream
        self.replicas = replicas  # copies a NATS cluster keeps of the stream and of the KV buckets beside it
        self._lock = asyncio.Lock()
        self._last: int | None = None
        self._state: LogState = state or NoState()
        self._stalled = False
        self._closing = False
        self._up = asyncio.Event()  # set while connected: an interrupted append waits on it briefly
        self._down = asyncio.Event()  # set while disconnected: an append in flight gives up its answer
        self._reconnect_listeners: list[Callable[[], Awaitable[None]]] = []
        self._followers: set[_Follower] = set()
        self._url = ""

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        stream: str = DEFAULT_STREAM,
        name: str = "engram",
        state: LogState | None = None,
        reconnect_wait: float = DEFAULT_RECONNECT_WAIT,
        replicas: int = 1,
        credentials: NatsCredentials | None = None,
    ) -> NatsLog:
        """Connects to NATS (reconnecting forever when the connection drops) and makes sure the stream exists.

        ``url`` may list several servers of a cluster, comma separated; the client fails over between them.
        """
        event_log = cls(stream=stream, state=state, replicas=replicas)
        event_log._url = ",".join(_redact(part) for part in url.split(","))
        auth = credentials.options() if credentials is not None else {}
        try:
            await event_log._nc.connect(
                [part.strip() for part in url.split(",") if part.strip()],
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=reconnect_wait,  # type: ignore[arg-type]  # typed int, used as a float
                connect_timeout=5,
                disconnected_cb=event_log._on_disconnected,
                reconnected_cb=event_log._on_reconnected,
                error_cb=event_log._on_error,
                **auth,
            )
        except (OSError, nats.errors.Error) as e:
            if "authorization" in str(e).lower():
                raise Unavailable(
                    f"NATS at {event_log._url} refused Engram's credentials ({e}); check ENGRAM_NATS_USER and "
                    "ENGRAM_NATS_PASSWORD (or ENGRAM_NATS_CREDS)."
                ) from e
            raise Unavailable(f"Cannot reach NATS at {event_log._url}: {e}. Is nats-server running?") from e
        event_log._up.set()
        await event_log.ensure_stream()
        return event_log

    async def _on_disconnected(self) -> None:
        self._up.clear()
        self._down.set()
        if not self._closing:  # a disconnection while closing is the plan, not a problem
            self._state.log_unreachable(
                f"NATS at {self._url} is unreachable; reconnecting. Writes are refused meanwhile."
            )

    async def _on_reconnected(self) -> None:
        self._down.clear()
        self._up.set()
        self._state.log_reachable()
        for follower in list(self._followers):
            follower.resume()
        for listener in list(self._reconnect_listeners):
            try:
                await listener()
            except Exception:
                log.exception("a reconnect listener failed")

    async def _on_error(self, e: Exception) -> None:
        log.debug("NATS connection error: %r", e)

    def on_reconnect(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Calls ``listener`` after every reconnection (consumers of a restarted server must be set up again)."""
        self._reconnect_listeners.append(listener)

    @property
    def connected(self) -> bool:
        return bool(self._nc.is_connected)

    @property
    def jetstream(self) -> JetStreamContext:
        """The connection's JetStream context, for what lives next to the log (leases in NATS KV)."""
        return self._js

    async def work_queue(
        self, durable: str, subjects: str | Sequence[str], *, ack_wait: float, deliver_all: bool = True
    ) -> NatsWorkQueue:
        policy = api.DeliverPolicy.ALL if deliver_all else api.DeliverPolicy.NEW
        return await NatsWorkQueue.open(
            self._nc, durable=durable, subjects=subjects, stream=self._stream, ack_wait=ack_wait, deliver_policy=policy
        )

    async def ensure_stream(self) -> None:
        """Creates the stream on first use (file storage, dedup window for Nats-Msg-Id, ``replicas`` copies), and
        brings an existing stream to ``replicas`` copies (a cluster that grew, or an operator's new setting)."""
        try:
            try:
                info = await self._js.stream_info(self._stream)
            except nats.js.errors.NotFoundError:
                await self._add_stream()
                return
            if (info.config.num_replicas or 1) != self.replicas:
                log.info("the log's stream %s goes from %s to %d replicas", self._stream, info.config.num_replicas,
                         self.replicas)  # fmt: skip
                await self._js.update_stream(dataclasses.replace(info.config, num_replicas=self.replicas))
        except nats.js.errors.APIError as e:
            if self.replicas > 1 and "replicas" in (e.description or "").lower():
                raise Unavailable(
                    f"The log's stream cannot keep {self.replicas} replicas here ({e.description}): "
                    "ENGRAM_STREAM_REPLICAS > 1 needs a NATS cluster with at least that many JetStream servers."
                ) from e
            raise Unavailable(f"The log's stream {self._stream} cannot be set up: {e.description}") from e

    async def _add_stream(self) -> None:
        config = api.StreamConfig(
            name=self._stream,
            subjects=[f"{SUBJECT_PREFIX}.>"],
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            duplicate_window=DEFAULT_DUPLICATE_WINDOW,
            max_msg_size=4 * 1024 * 1024,
            num_replicas=self.replicas,
        )
        try:
            await self._js.add_stream(config)
        except nats.js.errors.APIError as e:
            if e.err_code != _STREAM_NAME_IN_USE:
                raise
            # Another replica starting at the same time created it first; make it ours as below.
            info = await self._js.stream_info(self._stream)
            if (info.config.num_replicas or 1) != self.replicas:
                await self._js.update_stream(dataclasses.replace(info.config, num_replicas=self.replicas))

    async def last_seq(self) -> int:
        """The sequence of the newest entry (0 for an empty log)."""
        info = await self._js.stream_info(self._stream)
        return int(info.state.last_seq)

    def seen_seq(self) -> int | None:
        return self._last

    async def count_events(self, event: str) -> int:
        """How many entries of one event kind the log holds, over every namespace (from JetStream's counts)."""
        info = await self._js.stream_info(self._stream, subjects_filter=subject("*", event))
        return sum(int(n) for n in (info.state.subjects or {}).values())

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
        """Appends one mutation and returns its sequence once JetStream has stored it.

        `msg_id` makes retries idempotent: JetStream drops a second copy within the duplicate window. Fails
        fast with Unavailable while NATS is unreachable (nothing is buffered for later), and with DiskFull when
        the log's store is out of space. An append whose connection drops mid-way waits briefly for the
        reconnection and publishes again under the same `msg_id`, so it is stored exactly once either way.

        A conditional append (``stale``) reads the entries between ``based_on`` and the end of the log it
        expects, and publishes with that end as the expected last sequence: if another writer (another
        replica) appends meanwhile, JetStream refuses, the new entries are read too, and so on. So no entry
        can slip in unseen between the check and the append.
        """
        if not self._nc.is_connected or self._state.log_down():
            # Refused before waiting for the lock, which an append interrupted by the outage may hold for a while.
            raise Unavailable(LOG_DOWN, retry_after=2.0)
        body = scrubbed_body(event, body)  # the one step every write passes: no secret reaches the log
        async with self._lock:
            tries = _Attempts(based_on)
            while tries.failures < DEFAULT_PUBLISH_ATTEMPTS and tries.conflicts < MAX_CONFLICTS:
                if not await self._connected_for(tries):
                    break
                try:
                    ack = await self._publish_next(namespace, event, body, msg_id, stale, tries)
                except nats.js.errors.APIError as e:
                    await self._after_refusal(e, tries)
                except _Interrupted:
                    self._after_failure(tries, interrupted=True)
                    log.warning("the log connection dropped during an append; retrying once it is back")
                except nats.errors.TimeoutError as e:
                    self._after_timeout(e, tries)
                except _CONNECTION_ERRORS as e:
                    self._after_failure(tries, interrupted=True)
                    log.warning("append attempt %d failed: %r", tries.failures, e)
                    await asyncio.sleep(min(0.05 * 2**tries.failures, 0.5))
                else:
                    return self._stored(ack)
        raise Unavailable(
            "The log did not confirm the write in time; it may or may not be stored. Check with search or "
            "list_memories before saving it again.",
            retry_after=5.0,
        )

    async def _connected_for(self, tries: _Attempts) -> bool:
        """Whether to attempt now: refuses a first attempt while the log is down, and lets an interrupted one wait
        briefly for the reconnection (False when it did not come back)."""
        if self._nc.is_connected and (tries.interrupted or not self._state.log_down()):
            return True
        if not tries.interrupted:
            # Publishing now would queue the message in the client until it reconnects, after the caller was
            # told it failed; refuse instead, so a refused write is really not stored.
            raise Unavailable(LOG_DOWN, retry_after=2.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._up.wait(), INTERRUPTED_WAIT)
        return self._nc.is_connected

    async def _publish_next(
        self, namespace: str, event: str, body: dict[str, Any], msg_id: str, stale: Stale | None, tries: _Attempts
    ) -> Any:
        """Publishes the entry as the next of the log, after checking what was appended since it was based on."""
        if self._last is None:
            self._last = await self.last_seq()
        expected = self._last
        if stale is not None and expected > tries.based_on:
            await self._check_since(tries.based_on, expected, stale)
            tries.based_on = expected
        payload = json.dumps({**body, "seq": expected + 1}, ensure_ascii=False).encode()
        return await self._publish(
            subject(namespace, event),
            payload,
            # JetStream's duplicate window spans the stream: a message id is kept per namespace, so no write in
            # one namespace is ever dropped as a duplicate of another namespace's.
            {"Nats-Msg-Id": f"{namespace}/{msg_id}", "Nats-Expected-Last-Sequence": str(expected)},
        )

    async def _after_refusal(self, e: nats.js.errors.APIError, tries: _Attempts) -> None:
        """A refusal by JetStream: out of space and other errors end the append; a lost race is retried."""
        if e.err_code == _INSUFFICIENT_RESOURCES:
            raise DiskFull(f"the log's store refused the write ({e.description}).") from e
        if e.err_code != _WRONG_LAST_SEQUENCE and not _duplicate_in_process(e):
            raise Unavailable(f"The log refused the write: {e.description}") from e
        # Another writer appended first: read the new end and retry, with jitter to break lockstep. (In a clustered
        # stream the attempt it refused may still hold its message id for a moment: JetStream answers "duplicate
        # message id is in process", and the same retry applies.)
        tries.conflicts += 1
        self._last = None
        # An attempt still in process may yet be stored: the retry (same message id) is then answered as its
        # duplicate, with its sequence. Its proposal takes a replication round trip, so wait longer.
        pause = 0.02 if _duplicate_in_process(e) else 0.002 * min(tries.conflicts, 10)
        await asyncio.sleep(random.uniform(0, pause))

    def _after_failure(self, tries: _Attempts, *, interrupted: bool) -> None:
        tries.failures += 1
        tries.interrupted = tries.interrupted or interrupted
        self._last = None

    def _after_timeout(self, e: nats.errors.TimeoutError, tries: _Attempts) -> None:
        self._after_failure(tries, interrupted=False)
        if self._nc.is_connected:
            # Connected but no acknowledgement: the server cannot store (e.g. its disk filled up).
            self._stalled = True
            self._state.log_stalled("the log is connected but does not acknowledge writes")
        log.warning("append attempt %d timed out: %r", tries.failures, e)

    def _stored(self, ack: Any) -> Appended:
        if self._stalled:
            self._stalled = False
            self._state.log_acknowledging()
        self._last = None if ack.duplicate else int(ack.seq)
        return Appended(int(ack.seq), bool(ack.duplicate))

    async def _check_since(self, after: int, until: int, stale: Stale) -> None:
        """Raises Overtaken with the first entry in (after, until] that ``stale`` flags. A few entries are read one
        by one; more in pages (one consumer per page instead of a round trip per entry: a save during an import
        reads the tens of entries the import appended meanwhile)."""
        if until - after <= READ_ONE_BY_ONE:
            entries = [entry for seq in range(after + 1, until + 1) if (entry := await self.read(seq)) is not None]
        else:
            entries = []
            while after < until:
                page, more = await self.read_after(after, subjects=f"{SUBJECT_PREFIX}.>", limit=until - after)
                entries += [entry for entry in page if entry.seq <= until]
                if not page or not more:
                    break
                after = page[-1].seq
        for entry in entries:
            if stale(entry):
                raise Overtaken(entry)

    async def erase(self, seqs: Sequence[int]) -> int:
        """Deletes entries from the stream; JetStream overwrites their data (not just marks them deleted)."""
        erased = 0
        for seq in sorted(set(seqs)):
            try:
                if await self._js.delete_msg(self._stream, seq):
                    erased += 1
            except nats.js.errors.NotFoundError:
                continue  # already gone (an earlier purge, or never there)
            except nats.js.errors.APIError as e:
                if e.err_code == 10057:  # "no message found"
                    continue
                raise Unavailable(f"The log refused to erase entry {seq}: {e.description}") from e
        return erased

    async def _publish(self, subject_: str, payload: bytes, headers: dict[str, str]) -> Any:
        """js.publish, abandoned as soon as the connection drops (its answer could not arrive anyway)."""
        publish = asyncio.ensure_future(
            self._js.publish(subject_, payload, timeout=DEFAULT_PUBLISH_TIMEOUT, stream=self._stream, headers=headers)
        )
        dropped = asyncio.ensure_future(self._down.wait())
        try:
            await asyncio.wait({publish, dropped}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the append was cancelled (e.g. a job stopped): its publish must not live on alone
            publish.cancel()
            publish.add_done_callback(_retrieved)  # its outcome is nobody's now; never "exception never retrieved"
            raise
        finally:
            dropped.cancel()
        if publish.done():
            return publish.result()
        publish.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await publish
        raise _Interrupted

    async def read(self, seq: int) -> LogEntry | None:
        """The entry at one sequence, or None when it does not exist."""
        try:
            msg = await self._js.get_msg(self._stream, seq)
        except nats.js.errors.NotFoundError:
            return None
        return LogEntry(seq=seq, subject=msg.subject or "", body=json.loads(msg.data or b"{}"))

    async def read_after(self, seq: int, *, subjects: str, limit: int) -> tuple[list[LogEntry], bool]:
        """Up to ``limit`` entries after ``seq`` on ``subjects``, oldest first, and whether more follow them.

        One short-lived pull consumer per page (no acknowledgements; the server removes it when idle): a page
        costs one round trip however sparse the subjects are in the stream.
        """
        try:
            sub = await self._js.pull_subscribe(
                subjects,
                stream=self._stream,
                config=api.ConsumerConfig(
                    deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                    opt_start_seq=seq + 1,
                    ack_policy=api.AckPolicy.NONE,
                    inactive_threshold=READ_CONSUMER_IDLE_SECONDS,
                    mem_storage=True,
                    num_replicas=1,
                ),
            )
        except (nats.errors.Error, TimeoutError) as e:
            raise Unavailable(f"The log cannot be read ({e!r}).") from e
        entries: list[LogEntry] = []
        more = False
        try:
            pending = (await sub.consumer_info()).num_pending or 0
            while pending and len(entries) < limit:
                try:
                    msgs = await sub.fetch(min(limit - len(entries), pending), timeout=READ_FETCH_SECONDS)
                except TimeoutError:
                    break
                for msg in msgs:
                    with contextlib.suppress(json.JSONDecodeError):  # not JSON: nothing a reader can use
                        entries.append(LogEntry(msg.metadata.sequence.stream, msg.subject, json.loads(msg.data)))
                    pending = msg.metadata.num_pending
            more = pending > 0
        except (nats.errors.Error, TimeoutError) as e:
            raise Unavailable(f"The log cannot be read ({e!r}).") from e
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        return entries, more

    async def follow(
        self,
        start_seq: int,
        handler: Callable[[LogEntry], Awaitable[None]],
        *,
        subjects: str | None = None,
        headers_only: bool = False,
    ) -> Subscription:
        """Delivers every entry from start_seq on, in order and once each, to handler (an ordered push consumer).

        After a reconnection the follow resumes by itself after the last entry delivered, retrying until the
        cluster can create its consumer again (a stream leader may still be being elected); raises Unavailable
        only when the first subscription fails.
        """
        follower = _Follower(self._js, self._stream, start_seq, handler, subjects=subjects, headers_only=headers_only)
        await follower.start()
        self._followers.add(follower)
        follower.on_stop(lambda: self._followers.discard(follower))
        return follower

    async def close(self) -> None:
        self._closing = True
        if not self._nc.is_closed:
            await self._nc.drain()


class _Follower:
    """One follow of the log: an ordered push consumer that resumes after the last entry it delivered when the
    connection comes back, retrying until the cluster creates the consumer again. Never delivers an entry twice
    or out of order (a resumed consumer may replay what an abandoned one already sent)."""

    def __init__(
        self,
        js: JetStreamContext,
        stream: str,
        start_seq: int,
        handler: Callable[[LogEntry], Awaitable[None]],
        *,
        subjects: str | None,
        headers_only: bool,
    ) -> None:
        self._js = js
        self._stream = stream
        self._next = max(start_seq, 1)
        self._handler = handler
        self._subjects = subjects or f"{SUBJECT_PREFIX}.>"
        self._headers_only = headers_only
        self._sub: Any = None  # nats-py's subscription of the consumer now followed
        self._resuming: asyncio.Task[None] | None = None
        self._stopped = False
        self._stop_listeners: list[Callable[[], None]] = []

    def on_stop(self, listener: Callable[[], None]) -> None:
        self._stop_listeners.append(listener)

    async def start(self) -> None:
        try:
            self._sub = await self._subscribe()
        except (nats.errors.Error, TimeoutError) as e:
            raise Unavailable(f"The log cannot be followed ({e!r}).") from e

    def resume(self) -> None:
        """Follows again from the next entry, in the background (a reconnection must not wait for it)."""
        if self._stopped:
            return
        if self._resuming is not None:
            self._resuming.cancel()
        self._resuming = asyncio.create_task(self._resume(), name="log-follow-resume")

    async def _resume(self) -> None:
        old, self._sub = self._sub, None
        if old is not None:
            with contextlib.suppress(Exception):  # the server that held it may be gone
                await old.unsubscribe()
        delay = FOLLOW_RETRY_FIRST_SECONDS
        while not self._stopped:
            try:
                self._sub = await self._subscribe()
            except (nats.errors.Error, TimeoutError) as e:
                log.warning("following the log again from seq %d failed (%r); retrying in %.1f s", self._next, e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, FOLLOW_RETRY_MAX_SECONDS)
                continue
            log.info("log reconnected: following it again from seq %d", self._next)
            return

    async def _subscribe(self) -> Any:
        return await self._js.subscribe(
            self._subjects,
            cb=self._on_message,
            stream=self._stream,
            ordered_consumer=True,
            idle_heartbeat=FOLLOW_HEARTBEAT_SECONDS,
            config=api.ConsumerConfig(
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self._next,
                headers_only=self._headers_only or None,
            ),
        )

    async def _on_message(self, msg: Msg) -> None:
        seq = msg.metadata.sequence.stream
        if seq < self._next or self._stopped:
            return  # delivered already, by a consumer this follow abandoned
        self._next = seq + 1
        if self._headers_only:
            await self._handler(LogEntry(seq=seq, subject=msg.subject, body={}))
            return
        try:
            body = json.loads(msg.data)
        except json.JSONDecodeError:
            log.error("log entry %d is not JSON; skipped", seq)
            return
        await self._handler(LogEntry(seq=seq, subject=msg.subject, body=body))

    async def unsubscribe(self) -> None:
        self._stopped = True
        for listener in self._stop_listeners:
            listener()
        if self._resuming is not None:
            self._resuming.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._resuming
        sub, self._sub = self._sub, None
        if sub is not None:
            await sub.unsubscribe()


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Marks an abandoned future's exception as seen (asyncio would log it, and test runners fail on it)."""
    if not future.cancelled():
        future.exception()
