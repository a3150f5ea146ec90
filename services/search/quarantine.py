"""Log entries the index could not apply, set aside so that no single entry stops it (DESIGN.md principle 6).

Each is kept with its sequence, namespace, memory id, event and the error, in the index's bookkeeping next to the
applied sequence (so it survives restarts, in both index adapters). A rebuild of the index starts with none and
sets aside again whatever still cannot be applied: like the index, the quarantine is derived from the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from engram.log import LogEntry
from engram.model import format_time, parse_time
from engram.results import Quarantined

MAX_ERROR_CHARS = 500  # an error can quote what it failed on: bounded, as every stored field is
# Kept at most; beyond it the oldest are forgotten (and counted), so a flood of bad entries cannot grow the index's
# bookkeeping without bound. They stay in the log; a rebuild finds them again.
MAX_KEPT = 1000


def set_aside(entry: LogEntry, error: BaseException | str, at: float) -> Quarantined:
    """The quarantine record of an entry the index could not apply."""
    body = entry.body if isinstance(entry.body, dict) else {}
    parts = entry.subject.split(".")  # engram.events.<namespace>.<event>
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return Quarantined(
        seq=entry.seq,
        namespace=str(body.get("namespace") or (parts[2] if len(parts) == 4 else "")),
        memory_id=str(body.get("memory_id") or ""),
        event=str(body.get("event") or entry.event or ""),
        error=text[:MAX_ERROR_CHARS],
        at=at,
    )


def _to_json(item: Quarantined) -> dict[str, Any]:
    return {"seq": item.seq, "namespace": item.namespace, "memory_id": item.memory_id, "event": item.event,
            "error": item.error, "at": format_time(item.at)}  # fmt: skip


def _from_json(data: dict[str, Any]) -> Quarantined:
    return Quarantined(
        seq=int(data["seq"]),
        namespace=str(data.get("namespace", "")),
        memory_id=str(data.get("memory_id", "")),
        event=str(data.get("event", "")),
        error=str(data.get("error", "")),
        at=parse_time(data.get("at")) or 0.0,
    )


@dataclass(frozen=True, slots=True)
class Quarantine:
    """The entries set aside, oldest sequence first (a value: changes answer a new one)."""

    entries: tuple[Quarantined, ...] = ()
    forgotten: int = 0  # set aside but no longer kept (beyond MAX_KEPT)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Quarantined]:
        return iter(self.entries)

    def __contains__(self, seq: object) -> bool:
        return any(item.seq == seq for item in self.entries)

    @property
    def count(self) -> int:
        """Every entry set aside, kept or not."""
        return len(self.entries) + self.forgotten

    @property
    def newest(self) -> Quarantined | None:
        return self.entries[-1] if self.entries else None

    def seqs(self) -> set[int]:
        return {item.seq for item in self.entries}

    def adding(self, items: Iterable[Quarantined]) -> Quarantine:
        kept = {item.seq: item for item in self.entries}
        kept.update((item.seq, item) for item in items)
        ordered = sorted(kept.values(), key=lambda item: item.seq)
        over = max(0, len(ordered) - MAX_KEPT)
        return Quarantine(tuple(ordered[over:]), self.forgotten + over)

    def without(self, seqs: Iterable[int]) -> Quarantine:
        gone = set(seqs)
        return Quarantine(tuple(item for item in self.entries if item.seq not in gone), self.forgotten)

    def about(self, namespace: str, memory_id: str) -> list[Quarantined]:
        return [item for item in self.entries if item.namespace == namespace and item.memory_id == memory_id]

    def visible(self, namespace: str | None) -> list[Quarantined]:
        """The entries of ``namespace`` (None: every namespace)."""
        return [item for item in self.entries if namespace is None or item.namespace == namespace]

    def to_json(self) -> dict[str, Any]:
        return {"entries": [_to_json(item) for item in self.entries], "forgotten": self.forgotten}

    @classmethod
    def from_json(cls, data: object) -> Quarantine:
        """What to_json stored; raises ValueError when it cannot be read."""
        if data is None:
            return cls()
        if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
            raise ValueError(f"the quarantine {data!r:.80} is not a JSON object with a list of entries")
        try:
            entries = tuple(_from_json(item) for item in data.get("entries", []))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"a quarantined entry cannot be read ({e})") from e
        return cls(tuple(sorted(entries, key=lambda item: item.seq)), int(data.get("forgotten") or 0))
