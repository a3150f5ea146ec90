"""What a process knows about its own readiness: named conditions, each fine or failing with a reason.

Services report problems here (the log is unreachable, the disk is full, the index is rebuilding); the gRPC
health service, the Status RPC and the gateway's /readyz all read them, so every probe says the same thing.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

LOG = "log"  # the NATS JetStream log: connection and write acknowledgements
DISK = "disk"  # free space in the data dir
INDEX = "index"  # the search index: loading, rebuilding, applying
QUARANTINE = "index_quarantine"  # log entries the index could not apply and set aside (it serves meanwhile)

ALL_SERVICES: frozenset[str] = frozenset()  # a problem that affects every service of the process

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Problem:
    """One failing condition: what is wrong, since when, and which services it stops (empty: all). A degraded
    one stops none: the process serves, and says what an operator should look at."""

    condition: str
    detail: str
    since: float
    services: frozenset[str] = ALL_SERVICES
    degraded: bool = False

    def affects(self, service: str) -> bool:
        return not self.degraded and (not self.services or service in self.services)


Listener = Callable[[], None]


@dataclass
class Health:
    """The failing conditions of one process. Not thread-safe: use it from the event loop's thread."""

    _problems: dict[str, Problem] = field(default_factory=dict)
    _listeners: list[Listener] = field(default_factory=list)

    def fail(self, condition: str, detail: str, *, services: Iterable[str] = ()) -> None:
        """Records (or updates) a problem; logged once when it starts, again when its detail changes."""
        held = self._problems.get(condition)
        if held is not None and held.detail == detail:
            return
        if held is None:
            log.warning("not ready (%s): %s", condition, detail)
        self._problems[condition] = Problem(condition, detail, held.since if held else time.time(), frozenset(services))
        self._changed()

    def degrade(self, condition: str, detail: str) -> None:
        """Records (or updates) a problem that stops nothing: reported by every probe, ready all the same."""
        held = self._problems.get(condition)
        if held is not None and held.detail == detail and held.degraded:
            return
        if held is None:
            log.warning("degraded (%s): %s", condition, detail)
        self._problems[condition] = Problem(condition, detail, held.since if held else time.time(), degraded=True)
        self._changed()

    def clear(self, condition: str) -> None:
        held = self._problems.pop(condition, None)
        if held is not None:
            log.warning("%s recovered after %.1fs", condition, time.time() - held.since)
            self._changed()

    def problem(self, condition: str) -> Problem | None:
        return self._problems.get(condition)

    def problems(self, service: str | None = None) -> list[Problem]:
        """Every problem (degraded ones too), or those that stop ``service``."""
        found = self._problems.values()
        return [p for p in found if service is None or p.affects(service)]

    def ready(self, service: str) -> bool:
        return not self.problems(service)

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()


@dataclass(frozen=True, slots=True)
class DiskSpace:
    path: str
    free_bytes: int
    reserve_bytes: int

    @property
    def ok(self) -> bool:
        return self.free_bytes >= self.reserve_bytes


def disk_space(path: Path, reserve_bytes: int) -> DiskSpace:
    """Free space of the file system holding ``path`` (its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return DiskSpace(str(path), shutil.disk_usage(probe).free, reserve_bytes)
