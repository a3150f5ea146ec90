"""On-demand consolidation jobs: each runs to its end even if its caller leaves, and the last ones are kept for GetJob.

A job kind is a handler that first checks the request (raising for the caller's mistakes, so no job is recorded)
and then returns the work to run. The work's failures become a failed job with the reason, not an error: the
caller asked for a job and gets one, with what went wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from engram.errors import EngramError, InvalidArgument, NotFound, NotImplementedYet, PermissionDenied
from engram.ids import uuid7
from engram.log.events import CONSOLIDATION_AGENT, CONSOLIDATION_SOURCE
from engram.log.leases import Holder, Lease, Leases, lease_key
from engram.model import Caller
from engram.names import NAMESPACE_RULE, is_valid_namespace
from engram.ownership import ADMIN_SCOPE
from engram.process import metrics
from engram.results import Job

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 100
DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 100
AGENT, SOURCE = CONSOLIDATION_AGENT, CONSOLIDATION_SOURCE
MAX_SHOWN_ID_CHARS = 40
ANSWER_MARGIN_SECONDS = 1.0  # a job still running this long before the caller's deadline is answered as running
STORE_EVERY_SECONDS = 1.0  # how often a running job's progress is stored for the other replicas
MAINTENANCE = "maintenance"  # the lane of the namespace's maintenance jobs (expire, dedupe, ..., all)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a job's work ended: a one-line summary and its result (a JSON object)."""

    summary: str
    result: dict[str, Any]
    failed: bool = False


class Progress:
    """What a running job reports: the items it handled of how many, and its phase; seen by GetJob here at once,
    and on the other replicas within STORE_EVERY_SECONDS."""

    def __init__(self, time_limit: float | None = None, on_change: Callable[[], None] | None = None) -> None:
        self.time_limit = time_limit  # seconds the caller gave the job, when it set a deadline
        self.done = 0
        self.total = 0
        self.phase = ""
        self._on_change = on_change or (lambda: None)

    def start(self, phase: str, total: int) -> None:
        self.phase, self.done, self.total = phase, 0, total
        self._on_change()

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._on_change()


@dataclass(frozen=True, slots=True)
class Work:
    """A checked request, ready to run. ``key`` names what it works on: one run per lane, key and namespace at a
    time (the lane is the kind unless set: the namespace's maintenance jobs share one, as one runner)."""

    key: str  # for people too: "team 'auth'"
    run: Callable[[Progress], Awaitable[Outcome]]
    about: dict[str, Any] = field(default_factory=dict)  # what every result of it says, failed or not: {"team": ...}
    lane: str = ""


class JobStore(Protocol):
    """Where jobs are kept for GetJob and ListJobs on every replica (NATS KV: engram.log.jobstore)."""

    async def put(self, job: Job) -> None: ...

    async def get(self, namespace: str, job_id: str) -> Job | None: ...

    async def list(self, namespace: str) -> list[Job]: ...

    async def get_state(self, namespace: str, name: str) -> Any: ...

    async def put_state(self, namespace: str, name: str, value: Any) -> None: ...


Finished = Callable[[Job], Awaitable[None]]


Prepare = Callable[[Caller, Mapping[str, str]], Work]


class JobNotFound(NotFound):
    """No job with that id among the recent jobs of this consolidation process, in the caller's namespace."""

    def __init__(self, job_id: str) -> None:
        EngramError.__init__(
            self,
            f"No job with id '{job_id}' in this namespace. Jobs are kept for a week (with NATS; without it only the "
            f"last {DEFAULT_CAPACITY} of this process): run the job again.",
        )
        self.memory_id = ""
        self.job_id = job_id

    def details(self) -> dict[str, str]:
        return {"job_id": self.job_id}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("job_id", ""))


class JobRunning(EngramError):
    """The same job is already running: a second request is refused rather than queued behind it."""

    code = "failed_precondition"

    def __init__(self, kind: str, key: str, job_id: str) -> None:
        super().__init__(f"The {kind} job for {key} is already running (job {job_id}). Try again once it has finished.")
        self.kind = kind
        self.key = key
        self.job_id = job_id

    def details(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key, "job_id": self.job_id}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("kind", ""), details.get("key", ""), details.get("job_id", ""))


