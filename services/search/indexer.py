"""Applies the log to the index in order, in batches and idempotently, and lets reads wait for a sequence.

The index is derived data. On start it is checked (it loads, its payload indexes exist, it was built by this
layout of the indexer, it holds as many memories as its bookkeeping says); after catching up it is checked
against the log (as many memories as the log has created). A damaged or outdated index is moved aside and
rebuilt from the log, and readiness says so meanwhile.

Besides the memories the indexer derives the agent registry (agents.py). It is stored in the index's
bookkeeping every few seconds (and when idle, and at stop), not with every batch: it grows with the agents of
every namespace. Stored with the sequence it is as of, it is brought up to the applied sequence on start by
reading the entries in between from the log again, so a restart resumes it exactly.

No entry of the log stops the index (DESIGN.md principle 6). When a batch fails, its entries are applied one at a
time: one that keeps failing on its own while the index's storage accepts writes is set aside in the quarantine
(quarantine.py) with its error, and the index moves on; readiness reports it (degraded, still serving) until an
admin retries or drops it. A storage that refuses writes (full disk, server down) is waited out, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from engram import plural
from engram.errors import DiskFull, InvalidArgument, Unavailable
from engram.index import (
    CONTENT_KEY,
    CREATED_TS,
    EXPIRES_TS,
    FAR,
    HANDOFF_STATUS,
    HANDOFF_TO,
    VALID_FROM,
    VALID_TO,
    WORLD_FROM,
    WORLD_TO,
    IndexDamaged,
    IndexPoint,
    MemoryIndex,
    version_point_id,
)
from engram.log import Log, LogEntry
from engram.log.events import (
    MEMORY_ACCESSED,
    MEMORY_CREATED_EVENTS,
    MEMORY_ENRICHED,
    MEMORY_PURGED,
    MEMORY_STATE_EVENTS,
    decode_dense,
    decode_questions,
    decode_sparse,
)
from engram.model import parse_time, servable_problem
from engram.process import metrics
from engram.process.health import INDEX, QUARANTINE, Health
from engram.results import Quarantined
from engram.sameness import content_key
from engram.services.search.agents import AgentRegistry
from engram.services.search.quarantine import Quarantine, set_aside

log = logging.getLogger(__name__)

SEARCH_SERVICE = "engram.v1.Search"
MAX_BATCH = 256  # entries applied per index call; bounds how long one apply holds the index
# No new entries for this long: a good moment for index maintenance. Short, so that after a bulk import the
# vector index is rebuilt before searches pile up on brute force; maintenance never delays acknowledgements.
IDLE_SECONDS = 1.0
# Entries applied without an idle second in between after which maintenance runs anyway: a device backfilling
# from its cluster never idles, and the index's unindexed segments (and the memory they hold) would grow with all
# of it until the end (a 50k backfill: 288 MiB of malloc arenas and a 1.6 GiB peak in its one late optimize).
BUSY_MAINTAIN_ENTRIES = 10_000
SLOW_SECONDS = 0.25  # an apply or a maintenance this long is logged (INFO): reads waiting for the log wait for it
PROGRESS_SECONDS = 1.0  # how often catch-up progress is reported
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 10.0
VERIFY_ATTEMPTS = 3  # writes arriving while the counts are compared make a mismatch worth a second look
# What the indexer derives from an entry (payload fields, the agent registry). An index built by another layout
# is rebuilt from the log. 2: handoff fields and expiry, the agent registry (issue 8). 3: point ids from
# (namespace, id) (engram.index.point_id): a memory's identity is (namespace, id), in the index as everywhere.
# 4: every current version's content key (engram.sameness), which a save that repeats a memory finds it by.
LAYOUT = 4
REGISTRY_SAVE_SECONDS = 2.0  # how often the agent registry is stored while entries keep coming
# An entry that fails on its own is tried this many times (ENTRY_RETRY_SECONDS apart, and once more after the
# storage took a write) before it is set aside: a passing hiccup of the storage does not quarantine it.
ENTRY_ATTEMPTS = 3
ENTRY_RETRY_SECONDS = 0.2
# Failures of the index's storage, never of an entry: waited out and retried, never quarantined.
STORAGE_FAULTS: tuple[type[BaseException], ...] = (DiskFull, Unavailable, IndexDamaged, OSError)


class IndexPanic(RuntimeError):
    """The index's native code panicked on an entry (pyo3's PanicException, which is no Exception)."""


def _panicked(error: BaseException) -> bool:
    """Is this a panic of the index's Rust code (pyo3_runtime.PanicException, not importable by name)?"""
    return type(error).__name__ == "PanicException"


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying entries changed besides the index: skipped count, agent registry, quarantine."""

    skipped: int
    registry: AgentRegistry
    quarantine: Quarantine


class SpaceCheck(Protocol):
    def index_space_problem(self) -> str | None:
        """Why the index must not grow now (its disk is nearly full), or None."""
        ...


class Indexer:
    """Follows the log from the index's last applied sequence; reads are served once it has caught up."""

    def __init__(
        self,
        event_log: Log,
        index: MemoryIndex,
        *,
        versions: MemoryIndex | None = None,
        health: Health | None = None,
        disk: SpaceCheck | None = None,
        verify: bool = True,
    ) -> None:
        self._log = event_log
        self._index = index
        # Earlier versions of every memory (history, point-in-time reads); derived from the log like the index.
        self._versions = versions
        self._health = health or Health()
        self._disk = disk
        self._verify = verify  # only for an index this process owns (not a Qdrant server shared by replicas)
        self._applied = 0
        # memory-creating entries with no point of their own (unservable ones, replays), so the counts add up
        self._skipped = 0
        self._registry = AgentRegistry()
        self._registry_seq = 0  # the applied sequence the stored registry is as of
        self._registry_saved = -math.inf  # when it was stored (monotonic); -inf: with the next batch
        self._quarantine = Quarantine()  # entries set aside, stored with the registry
        # Held while entries are applied, so that a retry or a drop of quarantined entries (admin) comes between.
        self._applying = asyncio.Lock()
        self._caught_up = asyncio.Event()
        self._target = 0
        self._seen = 0  # the newest sequence the log has delivered: where the log ends, as far as the index knows
        self._changed = asyncio.Condition()
        self._queue: asyncio.Queue[LogEntry] = asyncio.Queue()
        self._subscription: Any = None
        self._worker: asyncio.Task[None] | None = None
        self._catch_up: asyncio.Task[None] | None = None

    @property
    def applied_seq(self) -> int:
        return self._applied

    @property
    def caught_up(self) -> bool:
        return self._caught_up.is_set()

    @property
    def quarantine(self) -> Quarantine:
        """The log entries set aside because they could not be applied (a snapshot)."""
        return self._quarantine

    @property
    def registry(self) -> AgentRegistry:
        """The agent registry as of applied_seq (a snapshot: the indexer replaces it, never changes it)."""
        return self._registry

    async def start(self) -> None:
        """Checks the index, starts following the log, and catches up in the background."""
        last = await self._log.last_seq()
        problem = await asyncio.to_thread(self._structural_problem, last)
        if problem is not None:
            log.warning("%s: moving it aside and rebuilding it from the log", problem)
            await asyncio.to_thread(self._reset_indexes)
        await asyncio.to_thread(self._erase_deleted)  # a purge whose erasure a crash interrupted
        self._applied = await asyncio.to_thread(self._index.applied_seq)
        self._skipped = await asyncio.to_thread(self._index.skipped_count) if self._applied else 0
        self._quarantine = await asyncio.to_thread(self._stored_quarantine) if self._applied else Quarantine()
        self._report_quarantine()
        await self._load_registry()
        await self._follow()  # the log resumes it by itself after a reconnection
        self._catch_up = asyncio.create_task(self._catch_up_then_verify(), name="index-catch-up")
        metrics.watch(self)

    async def wait_caught_up(self, timeout: float | None = None) -> None:
        """Returns once the index has caught up with the log as it was at start (and passed its checks)."""
        await asyncio.wait_for(self._caught_up.wait(), timeout)

    async def stop(self) -> None:
        metrics.unwatch(self)
        if self._catch_up is not None:
            self._catch_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._catch_up
            self._catch_up = None
        await self._unfollow()
        if self._disk is not None and (full := self._disk.index_space_problem()) is not None:
            # A write to a memory-mapped file on a full disk kills the process (SIGBUS); the WAL holds what the
            # index applied, and the next start reads the registry's entries from the log again.
            log.warning("the index is left as it is at stop (%s)", full)
            return
        with contextlib.suppress(Exception):  # if it cannot be stored, the next start reads the log again
            await self._save_registry()
        with contextlib.suppress(Exception):  # a damaged index may not even flush; it is rebuilt next start
            await asyncio.to_thread(self._index.flush)
        if self._versions is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._versions.flush)

    def require_ready(self) -> None:
        """Raises Unavailable while the index is still catching up with (or being rebuilt from) the log."""
        if not self._caught_up.is_set():
            raise Unavailable(
                f"The search index is catching up with the log ({self._applied} of {self._target} entries "
                "applied); reads are served once it has. Retry in a few seconds.",
                retry_after=5.0,
            )

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

    def sample(self) -> Mapping[str, float]:
        """The index's gauges (engram.process.metrics): what it applied, where the log ends, the difference."""
        applied, last = self._applied, max(self._target, self._seen, self._applied)
        return {
            metrics.INDEX_APPLIED_SEQ: applied,
            metrics.LOG_LAST_SEQ: last,
            metrics.INDEX_LAG: last - applied,
            metrics.INDEX_QUARANTINED: self._quarantine.count,
        }

    async def log_last_seq(self) -> int:
        try:
            return await self._log.last_seq()
        except Exception:  # reported as 0: the caller shows "unknown"; readiness says why
            return 0

    async def check_min_seq(self, seq: int) -> None:
        """Refuses a min_seq that no write has returned yet (beyond the end of the log), at once."""
        if seq <= self._applied:
            return
        try:
            last = await self._log.last_seq()
        except Exception:  # the log is unreachable: the bounded wait decides (readiness says why)
            return
        if seq > last:
            raise InvalidArgument(
                "min_seq", f"{seq} is beyond the end of the log (at {last}); pass a `seq` returned by a write."
            )

    # -- start-up checks -------------------------------------------------------------------------------

    def _structural_problem(self, last_seq: int) -> str | None:
        """Problems visible without the log's help: unusable structure, or ahead of the log."""
        try:
            return self._structure(last_seq)
        except Exception as e:  # the Rust side reports a file it cannot read (e.g. truncated) as a plain Exception
            return f"the index is damaged (reading it failed: {e})"

    def _structure(self, last_seq: int) -> str | None:
        problem = self._index.check()
        if problem is not None:
            return f"the index is damaged ({problem})"
        if self._versions is not None and (problem := self._versions.check()) is not None:
            return f"the versions index is damaged ({problem})"
        applied = self._index.applied_seq()
        if applied > last_seq:
            # The index belongs to another log (e.g. the data dir's log was wiped).
            return f"the index is at log sequence {applied} but the log ends at {last_seq}"
        if applied == 0 and self._index.point_count() > 0:
            return "the index holds memories but no record of which log entries it applied"
        if applied > 0:
            state = self._index.indexer_state()
            if state.get("layout") != LAYOUT:
                return f"the index was built by an earlier version (layout {state.get('layout', 1)}, now {LAYOUT})"
            try:
                _, registry_seq = self._stored_registry()
            except ValueError as e:
                return f"the index's agent registry cannot be read ({e})"
            if registry_seq > applied:
                return f"the index's agent registry is as of log sequence {registry_seq}, after {applied}"
            try:
                self._stored_quarantine()
            except ValueError as e:
                return f"the index's quarantine cannot be read ({e})"
        return None

    def _stored_registry(self) -> tuple[AgentRegistry, int]:
        """The stored registry and the sequence it is as of; raises ValueError when it cannot be read."""
        state = self._index.indexer_state()
        seq = state.get("agents_seq")
        if type(seq) is not int:
            raise ValueError(f"its sequence {seq!r} is not a number")
        return AgentRegistry.from_json(state.get("agents")), seq

    def _stored_quarantine(self) -> Quarantine:
        """The stored quarantine; raises ValueError when it cannot be read."""
        return Quarantine.from_json(self._index.indexer_state().get("quarantine"))

    def _state(self, registry: AgentRegistry, seq: int, quarantine: Quarantine) -> dict[str, Any]:
        """What set_applied_seq stores besides the sequence: the layout, the agent registry as of seq, and the
        entries set aside up to it."""
        return {"layout": LAYOUT, "agents": registry.to_json(), "agents_seq": seq, "quarantine": quarantine.to_json()}

    async def _load_registry(self) -> None:
        """The stored registry, brought up to the applied sequence with the entries after it, read again from
        the log for the registry alone (an entry erased meanwhile is simply gone, as in a rebuild)."""
        self._registry, self._registry_seq = AgentRegistry(), 0
        if self._applied:
            self._registry, self._registry_seq = await asyncio.to_thread(self._stored_registry)
        self._registry_saved = -math.inf
        aside = self._quarantine.seqs()  # not in the registry either (reading one may be what failed)
        for start in range(self._registry_seq + 1, self._applied + 1, MAX_BATCH):
            seqs = [seq for seq in range(start, min(start + MAX_BATCH, self._applied + 1)) if seq not in aside]
            entries = [entry for seq in seqs if (entry := await self._log.read(seq)) is not None]
            self._registry = _with_entries(self._registry, entries)

    async def _save_registry(self, *, force: bool = False) -> None:
        """Stores the registry as of the applied sequence if the stored one is behind (when idle, at stop), or
        with ``force`` in any case (with a new count of skipped entries)."""
        if self._registry_seq >= self._applied and not force:
            return
        applied, skipped = self._applied, self._skipped
        state = self._state(self._registry, applied, self._quarantine)
        await asyncio.to_thread(lambda: self._index.set_applied_seq(applied, skipped=skipped, state=state))
        self._registry_seq, self._registry_saved = applied, time.monotonic()

    async def _catch_up_then_verify(self) -> None:
        delay = RETRY_FIRST_SECONDS
        while True:
            try:
                await self._catch_up_once()
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the log or the index failed mid-way: report it and try again
                log.warning("catching up the index failed (%r); retrying in %.1fs", e, delay)
                self._health.fail(INDEX, f"catching up with the log failed ({e}); retrying", services=[SEARCH_SERVICE])
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def _catch_up_once(self) -> None:
        rebuilt = False
        while True:
            target = await self._log.last_seq()
            await self._report_until(target)
            problem = await self._log_mismatch() if self._verify else None
            if problem is None:
                break
            if rebuilt:
                # A log can legitimately differ (e.g. an entry replayed under a new message id): once rebuilt
                # from it, the difference is what the log says, so it is recorded and not "repaired" again.
                log.warning("%s even after a rebuild from the log; accepting the log's count", problem)
                await self._accept_counts()
                break
            log.warning("%s: moving the index aside and rebuilding it from the log", problem)
            await self._rebuild()
            rebuilt = True
        self._health.clear(INDEX)
        self._caught_up.set()
        log.info("index caught up at log sequence %d", self._applied)

    async def _report_until(self, target: int) -> None:
        self._target = target
        while self._applied < target:
            self._health.fail(
                INDEX,
                f"catching up with the log: {self._applied} of {target} entries applied; reads wait until done.",
                services=[SEARCH_SERVICE],
            )
            with contextlib.suppress(Unavailable):
                await self.wait_for(target, timeout=PROGRESS_SECONDS)

    async def _log_mismatch(self) -> str | None:
        """Compares the memories in the index with the memories the log created; None when they agree."""
        for _ in range(VERIFY_ATTEMPTS):
            before = await self._log.last_seq()
            await self.wait_for(before, timeout=None)
            created = await self._created()
            held = await asyncio.to_thread(self._index.point_count)
            if await self._log.last_seq() != before:
                continue  # writes arrived meanwhile: compare again
            expected = created - self._skipped
            if held == expected:
                return None
            return f"the index holds {held} memories but the log created {expected}"
        return None  # the log kept moving; nothing suggests damage

    async def _created(self) -> int:
        """How many memories the log created (saves and handoffs), over every namespace."""
        return sum([await self._log.count_events(event) for event in MEMORY_CREATED_EVENTS])

    async def _accept_counts(self) -> None:
        created = await self._created()
        held = await asyncio.to_thread(self._index.point_count)
        async with self._changed:
            self._skipped = created - held
            await self._save_registry(force=True)

    async def _rebuild(self) -> None:
        await self._unfollow()
        await asyncio.to_thread(self._reset_indexes)
        async with self._changed:
            self._applied = 0
            self._skipped = 0
            self._registry, self._registry_seq, self._registry_saved = AgentRegistry(), 0, -math.inf
            self._quarantine = Quarantine()  # derived from the log like the rest: what still fails is set aside again
        self._report_quarantine()
        self._queue = asyncio.Queue()
        await self._follow()

    def _reset_indexes(self) -> None:
        """Both indexes start over together: the versions index is derived from the same entries."""
        self._index.reset()
        if self._versions is not None:
            self._versions.reset()

    async def _follow(self) -> None:
        queue = self._queue

        async def receive(entry: LogEntry) -> None:
            self._seen = max(self._seen, entry.seq)
            await queue.put(entry)

        self._worker = asyncio.create_task(self._run(), name="indexer")
        self._subscription = await self._log.follow(self._applied + 1, receive)

    async def _unfollow(self) -> None:
        if self._subscription is not None:
            with contextlib.suppress(Exception):  # the connection may already be gone
                await self._subscription.unsubscribe()
            self._subscription = None
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    # -- applying ----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        busy = 0  # entries applied since the last maintenance
        while True:
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns an item that arrives together
                # with a cancellation and swallows the cancellation, so stop() would wait for ever.
                async with asyncio.timeout(IDLE_SECONDS):
                    first = await self._queue.get()
            except TimeoutError:
                await self._maintain()
                busy = 0
                continue
            batch = [first]
            while len(batch) < MAX_BATCH and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            batch = [entry for entry in batch if entry.seq > self._applied]  # replays after a consumer reset
            if batch:
                await self._apply_with_retry(batch)
                busy += len(batch)
            # Not while catching up at start (a rebuild from the log): reads wait for the catch-up, and a build's
            # copy and child process would take the cores it needs (a 53k rebuild: 25.8 s with five builds on the
            # way); the graph is built once, in the first idle second after it.
            if busy >= BUSY_MAINTAIN_ENTRIES and self._caught_up.is_set():
                await self._maintain()
                busy = 0

    async def _maintain(self) -> None:
        """The index's housekeeping (Qdrant Edge builds its HNSW graph here), unless the disk is nearly full:
        rebuilding segments needs room."""
        if self._disk is not None and self._disk.index_space_problem() is not None:
            return
        steps = [time.monotonic()]  # the log is applied again only once they are done: reads waiting wait for them
        try:
            await self._save_registry()
            steps.append(time.monotonic())
            await asyncio.to_thread(self._erase_deleted)  # one that waited for room
            steps.append(time.monotonic())
            await asyncio.to_thread(self._index.maintain)
            steps.append(time.monotonic())
            if self._versions is not None:
                await asyncio.to_thread(self._versions.maintain)
            steps.append(time.monotonic())
        except Exception:
            log.exception("index maintenance failed; it is retried when idle again")
            return
        if steps[-1] - steps[0] >= SLOW_SECONDS:
            log.info("index maintenance held the log's application for %.2fs: registry %.2fs, erasing %.2fs, "
                     "memories %.2fs, versions %.2fs", steps[-1] - steps[0], *itertools.starmap(
                         lambda a, b: b - a, itertools.pairwise(steps)))  # fmt: skip

    async def _apply_with_retry(self, batch: list[LogEntry]) -> None:
        """Applies a batch, waiting out a full disk and retrying while the index's storage refuses writes. When
        the batch fails, its entries are applied one at a time and one that fails on its own is set aside."""
        delay = RETRY_FIRST_SECONDS
        while batch := [entry for entry in batch if entry.seq > self._applied]:  # some applied one at a time
            paused = self._disk.index_space_problem() if self._disk is not None else None
            if paused is None:
                try:
                    await self._apply_batch(batch)
                    break
                except Exception as e:  # the storage, or one entry: applying them one at a time tells which
                    log.warning("applying log entries %d-%d failed (%r); applying them one at a time",
                                batch[0].seq, batch[-1].seq, e)  # fmt: skip
                try:
                    await self._apply_singly(batch)
                    break
                except Exception as e:  # the index's storage refuses writes: wait, then try again
                    log.exception("writing log entries %d-%d to the index failed", batch[0].seq, batch[-1].seq)
                    paused = f"writing to the index failed ({e}); retrying"
            self._health.fail(INDEX, f"index updates paused: {paused}", services=[SEARCH_SERVICE])
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_SECONDS)
        if self._caught_up.is_set():
            self._health.clear(INDEX)

    async def _apply_batch(self, batch: list[LogEntry]) -> None:
        save = time.monotonic() - self._registry_saved >= REGISTRY_SAVE_SECONDS
        async with self._applying:
            before = Applied(self._skipped, self._registry, self._quarantine)
            started = time.monotonic()
            try:
                after, stored = await asyncio.to_thread(self._apply, batch, before, save_registry=save)
            except BaseException as e:  # a Rust panic in the index is a BaseException: it would end the indexer
                if not _panicked(e):
                    raise
                raise IndexPanic(f"the index panicked on log entries {batch[0].seq}-{batch[-1].seq}: {e}") from e
            await self._commit(batch[-1].seq, after, stored=stored)
        if (took := time.monotonic() - started) >= SLOW_SECONDS and self._caught_up.is_set():  # not a rebuild's
            log.info("applying log entries %d-%d (%d) to the index took %.2fs", batch[0].seq, batch[-1].seq,
                     len(batch), took)  # fmt: skip

    async def _commit(self, seq: int, after: Applied, *, stored: bool) -> None:
        """Makes what was written to the index (up to seq) the indexer's own, and wakes the reads waiting for it."""
        changed = after.quarantine != self._quarantine
        async with self._changed:
            self._applied = max(self._applied, seq)
            self._skipped, self._registry, self._quarantine = after.skipped, after.registry, after.quarantine
            if stored:
                self._registry_seq, self._registry_saved = self._applied, time.monotonic()
            self._changed.notify_all()
        if changed:
            self._report_quarantine()

    async def _apply_singly(self, batch: list[LogEntry]) -> None:
        """Applies entries one at a time; an entry that keeps failing while the storage takes writes is set aside.
        Raises when the storage is at fault (the caller waits and tries again from the first entry not applied)."""
        for entry in batch:
            if entry.seq <= self._applied:
                continue
            error = await self._try_alone(entry)
            if error is not None:
                await self._set_aside(entry, error)

    async def _try_alone(self, entry: LogEntry) -> BaseException | None:
        """Applies one entry, a few times; answers its error if it keeps failing on its own, while a write of the
        index's bookkeeping succeeds (raises if that fails too, or if the error is the storage's)."""
        error: BaseException | None = None
        for attempt in range(ENTRY_ATTEMPTS):
            if attempt:
                await asyncio.sleep(ENTRY_RETRY_SECONDS * attempt)
            if attempt == ENTRY_ATTEMPTS - 1:
                await self._probe_storage()
            try:
                await self._apply_batch([entry])
                return None
            except STORAGE_FAULTS:
                raise
            except Exception as e:  # about this entry, unless the storage fails the probe too
                error = e
        return error

    async def _probe_storage(self) -> None:
        """Rewrites the index's record of the applied sequence as it is: raises when the storage refuses writes."""
        applied, skipped = self._applied, self._skipped
        async with self._applying:
            try:
                await asyncio.to_thread(lambda: self._index.set_applied_seq(applied, skipped=skipped))
            except BaseException as e:  # a panic here is the storage's (see IndexPanic): paused and retried
                if not _panicked(e):
                    raise
                raise IndexPanic(f"the index panicked on a write of its own state: {e}") from e

    async def _set_aside(self, entry: LogEntry, error: BaseException) -> None:
        """Quarantines an entry and moves the index past it, stored together (a restart resumes both)."""
        record = set_aside(entry, error, time.time())
        async with self._applying:
            skipped = self._skipped + (entry.event in MEMORY_CREATED_EVENTS)
            after = Applied(skipped, self._registry, self._quarantine.adding([record]))
            state = self._state(after.registry, entry.seq, after.quarantine)
            await asyncio.to_thread(lambda: self._index.set_applied_seq(entry.seq, skipped=skipped, state=state))
            await self._commit(entry.seq, after, stored=True)
        log.warning(
            "log entry %d (%s in %s, memory %s) cannot be applied to the index and is set aside: %s",
            entry.seq, record.event, record.namespace, record.memory_id or "-", record.error,
        )  # fmt: skip

    def _report_quarantine(self) -> None:
        """Readiness says the index serves but has entries set aside (degraded), or nothing when it has none."""
        quarantine = self._quarantine
        if not quarantine.count or (newest := quarantine.newest) is None:
            self._health.clear(QUARANTINE)
            return
        self._health.degrade(
            QUARANTINE,
            f"{plural.counted(quarantine.count, 'log entry', 'log entries')} could not be applied to the search index "
            f"and {'was' if quarantine.count == 1 else 'were'} set aside (the "
            f"newest: log sequence {newest.seq}, {newest.event}); everything else is served. An admin lists them "
            "with `engram index quarantine list`, and retries or purges them there.",
        )

    # -- the quarantine (admin) ------------------------------------------------------------------------------

    def quarantined(self, namespace: str | None = None) -> list[Quarantined]:
        """The entries set aside, of ``namespace`` (None: every namespace), oldest first."""
        return self._quarantine.visible(namespace)

    def _chosen(self, seqs: Iterable[int], namespace: str | None) -> set[int]:
        """The sequences asked for (none: every entry of namespace); raises InvalidArgument for one not there."""
        visible = {item.seq for item in self._quarantine.visible(namespace)}
        wanted = set(seqs)
        if missing := sorted(wanted - visible):
            where = f" of namespace {namespace}" if namespace is not None else ""
            raise InvalidArgument(
                "seqs", f"{plural.listed(missing)} not in the quarantine{where}; list it to see what is there."
            )
        return wanted or visible

    async def retry_quarantined(
        self, seqs: Iterable[int], namespace: str | None = None
    ) -> tuple[list[Quarantined], list[Quarantined]]:
        """Applies quarantined entries again, read from the log (after a fix or an upgrade): answers those applied
        (out of the quarantine; one the log no longer holds, e.g. purged, too) and those still failing (kept, with
        the new error). ``seqs`` empty: every entry of ``namespace`` (None: of every namespace). Raises when the
        index's storage refuses writes."""
        wanted = self._chosen(seqs, namespace)
        applied: list[Quarantined] = []
        failed: list[Quarantined] = []
        async with self._applying:
            entries = []
            for item in [item for item in self._quarantine if item.seq in wanted]:
                entry = await self._log.read(item.seq)
                if entry is None:
                    applied.append(item)  # erased from the log: nothing is left to apply
                    continue
                entries.append((item, entry))
            for item, entry in entries:
                aside = await asyncio.to_thread(self._apply_again, entry)
                (applied if aside is None else failed).append(item if aside is None else aside)
            created = sum(item.event in MEMORY_CREATED_EVENTS for item in applied)
            registry = self._registry.with_entries(e.body for i, e in entries if i in applied)
            quarantine = self._quarantine.without(item.seq for item in applied).adding(failed)
            after = Applied(self._skipped - created, registry, quarantine)
            await self._store(after)
        for item in applied:
            log.warning("quarantined log entry %d applied again (admin)", item.seq)
        return applied, failed

    async def drop_quarantined(self, seqs: Iterable[int], namespace: str | None = None) -> list[Quarantined]:
        """Drops entries from the quarantine (admin): they stay in the log, not in the index (a rebuild of the
        index sets them aside again unless the memory was purged meanwhile). ``seqs`` as for retry_quarantined."""
        wanted = self._chosen(seqs, namespace)
        async with self._applying:
            dropped = [item for item in self._quarantine if item.seq in wanted]
            after = Applied(self._skipped, self._registry, self._quarantine.without(wanted))
            await self._store(after)
        for item in dropped:
            log.warning("quarantined log entry %d dropped from the quarantine (admin)", item.seq)
        return dropped

    async def _store(self, after: Applied) -> None:
        """Stores a changed quarantine (and what goes with it) at the applied sequence. Hold self._applying."""
        applied = self._applied
        state = self._state(after.registry, applied, after.quarantine)
        await asyncio.to_thread(lambda: self._index.set_applied_seq(applied, skipped=after.skipped, state=state))
        await self._commit(applied, after, stored=True)

    def _apply_again(self, entry: LogEntry) -> Quarantined | None:
        """Applies one entry behind the cursor; the entry's quarantine record when it still fails."""
        try:
            aside, _ = self._effects([entry])
        except STORAGE_FAULTS:
            raise
        except Exception as e:  # still failing: kept, with what it fails with now
            return set_aside(entry, e, time.time())
        except BaseException as e:  # a Rust panic in the index (see IndexPanic)
            if not _panicked(e):
                raise
            return set_aside(entry, IndexPanic(f"the index panicked: {e}"), time.time())
        return aside[0] if aside else None

    # -- applying entries ---------------------------------------------------------------------------------

    def _apply(self, batch: list[LogEntry], before: Applied, *, save_registry: bool) -> tuple[Applied, bool]:
        """Applies entries in log order, then moves the cursor (with the agent registry and the quarantine as of
        the batch's end when ``save_registry`` or when the quarantine changed).

        Returns what changed besides the index (the old values stay unchanged, so a batch that fails midway is
        retried from them) and whether the state was stored. An entry that cannot be served is set aside.
        """
        aside, purged = self._effects(batch)
        bad = {item.seq for item in aside}
        registry = before.registry.with_entries(entry.body for entry in batch if entry.seq not in bad)
        skipped = before.skipped + sum(item.event in MEMORY_CREATED_EVENTS for item in aside)
        quarantine = before.quarantine
        gone = [item for namespace, memory_id in purged for item in quarantine.about(namespace, memory_id)]
        if gone:  # their entries were erased from the log with the memory: nothing is left to set aside
            quarantine = quarantine.without(item.seq for item in gone)
            skipped -= sum(item.event in MEMORY_CREATED_EVENTS for item in gone)
        if aside:
            quarantine = quarantine.adding(aside)
        store = save_registry or quarantine != before.quarantine
        state = self._state(registry, batch[-1].seq, quarantine) if store else None
        self._index.set_applied_seq(batch[-1].seq, skipped=skipped, state=state)
        for item in aside:
            log.warning("log entry %d (%s) cannot be served and is set aside: %s", item.seq, item.event, item.error)
        return Applied(skipped, registry, quarantine), store

    def _effects(self, batch: list[LogEntry]) -> tuple[list[Quarantined], list[tuple[str, str]]]:
        """Writes what the entries change to the indexes; answers the entries set aside because they cannot be
        served (the rest still applied) and the memories purged. Raises when a write to the index fails."""
        run: list[IndexPoint] = []
        aside: list[Quarantined] = []
        purged: list[tuple[str, str]] = []
        for entry in batch:
            try:
                event = entry.body.get("event")
                if event in (MEMORY_ENRICHED, MEMORY_PURGED, MEMORY_ACCESSED):
                    self._apply_versions(run)
                    run = []
                    if event == MEMORY_ENRICHED:
                        self._add_questions(entry)
                    elif event == MEMORY_PURGED:
                        self._purge(entry.body)
                        purged.append((entry.body["namespace"], entry.body["memory_id"]))
                    else:
                        self._count_accesses(entry.body)
                elif (point := _point(entry)) is not None:
                    run.append(point)
            except (KeyError, ValueError, TypeError, RecursionError) as e:
                # An entry that cannot be served must not stop the index (or break reads): it is set aside.
                aside.append(set_aside(entry, e, time.time()))
        self._apply_versions(run)
        if purged:  # before the cursor moves on: a crash meanwhile applies the batch, and erases, again
            self._erase_deleted()
        return aside, purged

    def _apply_versions(self, points: list[IndexPoint]) -> None:
        """Makes the newest version of each memory its current one and files the versions it replaces.

        Version guard: an older version never overwrites a newer one (in the index or later in the batch). A
        replaced version moves to the versions index, its recorded validity closed where its successor's opens;
        so every version of a memory stays searchable at the times it was current, and a replay changes nothing.
        """
        if not points:
            return
        chains: dict[tuple[str, str], dict[int, IndexPoint]] = {}
        for point in points:  # in log order: a version written twice keeps its later write
            chains.setdefault((point.payload["namespace"], point.id), {})[_version(point)] = point
        by_namespace: dict[str, list[str]] = {}
        for namespace, memory_id in chains:
            by_namespace.setdefault(namespace, []).append(memory_id)
        stored = {
            (namespace, point.id): point
            for namespace, ids in by_namespace.items()
            for point in self._index.retrieve_points(namespace, ids)
        }
        heads: list[IndexPoint] = []
        replaced: list[IndexPoint] = []
        for key, versions in chains.items():
            current = stored.get(key)
            chain = [versions[v] for v in sorted(versions) if current is None or v > _version(current)]
            if not chain:
                continue  # a replay of versions the index already has
            if current is not None:
                _carry_over(current, chain[-1])
                chain.insert(0, current)
            for older, newer in itertools.pairwise(chain):
                older.payload[VALID_TO] = newer.payload[VALID_FROM]
                if newer.payload.get(CONFLICT_WITH) == _version(older):
                    older.payload[CONFLICT] = True  # a device's concurrent change overrode it: kept, marked
                replaced.append(older)
            heads.append(chain[-1])
        if replaced and self._versions is not None:
            self._versions.upsert(
                [
                    IndexPoint(version_point_id(p.id, _version(p)), p.payload, p.dense, p.sparse, p.questions)
                    for p in replaced
                ]
            )
        if heads:
            self._index.upsert(heads)

    def _add_questions(self, entry: LogEntry) -> None:
        body = entry.body
        vectors = decode_questions(body.get("vectors", {}))
        namespace, memory_id = body["namespace"], body["memory_id"]
        if vectors and not self._index.update_questions(namespace, memory_id, vectors, body["questions"]):
            log.warning("questions for unknown memory %s in %s ignored", memory_id, namespace)
            return
        found = self._index.retrieve(namespace, [memory_id])
        if found:  # a purge erases these entries too
            seqs = [*found[0].get(ENRICHED_SEQS, []), entry.seq]
            self._index.set_fields(namespace, {memory_id: {ENRICHED_SEQS: seqs}})

    def _purge(self, body: dict[str, Any]) -> None:
        namespace, memory_id = body["namespace"], body["memory_id"]
        self._index.delete_memory(namespace, memory_id)
        if self._versions is not None:
            self._versions.delete_memory(namespace, memory_id)

    def _erase_deleted(self) -> None:
        """Leaves no trace of purged memories in the indexes' files (every purge of a batch at once). Without room
        for that on the disk it is left for later (when idle, or the next start): the memories are gone from the
        index already, only their bytes wait, and the index goes on applying the log meanwhile."""
        try:
            self._index.erase_deleted()
            if self._versions is not None:
                self._versions.erase_deleted()
        except DiskFull as e:
            log.warning("purged memories stay in the index's files for now: %s", e)

    def _count_accesses(self, body: dict[str, Any]) -> None:
        """Adds a batch of read counts to the current versions (no new version: reads are not changes)."""
        namespace, counts, at = body["namespace"], dict(body["counts"]), body.get("time")
        if not counts:
            return  # a batch of readers only (reads that found nothing): news for the agent registry alone
        current = {p["id"]: p for p in self._index.retrieve(namespace, list(counts))}
        self._index.set_fields(
            namespace,
            {
                memory_id: {"access_count": int(payload.get("access_count") or 0) + int(counts[memory_id]),
                            "last_accessed_at": at}
                for memory_id, payload in current.items()
            },
        )  # fmt: skip


