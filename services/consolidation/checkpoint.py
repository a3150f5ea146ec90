"""Where the `all` job's comparison of a namespace stopped, so the next run compares only what changed since.

A run compares the memories written after the checkpoint's sequence with their nearest neighbours in the whole
namespace (old with old was compared before), and the candidate pairs the last run left behind its cap. A
checkpoint taken under other rules (any change to the code that reads a pair) is not used: the run compares
everything again. Kept in the job store (NATS KV, beside the jobs, for every replica; it lapses with the jobs after
a week without a run, and the run after that compares everything), or in the process without NATS.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engram import updates
from engram.errors import EngramError
from engram.services.consolidation import gate, spelling, stance

log = logging.getLogger(__name__)

MAX_PENDING = 2_000  # candidate pairs kept for the next run at most (the most confident first; about 170 KB)
NAME = "compared"  # the checkpoint's name in the job store


def _rules_version() -> str:
    """A digest of the code that reads a pair: another version of it compares every pair again."""
    digest = hashlib.sha256()
    for module in (stance, spelling, updates, gate):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


RULES = _rules_version()


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Every memory of the namespace whose last version is at or below ``seq`` was compared with its neighbours
    under the rules ``rules``; ``pending``: the candidate pairs (ids) left for the next run."""

    seq: int = 0
    rules: str = ""
    pending: tuple[tuple[str, str], ...] = ()

    def usable(self) -> bool:
        """Whether a run may start from it: taken, and under the rules this process runs."""
        return self.seq > 0 and self.rules == RULES

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "rules": self.rules, "pending": [list(pair) for pair in self.pending]}

    @classmethod
    def from_dict(cls, data: object) -> Checkpoint:
        """The checkpoint stored as ``data``; an empty one (compare everything) when it is missing or unreadable."""
        if not isinstance(data, dict):
            return cls()
        try:
            pending = tuple((str(a), str(b)) for a, b in data.get("pending") or ())
            return cls(int(data.get("seq") or 0), str(data.get("rules") or ""), pending)
        except (TypeError, ValueError):
            return cls()


class StateStore(Protocol):
    """Where a namespace's job state is kept (engram.log.jobstore.JobStore)."""

    async def get_state(self, namespace: str, name: str) -> Any: ...

    async def put_state(self, namespace: str, name: str, value: Any) -> None: ...


class Checkpoints:
    """The namespaces' checkpoints: in ``store`` when there is one (shared by replicas), else in this process."""

    def __init__(self, store: StateStore | None = None) -> None:
        self._store = store
        self._local: dict[str, Checkpoint] = {}

    def share(self, store: StateStore) -> None:
        self._store = store

    async def get(self, namespace: str) -> Checkpoint:
        """The namespace's checkpoint; an empty one (compare everything) when there is none or the store cannot be
        read."""
        if self._store is None:
            return self._local.get(namespace, Checkpoint())
        try:
            return Checkpoint.from_dict(await self._store.get_state(namespace, NAME))
        except EngramError as e:
            log.warning(
                "the consolidation checkpoint of %s cannot be read, so everything is compared: %s", namespace, e
            )
            return Checkpoint()

    async def put(self, namespace: str, checkpoint: Checkpoint) -> None:
        """Keeps it for the next run; when the store cannot be written the next run starts from the checkpoint
        before (it compares more, never less)."""
        if self._store is None:
            self._local[namespace] = checkpoint
            return
        try:
            await self._store.put_state(namespace, NAME, checkpoint.to_dict())
        except EngramError as e:
            log.warning("the consolidation checkpoint of %s was not kept: %s", namespace, e)