def system_caller(namespace: str, *, team: str = "") -> Caller:
    """Who consolidation jobs act as: an admin of the namespace (any member may start a job, and what a job may
    write must not depend on who asked), named in each version it writes."""
    scopes = frozenset({"read", "write", ADMIN_SCOPE})
    return Caller(namespace=namespace, agent_id=AGENT, source=SOURCE, scopes=scopes, team=team)


def require_writer(caller: Caller) -> None:
    """Jobs write (as the consolidation service), so they need a caller who may write."""
    if "write" not in caller.scopes and ADMIN_SCOPE not in caller.scopes:
        scopes = ", ".join(sorted(caller.scopes)) or "none"
        raise PermissionDenied(
            f"Running a consolidation job needs the write scope; this caller has {scopes}. "
            "Use a key with the write scope."
        )


class Jobs:
    """Runs jobs by kind and keeps the last ``capacity`` of them (running or finished) for GetJob."""

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY, clock: Callable[[], float] = time.time) -> None:
        self._capacity = capacity
        self._clock = clock
        self._handlers: dict[str, Prepare] = {}
        self._recent: OrderedDict[str, Job] = OrderedDict()
        self._running: dict[tuple[str, str, str], str] = {}  # (namespace, lane, key) -> job id
        self._tasks: set[asyncio.Task[Job]] = set()
        self._leases: Leases | None = None
        self._store: JobStore | None = None
        self._owner = ""
        self._finished: list[Finished] = []

    def share(self, leases: Leases, owner: str, store: JobStore | None = None) -> None:
        """From now on a job also takes a lease on what it works on, so replicas sharing ``leases`` never run the
        same job at once (``owner`` names this process in the lease), and is kept in ``store`` for GetJob on any
        replica."""
        self._leases, self._owner, self._store = leases, owner, store

    @property
    def leases(self) -> Leases | None:
        return self._leases

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def store(self) -> JobStore | None:
        """Where jobs (and a namespace's job state) are kept for every replica; None without NATS."""
        return self._store

    def on_finish(self, callback: Finished) -> None:
        """Calls ``callback`` with every job that ended (succeeded or failed), e.g. to publish an event."""
        self._finished.append(callback)

    def handle(self, kind: str, prepare: Prepare) -> None:
        """Runs jobs of ``kind`` with ``prepare`` from now on."""
        self._handlers[kind] = prepare

    async def run(
        self, caller: Caller, kind: str, options: Mapping[str, str], *, time_limit: float | None = None
    ) -> Job:
        """Runs a job and answers it once it has ended (succeeded or failed), or, when the caller's deadline
        (``time_limit`` seconds) comes first, as it is then: running, with its progress. Raises for a request that
        cannot run.

        Either way the job runs to its end (a half-done summary helps nobody), and GetJob shows it.
        """
        if not is_valid_namespace(caller.namespace):
            raise InvalidArgument("caller.namespace", NAMESPACE_RULE)
        prepare = self._handlers.get(kind)
        if prepare is None:
            raise NotImplementedYet(f"The {kind} job")
        work = prepare(caller, options)
        running = (caller.namespace, work.lane or kind, work.key)
        if running in self._running:
            metrics.JOBS.labels(kind, "already_running").inc()
            raise JobRunning(kind, work.key, self._running[running])
        job = Job(
            id=uuid7(), kind=kind, state="running", namespace=caller.namespace, started_at=self._clock(),
            runner=self._owner,
        )  # fmt: skip
        self._running[running] = job.id
        try:
            lease = await self._lease(job, work, running)
        except BaseException:
            self._running.pop(running, None)
            raise
        self._keep(job)
        await self._stored(job)
        task = asyncio.create_task(self._finish(job, work, time_limit, running, lease), name=f"engram-job-{kind}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if time_limit is None:
            return await asyncio.shield(task)
        try:
            return await asyncio.wait_for(asyncio.shield(task), max(0.0, time_limit - ANSWER_MARGIN_SECONDS))
        except TimeoutError:
            return self._recent.get(job.id, job)  # still running: the caller follows it with GetJob

    async def get(self, caller: Caller, job_id: str) -> Job:
        """A job of the caller's namespace, run here or by another replica; another namespace's job is not found
        either."""
        job = self._recent.get(job_id)
        if job is None and self._store is not None:
            try:
                job = await self._store.get(caller.namespace, job_id)
            except EngramError:
                job = None
        if job is None or job.namespace != caller.namespace:
            raise JobNotFound(job_id[:MAX_SHOWN_ID_CHARS])
        return job

    async def list(self, caller: Caller, *, limit: int = DEFAULT_LIST_LIMIT) -> list[Job]:
        """The caller's namespace's recent jobs, newest first: those of every replica kept in the store, with this
        process's own (fresher while they run) in their place; only this process's when the store is missing."""
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidArgument("limit", f"give 1 to {MAX_LIST_LIMIT}.")
        jobs: dict[str, Job] = {}
        if self._store is not None:
            jobs = {job.id: job for job in await self._store.list(caller.namespace)}
        jobs.update((job.id, job) for job in self._recent.values() if job.namespace == caller.namespace)
        newest = sorted(jobs.values(), key=lambda job: (job.started_at or 0.0, job.id), reverse=True)
        return newest[:limit]

    async def close(self) -> None:
        """Cancels the jobs still running (the service is stopping)."""
        tasks, self._tasks = set(self._tasks), set()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _lease(self, job: Job, work: Work, running: tuple[str, str, str]) -> Lease | None:
        """The lease on what ``job`` works on, across replicas; raises JobRunning (with the other job's id) when
        another replica runs it. Never waits for it."""
        if self._leases is None:
            return None
        got = await self._leases.acquire(lease_key(*running), job.id, self._owner)
        if isinstance(got, Holder):
            metrics.JOBS.labels(job.kind, "already_running").inc()
            raise JobRunning(job.kind, work.key, got.job_id or "unknown")
        return got

    async def _finish(
        self, job: Job, work: Work, time_limit: float | None, running: tuple[str, str, str], lease: Lease | None
    ) -> Job:
        def current() -> Job:
            return dataclasses.replace(job, done=progress.done, total=progress.total, phase=progress.phase)

        progress = Progress(time_limit, lambda: self._keep(current()))  # seen here at once
        reporting = asyncio.create_task(self._report(current)) if self._store is not None else None
        started, ended = time.perf_counter(), "cancelled"  # the service stopped while it ran
        metrics.JOBS_RUNNING.inc()
        try:
            outcome = await _outcome(job, work, progress)
            ended = "failed" if outcome.failed else "succeeded"
            if reporting is not None:  # stopped before the last state is stored: it never overwrites it
                reporting.cancel()
                await asyncio.gather(reporting, return_exceptions=True)
            done = dataclasses.replace(
                job, state="failed" if outcome.failed else "succeeded", finished_at=self._clock(),
                summary=outcome.summary, result=outcome.result, done=progress.done, total=progress.total,
                phase=progress.phase,
            )  # fmt: skip
            self._keep(done)
            await self._stored(done)
            for callback in self._finished:
                try:
                    await callback(done)
                except Exception:
                    log.exception("reporting the end of job %s failed", done.id)
            return done
        finally:
            metrics.JOBS_RUNNING.dec()
            metrics.JOBS.labels(job.kind, ended).inc()
            metrics.JOB_DURATION.labels(job.kind).observe(time.perf_counter() - started)
            if reporting is not None:
                reporting.cancel()
            self._running.pop(running, None)
            if lease is not None:
                await lease.release()

    async def _report(self, current: Callable[[], Job]) -> None:
        """Stores the running job's progress every STORE_EVERY_SECONDS, for GetJob on the other replicas."""
        while True:
            await asyncio.sleep(STORE_EVERY_SECONDS)
            await self._stored(current())

    async def _stored(self, job: Job) -> None:
        if self._store is None:
            return
        try:
            await self._store.put(job)
        except Exception as e:  # the job goes on; GetJob on another replica sees it a little later
            log.warning("storing job %s failed: %r", job.id, e)

    def _keep(self, job: Job) -> None:
        self._recent[job.id] = job
        self._recent.move_to_end(job.id)
        while len(self._recent) > self._capacity:
            self._recent.popitem(last=False)


async def _outcome(job: Job, work: Work, progress: Progress) -> Outcome:
    """The work's outcome; its failures become a failed outcome saying why (the top of one unit of work)."""
    try:
        return await work.run(progress)
    except EngramError as e:
        log.info("%s job %s for %s failed: %s", job.kind, job.id, work.key, e)
        return Outcome(str(e), {**work.about, "error": str(e), "code": e.code}, failed=True)
    except Exception as e:
        log.exception("%s job %s for %s failed unexpectedly", job.kind, job.id, work.key)
        reason = f"Internal error ({type(e).__name__}); see the consolidation service's log."
        return Outcome(reason, {**work.about, "error": reason, "code": "internal"}, failed=True)