CONFLICT_WITH = "_conflict_with"  # a synced change made concurrently with this version (which it overrides)
CONFLICT = "_conflict"  # this version was overridden by a concurrent change of another device
ENRICHED_SEQS = "_enriched_seqs"  # the log entries that added questions to a memory (erased with it by a purge)
# Kept from the current version when a new one replaces it: they are not written by ingest but by reads and
# enrichment, which the index alone knows about.
_CARRIED = ("access_count", "last_accessed_at", ENRICHED_SEQS)


def _with_entries(registry: AgentRegistry, entries: list[LogEntry]) -> AgentRegistry:
    """The registry after these entries; one it cannot take (set aside when applied, but no longer kept in the
    quarantine) is left out, as it was then, so that it never stops a start."""
    try:
        return registry.with_entries(entry.body for entry in entries)
    except (KeyError, ValueError, TypeError, RecursionError):
        for entry in entries:
            try:
                registry = registry.with_entries([entry.body])
            except (KeyError, ValueError, TypeError, RecursionError) as e:
                log.warning("log entry %d left out of the agent registry: %r", entry.seq, e)
        return registry


def _carry_over(current: IndexPoint, newest: IndexPoint) -> None:
    for name in _CARRIED:
        if name in current.payload:
            newest.payload[name] = current.payload[name]
    if newest.payload.get("content") == current.payload.get("content") and current.questions:
        newest.questions = current.questions  # the questions a memory answers stay while its content does
        newest.payload["questions"] = current.payload.get("questions", [])


