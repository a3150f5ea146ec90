"""Builds the discrete-facts dev set (bench/data/facts/*.jsonl) from the hand-written material, seeded.

``python -m bench.facts_build`` rewrites the files and prints the set's counts. The material
(bench/facts_material/) says what is saved and asked; this module decides who saves what in which session and in
which order: sessions of one agent on spread-out days, each a run of unrelated saves drawn from every domain the
agent works in, the versions of a changing attribute in successive sessions, and a third of the sessions held out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from random import Random
from typing import Any

from bench.facts_material import KINDS, Chain, Domain, Fact, domains

DEFAULT_SEED = 24_06
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "facts"
FIRST_DAY = date(2026, 1, 5)
DAYS = 70  # ten weeks of saves
SAVES_PER_SESSION = 15  # on average: an agent's sessions = its saves / this, rounded up
UNTOUCHED_EVERY = 3  # every third session (in time order) is held out
MINIMUMS = {"memories": 800, "agents": 4, "sessions": 40, "queries": 300, "per_kind": 40, "supersessions": 30,
            "cross_agent_supersessions": 10, "unmarked_changes": 20, "domains": 8}  # fmt: skip


@dataclass(slots=True)
class Save:
    """One memory as it will be saved: who, what, and (after placement) where in the timeline."""

    id: str
    domain: str
    agent: str
    fact: Fact
    attribute: str = ""  # domain/chain key for the versions of a changing attribute
    version: int = 0  # 1, 2, ... within its chain
    change: str = ""  # "supersede" or "unmarked" for a chain's later versions
    previous: str = ""  # the id of the version it replaces
    session: str = ""
    order: int = 0


@dataclass(slots=True)
class Session:
    id: str
    agent: str
    day: date
    index: int = 0  # position in time order
    saves: list[Save] = field(default_factory=list)

    @property
    def split(self) -> str:
        return "untouched" if self.index % UNTOUCHED_EVERY == UNTOUCHED_EVERY - 1 else "tune"


def build(seed: int = DEFAULT_SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Memories, queries and sessions as the records written to the data files."""
    rng = Random(seed)
    saves, chains, keys = _saves(domains(), seed)
    sessions = _sessions(saves, rng)
    _place(saves, chains, sessions, rng)
    memories = [_memory_record(s) for session in sessions for s in session.saves]
    by_id = {s.id: s for s in saves}
    session_of = {s.id: s.session for s in saves}
    split_of = {session.id: session.split for session in sessions}
    queries = _queries(domains(), keys, chains, by_id)
    for q in queries:
        q["session"] = session_of[q["answers"][0]]
        q["split"] = split_of[q["session"]]
    queries.sort(key=lambda q: (q["kind"], q["id"]))
    session_records = [
        {"id": s.id, "agent": s.agent, "date": s.day.isoformat(), "split": s.split, "memories": len(s.saves)}
        for s in sessions
    ]
    return memories, queries, session_records


def _saves(all_domains: list[Domain], seed: int) -> tuple[list[Save], dict[str, list[Save]], dict[str, Save]]:
    """Every memory of every domain with its agent; chains keyed ``domain/key``; facts keyed ``domain:key``."""
    saves: list[Save] = []
    chains: dict[str, list[Save]] = {}
    keys: dict[str, Save] = {}
    for domain in all_domains:
        rng = Random(seed ^ zlib.crc32(domain.name.encode()))
        counter = itertools.count(1)

        def new(fact: Fact, agent: str, domain: Domain = domain, counter: Iterator[int] = counter) -> Save:
            save = Save(f"{domain.name}-{next(counter):03d}", domain.name, agent, fact)
            saves.append(save)
            return save

        for fact in domain.facts:
            key = f"{domain.name}:{fact.key}"
            if key in keys:
                raise ValueError(f"duplicate fact key {key}")
            keys[key] = new(fact, fact.agent or _agent(domain, rng))
        for ch in domain.chains:
            chains[f"{domain.name}/{ch.key}"] = _chain_saves(domain, ch, new)
        for fact in (*domain.notes, *domain.fill(rng)):
            new(fact, fact.agent or _agent(domain, rng))
    return saves, chains, keys


