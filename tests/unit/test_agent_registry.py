"""The agent registry as a value: what log entries it counts, its bounds, and its stored form."""

from __future__ import annotations

from typing import Any

import pytest

from engram.log.events import MEMORY_ACCESSED, MEMORY_SAVED
from engram.model import format_time
from engram.services.search import agents
from engram.services.search.agents import MAX_VALUES, AgentRecord, AgentRegistry

T0 = 1_763_900_000.0


def write(agent: Any, at: float, *, namespace: Any = "ns", device: Any = "laptop", source: Any = "claude-code",
          team: Any = "") -> dict[str, Any]:  # fmt: skip
    return {"event": MEMORY_SAVED, "namespace": namespace, "agent": agent, "device": device, "source": source,
            "team": team, "time": format_time(at)}  # fmt: skip


def test_writes_and_reads_are_sightings_but_only_writes_count_as_writes_and_teams() -> None:
    read = {"event": MEMORY_ACCESSED, "namespace": "ns", "counts": {},
            "readers": [{"agent": "a", "device": "phone", "source": "app", "time": format_time(T0 + 9)}]}  # fmt: skip

    registry = AgentRegistry().with_entries([write("a", T0 + 5, team="auth"), write("a", T0 + 1), read])

    assert registry.agents("ns") == {
        "a": AgentRecord(T0 + 1, T0 + 9, 2, ("laptop", "phone"), ("claude-code", "app"), ("auth",))
    }
    assert registry.agents("other") == {}


def read_by(agent: str, at: float, **fields: Any) -> dict[str, Any]:
    reader = {"agent": agent, "device": "phone", "source": "app", "time": format_time(at), **fields}
    return {"event": MEMORY_ACCESSED, "namespace": "ns", "counts": {}, "readers": [reader]}


def test_a_read_by_a_name_the_caller_gave_itself_adds_no_agent_but_refreshes_a_known_one() -> None:
    registry = AgentRegistry().with_entries([write("a", T0), read_by("mallory", T0 + 1), read_by("a", T0 + 2)])
    assert set(registry.agents("ns")) == {"a"}
    assert registry.agents("ns")["a"].last_seen == T0 + 2
    # "from_key" must be exactly true: anything else is a self-given name.
    assert AgentRegistry().with_entries([read_by("mallory", T0, from_key="yes")]).agents("ns") == {}


def test_a_read_by_the_agent_its_key_is_bound_to_adds_it() -> None:
    registry = AgentRegistry().with_entries([read_by("reviewer", T0, from_key=True)])
    assert registry.agents("ns") == {"reviewer": AgentRecord(T0, T0, 0, ("phone",), ("app",), ())}


def test_applying_entries_makes_a_new_registry_and_leaves_the_old_one_as_it_was() -> None:
    before = AgentRegistry().with_entries([write("a", T0)])

    after = before.with_entries([write("a", T0 + 1), write("b", T0 + 2)])

    assert before.agents("ns")["a"].writes == 1 and "b" not in before.agents("ns")
    assert after.agents("ns")["a"].writes == 2


def test_devices_clients_and_teams_keep_the_most_recent_fifty() -> None:
    entries = [write("a", T0 + n, device=f"d{n}", source=f"s{n}", team=f"t{n}") for n in range(MAX_VALUES + 10)]
    # d5 (dropped) is seen again: it becomes the most recent, and the oldest one kept goes.
    entries.append(write("a", T0 + 100, device="d5", source=f"s{MAX_VALUES + 9}"))

    record = AgentRegistry().with_entries(entries).agents("ns")["a"]

    assert len(record.devices) == len(record.clients) == len(record.teams) == MAX_VALUES
    assert record.devices[-1] == "d5" and "d10" not in record.devices and record.devices[0] == "d11"
    assert record.clients[0] == "s10" and record.teams[-1] == f"t{MAX_VALUES + 9}"


def test_beyond_the_agent_bound_the_least_recently_seen_agent_is_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agents, "MAX_AGENTS", 3)

    registry = AgentRegistry().with_entries([write("a", T0 + 5), write("b", T0 + 1), write("c", T0 + 3),
                                             write("d", T0 + 4)])  # fmt: skip

    assert sorted(registry.agents("ns")) == ["a", "c", "d"]


@pytest.mark.parametrize(
    "body",
    [
        write("", T0), write(7, T0), write("a", T0, namespace=""), write("a", T0, namespace=["ns"]),
        write("x" * 300, T0), {"event": "consolidation_complete", "namespace": "ns"},
        {"event": MEMORY_ACCESSED, "namespace": "ns", "readers": "everyone"},
        {"event": MEMORY_ACCESSED, "namespace": "ns", "readers": [None, {"agent": None}]},
    ],
    ids=["empty-agent", "agent-not-text", "no-namespace", "namespace-not-text", "agent-too-long", "no-agent",
         "readers-not-a-list", "readers-unnamed"],
)  # fmt: skip
def test_entries_that_name_no_agent_change_nothing(body: dict[str, Any]) -> None:
    assert AgentRegistry().with_entries([body]).to_json() == []


def test_odd_fields_of_a_named_agent_are_left_out_not_fatal() -> None:
    body = write("a", T0, device=["laptop"], source="s" * 300) | {"time": "yesterday"}

    assert AgentRegistry().with_entries([body]).agents("ns") == {"a": AgentRecord(None, None, 1)}


def test_the_stored_form_round_trips_and_anything_else_is_refused() -> None:
    registry = AgentRegistry().with_entries([write("a", T0, team="auth"), write("b", T0 + 1, namespace="other")])

    stored = registry.to_json()

    assert AgentRegistry.from_json(stored).to_json() == stored
    assert stored[0] == {"namespace": "ns", "agent": "a", "first_seen": T0, "last_seen": T0, "writes": 1,
                         "devices": ["laptop"], "clients": ["claude-code"], "teams": ["auth"]}  # fmt: skip
    for junk in (None, {"a": 1}, [{"namespace": "ns"}], [{**stored[0], "first_seen": "today"}]):
        with pytest.raises(ValueError):
            AgentRegistry.from_json(junk)