def _point(entry: LogEntry) -> IndexPoint | None:
    body = entry.body
    if body.get("event") not in MEMORY_STATE_EVENTS or "memory" not in body or "vectors" not in body:
        return None
    payload: dict[str, Any] = dict(body["memory"])
    if (problem := servable_problem(payload)) is not None:
        raise ValueError(problem)
    payload["seq"] = entry.seq
    payload["_event"] = body["event"]
    if isinstance(conflict := body.get("conflict"), dict):
        payload[CONFLICT_WITH] = conflict.get("version")
    payload[CREATED_TS] = parse_time(payload.get("created_at")) or 0.0
    payload[VALID_FROM] = parse_time(payload.get("updated_at")) or payload[CREATED_TS]
    payload[VALID_TO] = FAR
    payload[WORLD_FROM] = parse_time(payload.get("valid_at")) or -FAR
    payload[WORLD_TO] = parse_time(payload.get("invalid_at")) or FAR
    handoff = payload.get("handoff") or {}
    if not isinstance(handoff, dict):
        raise ValueError("its handoff is not a JSON object")
    payload[HANDOFF_TO] = _handoff_targets(str(handoff.get("target_agent") or ""))
    payload[HANDOFF_STATUS] = str(handoff.get("status") or "")
    payload[EXPIRES_TS] = _expires_ts(payload, handoff)
    payload[CONTENT_KEY] = content_key(payload)
    vectors = body["vectors"]
    return IndexPoint(id=payload["id"], payload=payload, dense=decode_dense(vectors), sparse=decode_sparse(vectors))


def _handoff_targets(target: str) -> list[str]:
    """The values a handoff filter matches: its target, and for a target written ``agent@device`` the agent too
    (so the agent's listing finds it; only that device may accept it)."""
    agent, at, _ = target.rpartition("@")
    return [target, agent] if at and agent else [target] if target else []


def _expires_ts(payload: dict[str, Any], handoff: dict[str, Any]) -> float:
    """When the memory is due to expire: its expires_at, or a pending handoff's deadline if that comes first
    (the expiry job then turns the handoff into a plain memory); FAR when neither is set."""
    due = [parse_time(payload.get("expires_at"))]
    if handoff.get("status") == "pending":
        due.append(parse_time(handoff.get("expires_at")))
    return min((t for t in due if t is not None), default=FAR)


def _version(point: IndexPoint) -> int:
    return int(point.payload.get("version", 0))