def _agent(domain: Domain, rng: Random) -> str:
    """The domain's main agent half of the time, else any of its agents."""
    return domain.agents[0] if rng.random() < 0.5 else rng.choice(domain.agents)


def _chain_saves(domain: Domain, ch: Chain, new: Any) -> list[Save]:
    versions: list[Save] = []
    for n, version in enumerate(ch.versions, start=1):
        fact = Fact(f"{ch.key}#{n}", version.text, ch.type, ch.tags, ch.project)
        save = new(fact, version.agent or domain.agents[0])
        save.attribute, save.version = f"{domain.name}/{ch.key}", n
        if n > 1:
            save.change, save.previous = version.how, versions[-1].id
        versions.append(save)
    return versions


def _sessions(saves: list[Save], rng: Random) -> list[Session]:
    """Each agent's sessions on distinct days spread over the ten weeks, numbered in time order."""
    per_agent = Counter(s.agent for s in saves)
    sessions = []
    for agent in sorted(per_agent):
        count = -(-per_agent[agent] // SAVES_PER_SESSION)
        days = sorted(rng.sample(range(DAYS), count))
        sessions += [Session("", agent, FIRST_DAY + timedelta(days=d)) for d in days]
    sessions.sort(key=lambda s: (s.day, s.agent))
    for index, session in enumerate(sessions):
        session.index, session.id = index, f"s{index + 1:02d}"
    return sessions


def _place(saves: list[Save], chains: dict[str, list[Save]], sessions: list[Session], rng: Random) -> None:
    """Chain versions go to successive sessions of their agents (version n of m in the n-th stretch of the
    timeline, always after the version before); everything else to a random session of its agent. Then each
    session's saves are shuffled: consecutive saves are unrelated."""
    by_agent: dict[str, list[Session]] = defaultdict(list)
    for session in sessions:
        by_agent[session.agent].append(session)
    total = len(sessions)
    placed: set[str] = set()
    for versions in chains.values():
        after = -1
        for save in versions:
            stretch = (save.version - 1) / len(versions)
            start = max(after + 1, int(stretch * total))
            candidates = [s for s in by_agent[save.agent] if s.index >= start] or [
                s for s in by_agent[save.agent] if s.index > after
            ]
            if not candidates:
                raise ValueError(f"no session of {save.agent} after s{after + 1} for {save.attribute}")
            window = [s for s in candidates if s.index < start + total // len(versions)] or candidates[:1]
            session = rng.choice(window)
            session.saves.append(save)
            save.session, after = session.id, session.index
            placed.add(save.id)
    for save in saves:
        if save.id not in placed:
            session = rng.choice(by_agent[save.agent])
            session.saves.append(save)
            save.session = session.id
    for session in sessions:
        rng.shuffle(session.saves)
        for order, save in enumerate(session.saves, start=1):
            save.order = order


def _memory_record(save: Save) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": save.id, "session": save.session, "order": save.order, "agent": save.agent, "domain": save.domain,
        "content": save.fact.text, "memory_type": save.fact.type,
    }  # fmt: skip
    if save.fact.tags:
        record["tags"] = list(save.fact.tags)
    if save.fact.project:
        record["project"] = save.fact.project
    if save.attribute:
        record["attribute"] = save.attribute
    if save.change == "supersede":
        record["supersedes"] = save.previous
    elif save.change == "unmarked":
        record["newer_than"] = save.previous
    return record


def _queries(all_domains: list[Domain], keys: dict[str, Save], chains: dict[str, list[Save]],
             by_id: dict[str, Save]) -> list[dict[str, Any]]:  # fmt: skip
    queries: list[dict[str, Any]] = []
    numbers: Counter[str] = Counter()

    def add(kind: str, text: str, answers: list[str], domain: str, **extra: Any) -> None:
        numbers[kind] += 1
        query_id = f"{kind.split('-')[0][:5]}-{numbers[kind]:03d}"
        queries.append({"id": query_id, "kind": kind, "text": text, "answers": answers, "domain": domain} | extra)

    for domain in all_domains:
        for fact in domain.facts:
            for kind, text in fact.queries:
                add(kind, text, [keys[f"{domain.name}:{fact.key}"].id], domain.name)
        for ch in domain.chains:
            versions = chains[f"{domain.name}/{ch.key}"]
            add("latest-version", ch.query, [versions[-1].id], domain.name,
                outdated=[s.id for s in versions[:-1]])  # fmt: skip
        for h in domain.hops:
            needed = [keys[k if ":" in k else f"{domain.name}:{k}"].id for k in h.needs]
            add("multi-hop", h.query, needed, domain.name)
    for q in queries:
        for memory_id in q["answers"] + q.get("outdated", []):
            if memory_id not in by_id:
                raise ValueError(f"query {q['id']} names unknown memory {memory_id}")
    return queries


def summary(memories: list[dict[str, Any]], queries: list[dict[str, Any]],
            sessions: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The set's counts, as the brief states its minimums."""
    owner = {m["id"]: m["agent"] for m in memories}
    supersessions = [m for m in memories if "supersedes" in m]
    per_kind = Counter(q["kind"] for q in queries)
    per_split: dict[str, Counter[str]] = defaultdict(Counter)
    for q in queries:
        per_split[q["split"]][q["kind"]] += 1
    return {
        "memories": len(memories),
        "agents": len({m["agent"] for m in memories}),
        "agents_memories": dict(Counter(m["agent"] for m in memories).most_common()),
        "domains": len({m["domain"] for m in memories}),
        "sessions": len(sessions),
        "sessions_untouched": sum(1 for s in sessions if s["split"] == "untouched"),
        "session_sizes": [min(s["memories"] for s in sessions), max(s["memories"] for s in sessions)],
        "queries": len(queries),
        "per_kind": {kind: per_kind[kind] for kind in KINDS},
        "per_split": {split: {kind: c[kind] for kind in KINDS} for split, c in sorted(per_split.items())},
        "supersessions": len(supersessions),
        "cross_agent_supersessions": sum(1 for m in supersessions if owner[m["supersedes"]] != m["agent"]),
        "unmarked_changes": sum(1 for m in memories if "newer_than" in m),
        "memory_types": dict(Counter(m["memory_type"] for m in memories).most_common()),
    }


def check(counts: dict[str, Any]) -> list[str]:
    """What falls short of the minimums."""
    short = [f"{name}: {counts[name]} < {low}" for name, low in MINIMUMS.items() if name != "per_kind"
             and counts[name] < low]  # fmt: skip
    short += [f"{kind}: {n} < {MINIMUMS['per_kind']}" for kind, n in counts["per_kind"].items()
              if n < MINIMUMS["per_kind"]]  # fmt: skip
    return short


def write(out: Path, memories: list[dict[str, Any]], queries: list[dict[str, Any]],
          sessions: list[dict[str, Any]]) -> None:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    for name, records in (("memories", memories), ("queries", queries), ("sessions", sessions)):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.facts_build", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--check", action="store_true", help="only build and compare with the files on disk")
    args = parser.parse_args(argv)
    memories, queries, sessions = build(args.seed)
    counts = summary(memories, queries, sessions)
    print(json.dumps(counts, indent=1))
    short = check(counts)
    for line in short:
        print(f"SHORT {line}")
    if args.check:
        same = all(
            (args.out / f"{name}.jsonl").read_text(encoding="utf-8")
            == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            for name, records in (("memories", memories), ("queries", queries), ("sessions", sessions))
        )
        print("files match the material" if same else "files DIFFER from the material: rebuild them")
        return 0 if same and not short else 1
    write(args.out, memories, queries, sessions)
    return 1 if short else 0


if __name__ == "__main__":
    raise SystemExit(main())
