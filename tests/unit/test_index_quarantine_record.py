"""The index's quarantine as a value: what it records of an entry, how it is stored, and its bound."""

from __future__ import annotations

import pytest

from engram.log import LogEntry
from engram.services.search import quarantine as q
from engram.services.search.quarantine import Quarantine, set_aside


def _entry(seq: int, body: dict | None = None) -> LogEntry:
    return LogEntry(seq, "engram.events.team-a.memory_saved", body if body is not None else {"event": "memory_saved"})


def test_a_record_names_the_entry_its_namespace_memory_event_and_a_bounded_error() -> None:
    record = set_aside(_entry(7, {"event": "memory_saved", "memory_id": "m1"}), ValueError("x" * 2000), 1.0)
    assert (record.seq, record.namespace, record.memory_id, record.event) == (7, "team-a", "m1", "memory_saved")
    assert record.error.startswith("ValueError: x") and len(record.error) == q.MAX_ERROR_CHARS


def test_it_round_trips_through_json_and_refuses_what_it_cannot_read() -> None:
    quarantine = Quarantine().adding([set_aside(_entry(9), "late", 2.0), set_aside(_entry(3), "early", 1.0)])
    assert [item.seq for item in quarantine] == [3, 9] and quarantine.newest is not None
    assert Quarantine.from_json(quarantine.to_json()) == quarantine
    assert Quarantine.from_json(None) == Quarantine()
    with pytest.raises(ValueError, match="cannot be read"):
        Quarantine.from_json({"entries": [{"no": "seq"}]})


def test_it_keeps_at_most_its_bound_and_counts_what_it_forgot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(q, "MAX_KEPT", 3)
    quarantine = Quarantine().adding(set_aside(_entry(seq), "bad", 0.0) for seq in range(1, 6))
    assert [item.seq for item in quarantine] == [3, 4, 5] and quarantine.count == 5
    assert quarantine.without([4]).count == 4 and 4 not in quarantine.without([4])
