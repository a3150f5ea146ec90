"""The expiry job: memories whose expires_at has passed become expired (a new version, event memory_expired).

It runs in the consolidation service on a schedule, and once on demand (RunJob, kind expiry). The due memories come
from the search service, across namespaces; each is expired through ingest, whose compare-and-set makes a second
runner (another replica, or a memory changed meanwhile) harmless: a memory already expired, or no longer due, is left
alone.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Protocol

from engram import plural
from engram.errors import InvalidArgument, NotFound, VersionConflict
from engram.log.leases import Holder, Leases, lease_key
from engram.model import Caller
from engram.process.periodic import Periodic
from engram.results import ExpireResult, Expiring
from engram.services.consolidation.jobs import MAINTENANCE, Outcome, Progress, Work, require_writer, system_caller

log = logging.getLogger(__name__)

DEFAULT_BATCH = 200
SCHEDULED_LEASE = lease_key("all-namespaces", "expire", "scheduled")


class DueMemories(Protocol):
    async def list_expiring(self, caller: Caller, *, at: float, limit: int) -> list[Expiring]: ...


class Expirer(Protocol):
    async def expire(self, caller: Caller, memory_id: str, *, expected_version: int, at: float) -> ExpireResult: ...


class ExpiryJob:
    """Expires what is due, now (run_once) and every ``interval`` seconds; the clock can be injected."""

    def __init__(
        self,
        due: DueMemories,
        ingest: Expirer,
        *,
        interval: float,
        clock: Callable[[], float] = time.time,
        batch: int = DEFAULT_BATCH,
    ) -> None:
        self._due = due
        self._ingest = ingest
        self._clock = clock
        self._batch = batch
        self._periodic = Periodic("expiry", interval, self._run_and_report)
        self._leases: Leases | None = None
        self._owner = ""

    def share(self, leases: Leases, owner: str) -> None:
        """From now on a scheduled pass runs under a lease: one replica expires at a time, the others skip."""
        self._leases, self._owner = leases, owner

    async def run_once(self) -> int:
        """Expires every memory due by now; returns how many were expired."""
        return sum((await self.run_pass()).values())

    async def run_pass(self) -> Counter[str]:
        """Expires every memory due by now, in every namespace; returns how many were expired per namespace."""
        now = self._clock()
        expired: Counter[str] = Counter()
        seen: set[tuple[str, str]] = set()
        while True:
            due = await self._due.list_expiring(system_caller(""), at=now, limit=self._batch)
            fresh = [item for item in due if (item.namespace, item.id) not in seen]
            if not fresh:
                return expired
            for item in fresh:
                seen.add((item.namespace, item.id))
                expired[item.namespace] += await self._expire(item, now)
            if len(due) < self._batch:
                return expired

    def on_demand(self, caller: Caller, options: Mapping[str, str]) -> Work:
        """The expiry job run once now (JOB_KIND_EXPIRY), whatever the schedule. The pass covers every namespace,
        as the scheduled one does (what is due is expired anyway); the result counts the caller's namespace only."""
        require_writer(caller)
        if options:
            raise InvalidArgument("options", "the expiry job takes no options.")

        async def run(progress: Progress) -> Outcome:
            count = (await self.run_pass())[caller.namespace]
            return Outcome(f"Expired {plural.memories(count)} whose expiry time had passed.", {"expired": count})

        return Work("this namespace", run, lane=MAINTENANCE)

    async def _expire(self, item: Expiring, now: float) -> int:
        try:
            result = await self._ingest.expire(
                system_caller(item.namespace), item.id, expected_version=item.version, at=now
            )
        except (VersionConflict, NotFound):
            return 0  # changed or purged since it was listed: the next run sees its new state
        return int(result.expired)

    async def _run_and_report(self) -> None:
        lease = None
        if self._leases is not None:
            got = await self._leases.acquire(SCHEDULED_LEASE, "scheduled-expiry", self._owner)
            if isinstance(got, Holder):
                log.debug("scheduled expiry skipped: %s runs it now", got.owner)
                return
            lease = got
        try:
            if count := await self.run_once():
                log.info("expired %d memories", count)
        finally:
            if lease is not None:
                await lease.release()

    async def start(self) -> None:
        self._periodic.start()

    async def stop(self) -> None:
        await self._periodic.stop()
