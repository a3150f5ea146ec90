"""The agent registry: who wrote to (and read from) each namespace, derived from the log by the indexer.

Every log entry that names an agent (its body's "agent", with "device", "source", "team" and "time") is a
write by that agent. The read batches (memory_accessed) name their readers ("readers"): a read is a sighting
too (last seen, devices, clients) but not a write. A reader whose API key is bound to it ("from_key") is known
for sure; any other reader named itself (a shared key, dev mode), so its read refreshes an agent already in the
registry but adds none: reading leaves no memory behind, and a made-up name must not enter the registry (and
push real agents out of it) that way. The registry is a value: applying entries makes a new one
that shares the records they did not touch, so reads use a snapshot while the indexer applies the next batch,
and a batch that fails leaves it as it was. The indexer stores it with its applied sequence, so a restart
resumes it exactly and a rebuild from the log makes the same one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engram.log.events import MEMORY_ACCESSED
from engram.model import parse_time

MAX_VALUES = 50  # devices, clients and teams kept per agent: the most recently seen ones
MAX_AGENTS = 1000  # per namespace; beyond it the least recently seen agent is forgotten
MAX_NAME_CHARS = 256  # a longer name is not recorded (ingest and the gateway allow far less)


@dataclass(frozen=True, slots=True)
class Sighting:
    """One entry's news about an agent: it wrote (or read) in ``namespace`` at ``time``."""

    namespace: str
    agent: str
    device: str = ""
    source: str = ""
    team: str = ""
    time: float | None = None
    write: bool = True
    may_add: bool = True  # False: refreshes a known agent only (a read by a name the caller gave itself)


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """What the log says about one agent of a namespace. Lists run from least to most recently seen."""

    first_seen: float | None = None
    last_seen: float | None = None
    writes: int = 0
    devices: tuple[str, ...] = ()
    clients: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()

    def seen(self, sighting: Sighting) -> AgentRecord:
        at = sighting.time
        return AgentRecord(
            first_seen=_earliest(self.first_seen, at),
            last_seen=_latest(self.last_seen, at),
            writes=self.writes + int(sighting.write),
            devices=_most_recent(self.devices, sighting.device),
            clients=_most_recent(self.clients, sighting.source),
            teams=_most_recent(self.teams, sighting.team) if sighting.write else self.teams,
        )


class AgentRegistry:
    """Namespace -> agent id -> AgentRecord; never changed in place (see the module's docstring)."""

    def __init__(self, namespaces: Mapping[str, Mapping[str, AgentRecord]] | None = None) -> None:
        self._namespaces: dict[str, Mapping[str, AgentRecord]] = dict(namespaces or {})

    def agents(self, namespace: str) -> Mapping[str, AgentRecord]:
        return self._namespaces.get(namespace, {})

    def with_entries(self, bodies: Iterable[Mapping[str, Any]]) -> AgentRegistry:
        """The registry after these log entries (in log order); the namespaces they touch are copied."""
        namespaces = dict(self._namespaces)
        copied: dict[str, dict[str, AgentRecord]] = {}
        for body in bodies:
            for sighting in sightings(body):
                agents = copied.get(sighting.namespace)
                if agents is None:
                    agents = copied[sighting.namespace] = dict(namespaces.get(sighting.namespace, {}))
                    namespaces[sighting.namespace] = agents
                known = agents.get(sighting.agent)
                if known is None and not sighting.may_add:
                    continue
                agents[sighting.agent] = (known or AgentRecord()).seen(sighting)
                if len(agents) > MAX_AGENTS:
                    del agents[min(agents, key=lambda agent: (time_or_never(agents[agent].last_seen), agent))]
        return AgentRegistry(namespaces)

    def to_json(self) -> list[dict[str, Any]]:
        """One JSON object per agent, in a stable order (what the index's bookkeeping point stores)."""
        return [
            {"namespace": namespace, "agent": agent, **_record_json(record)}
            for namespace in sorted(self._namespaces)
            for agent, record in sorted(self._namespaces[namespace].items())
        ]

    @classmethod
    def from_json(cls, items: object) -> AgentRegistry:
        """Inverse of to_json; raises ValueError for anything else (the index is then rebuilt from the log)."""
        if not isinstance(items, list):
            raise ValueError("the agent registry is not a list")
        namespaces: dict[str, dict[str, AgentRecord]] = {}
        for item in items:
            try:
                namespace, agent = str(item["namespace"]), str(item["agent"])
                record = AgentRecord(
                    first_seen=_optional_float(item["first_seen"]),
                    last_seen=_optional_float(item["last_seen"]),
                    writes=int(item["writes"]),
                    devices=tuple(str(v) for v in item["devices"]),
                    clients=tuple(str(v) for v in item["clients"]),
                    teams=tuple(str(v) for v in item["teams"]),
                )
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"an agent registry entry cannot be read ({e!r})") from e
            namespaces.setdefault(namespace, {})[agent] = record
        return cls(namespaces)


def sightings(body: Mapping[str, Any]) -> list[Sighting]:
    """The agents one log entry names: its writer, or for a read batch its readers."""
    namespace = _name(body.get("namespace"))
    if not namespace:
        return []
    if body.get("event") == MEMORY_ACCESSED:
        readers = body.get("readers")
        return [
            sighting
            for reader in (readers if isinstance(readers, list) else [])
            if isinstance(reader, Mapping) and (sighting := _sighting(namespace, reader, write=False)) is not None
        ]
    found = _sighting(namespace, body, write=True)
    return [found] if found is not None else []


def _sighting(namespace: str, fields: Mapping[str, Any], *, write: bool) -> Sighting | None:
    agent = _name(fields.get("agent"))
    if not agent:
        return None
    try:
        at = parse_time(fields.get("time")) if isinstance(fields.get("time"), str) else None
    except ValueError:
        at = None
    return Sighting(
        namespace=namespace,
        agent=agent,
        device=_name(fields.get("device")),
        source=_name(fields.get("source")),
        team=_name(fields.get("team")),
        time=at,
        write=write,
        may_add=write or fields.get("from_key") is True,
    )


def _name(value: object) -> str:
    return value if isinstance(value, str) and len(value) <= MAX_NAME_CHARS else ""


def _most_recent(values: tuple[str, ...], value: str) -> tuple[str, ...]:
    """``values`` with ``value`` moved (or added) to the end, keeping the MAX_VALUES most recent."""
    if not value or (values and values[-1] == value):
        return values
    return (*(v for v in values if v != value), value)[-MAX_VALUES:]


def _earliest(current: float | None, at: float | None) -> float | None:
    return at if current is None else current if at is None else min(current, at)


def _latest(current: float | None, at: float | None) -> float | None:
    return at if current is None else current if at is None else max(current, at)


def time_or_never(at: float | None) -> float:
    """A time for sorting, with "never" (None) before every time."""
    return at if at is not None else float("-inf")


def _optional_float(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a time")
    return float(value)


def _record_json(record: AgentRecord) -> dict[str, Any]:
    data = dataclasses.asdict(record)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}
