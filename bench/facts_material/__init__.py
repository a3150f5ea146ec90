"""The hand-written material of the discrete-facts dev set (issue 24, point 6): one module per domain.

Each domain lists what agents save (facts, with the questions asked about them), attributes that change over time
(chains of versions, each later version an explicit supersession or an unmarked newer save), questions that need
two facts, and notes nobody asks about (the haystack). ``bench/facts_build.py`` turns it into the data files.
Nothing here is copied from a public set, and no value here is a real secret: rotations are dates, not values.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random

KINDS = ("paraphrase", "identifier", "who", "latest-version", "multi-hop")
HOWS = ("save", "supersede", "unmarked")


@dataclass(frozen=True, slots=True)
class Fact:
    """One memory an agent saves, with the questions (kind, text) whose answer it is."""

    key: str
    text: str
    type: str = "fact"
    tags: tuple[str, ...] = ()
    project: str | None = None
    agent: str | None = None
    queries: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Version:
    """One value of a changing attribute: the first is saved; later ones supersede it explicitly or are saved
    without saying what they replace (unmarked)."""

    text: str
    how: str = "save"
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class Chain:
    """An attribute that changes: its versions, oldest first, and the question whose answer is the newest."""

    key: str
    query: str
    versions: tuple[Version, ...]
    type: str = "fact"
    tags: tuple[str, ...] = ()
    project: str | None = None


@dataclass(frozen=True, slots=True)
class Hop:
    """A question that needs two facts (keys in this domain, or ``domain:key``), the one found first named first."""

    query: str
    needs: tuple[str, str]


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    agents: tuple[str, ...]  # who saves here, the most frequent first
    facts: tuple[Fact, ...]
    chains: tuple[Chain, ...]
    hops: tuple[Hop, ...]
    notes: tuple[Fact, ...]  # nobody asks about these
    fill: Callable[[Random], list[Fact]] = field(default=lambda rng: [])  # templated notes, seeded


def f(key: str, text: str, type: str = "fact", *, tags: tuple[str, ...] = (), project: str | None = None,
      agent: str | None = None, **queries: str | tuple[str, ...]) -> Fact:  # fmt: skip
    """A fact; keyword arguments paraphrase=, identifier=, who= give its questions (a string or several)."""
    pairs: list[tuple[str, str]] = []
    for kind, texts in queries.items():
        kind = kind.replace("_", "-")
        if kind not in KINDS:
            raise ValueError(f"unknown query kind {kind!r} on {key}")
        pairs += [(kind, t) for t in ((texts,) if isinstance(texts, str) else texts)]
    return Fact(key, text, type, tags, project, agent, tuple(pairs))


def v(text: str, how: str = "save", agent: str | None = None) -> Version:
    if how not in HOWS:
        raise ValueError(f"unknown change {how!r}")
    return Version(text, how, agent)


def chain(key: str, query: str, *versions: Version, type: str = "fact", tags: tuple[str, ...] = (),
          project: str | None = None) -> Chain:  # fmt: skip
    if len(versions) < 2 or versions[0].how != "save" or any(x.how == "save" for x in versions[1:]):
        raise ValueError(f"chain {key}: a first save, then changes")
    return Chain(key, query, tuple(versions), type, tags, project)


def hop(query: str, first: str, second: str) -> Hop:
    return Hop(query, (first, second))


def notes(type: str, *texts: str, tags: tuple[str, ...] = (), project: str | None = None) -> tuple[Fact, ...]:
    """Notes of one type nobody asks about; keys are derived from their position."""
    return tuple(Fact(f"note-{zlib.crc32(t.encode()):08x}", t, type, tags, project) for t in texts)


def domains() -> list[Domain]:
    from bench.facts_material import data, home, infra, mobile, personal, robot, security, web

    return [web.DOMAIN, infra.DOMAIN, data.DOMAIN, personal.DOMAIN, home.DOMAIN, mobile.DOMAIN, robot.DOMAIN,
            security.DOMAIN]  # fmt: skip
