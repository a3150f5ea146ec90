"""The index's filters, written once: a small condition tree that each Qdrant adapter translates to its library.

Both adapters (Qdrant Edge and the Qdrant server) ask the same questions of the same payloads; the tree says
what they ask, and each adapter has one tiny translator (qdrant_edge/payload.py's to_shard, qdrant_server.py's
to_qdrant) that says it in its library's words.
The semantics are Qdrant's: a match on a list field matches when any element does, a field that is absent
matches no `Match`, `MatchAny` or `Range` (so it always satisfies a `must_not`).
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.index import (
    CONTENT_KEY,
    CREATED_TS,
    EXPIRES_TS,
    HANDOFF_STATUS,
    HANDOFF_TO,
    RELATION_KIND,
    VALID_FROM,
    VALID_TO,
    WORLD_FROM,
    WORLD_TO,
)
from engram.model import PACK_FILE, PACK_KEY, SearchFilter

DEFAULT_STATUSES = ("active",)  # what a filter naming no status matches


@dataclass(frozen=True, slots=True)
class Match:
    """The keyword field ``key`` is ``value`` (or, for a list, holds it)."""

    key: str
    value: str


@dataclass(frozen=True, slots=True)
class MatchAny:
    """The keyword field ``key`` is (or, for a list, holds) any of ``values``."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    """The float field ``key`` lies within the bounds given (None: unbounded on that side)."""

    key: str
    gte: float | None = None
    gt: float | None = None
    lte: float | None = None
    lt: float | None = None


Condition = Match | MatchAny | Range


@dataclass(frozen=True, slots=True)
class Filter:
    """Every condition of ``must`` holds and none of ``must_not`` does."""

    must: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()

    def also(self, *conditions: Condition) -> Filter:
        """This filter with more conditions that must hold."""
        return Filter((*self.must, *conditions), self.must_not)


def conditions(namespace: str, flt: SearchFilter | None) -> Filter:
    """The namespace boundary plus the caller's filters. Tags are all-of; types, topics, statuses, handoff statuses,
    relation kinds and content keys any-of; statuses default to active. Pack files are left out unless the filter
    names their pack (then only that pack's memories) or their type. Created: [after, before).

    With ``as_of``: only versions that were the current one then ([VALID_FROM, VALID_TO)), and valid in the world
    then ([WORLD_FROM, WORLD_TO))."""
    flt = flt or SearchFilter()
    must: list[Condition] = [Match("namespace", namespace), MatchAny("status", tuple(flt.statuses or DEFAULT_STATUSES))]
    must.extend(Match("tags", tag) for tag in flt.tags)
    for key, value in (
        ("owner_agent", flt.owner_agent), ("conversation_id", flt.conversation_id), ("project", flt.project),
        ("team", flt.team), (HANDOFF_TO, flt.handoff_target),
    ):  # fmt: skip
        if value:
            must.append(Match(key, value))
    for key, values in (
        ("memory_type", flt.memory_types), ("topics", flt.topics), (HANDOFF_STATUS, flt.handoff_statuses),
        (RELATION_KIND, flt.relation_kinds), (CONTENT_KEY, flt.content_keys),
    ):  # fmt: skip
        if values:
            must.append(MatchAny(key, tuple(values)))
    must_not: list[Condition] = []
    if flt.pack:
        must.append(Match(PACK_KEY, flt.pack))
    elif PACK_FILE not in flt.memory_types:
        must_not.append(Match("memory_type", PACK_FILE))
    if flt.created_after is not None or flt.created_before is not None:
        must.append(Range(CREATED_TS, gte=flt.created_after, lt=flt.created_before))
    if flt.as_of is not None:
        at = flt.as_of
        must += [Range(VALID_FROM, lte=at), Range(VALID_TO, gt=at), Range(WORLD_FROM, lte=at), Range(WORLD_TO, gt=at)]
    return Filter(tuple(must), tuple(must_not))


def memory_points(namespace: str, memory_id: str) -> Filter:
    """Every point of one memory in ``namespace``: its current version, or on the versions index each earlier one."""
    return Filter((Match("namespace", namespace), Match("id", memory_id)))


def held_elsewhere(namespace: str, memory_id: str) -> Filter:
    """The points of a memory with this id in any namespace but ``namespace``."""
    return Filter((Match("id", memory_id),), (Match("namespace", namespace),))


ACTIVE = Filter((Match("status", "active"),))  # active memories of every namespace


def due(at: float) -> Filter:
    """Active memories of every namespace due to expire at or before ``at``."""
    return ACTIVE.also(Range(EXPIRES_TS, lte=at))
