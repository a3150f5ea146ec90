"""Background memories for the quality benches: what else a user's namespace holds after weeks of several agents.

The labelled sets (facts, consolidation pairs) are measured inside one namespace that also holds hundreds or
thousands of memories of other projects and agents, as production does. The background is built from material
already in the repository and the shared data (no download, no LLM), seeded, and never includes the set it
surrounds: the consolidation bench takes the facts set's memories and LoCoMo's observations and turns; the facts
bench takes LoCoMo's. Each source is interleaved, so a small background is a mix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from random import Random
from typing import Any

from bench.datasets import load_locomo

BENCH = Path(__file__).resolve().parent
DEFAULT_SIZES = (600, 3000)  # hundreds, then thousands of memories around the labelled set
DEFAULT_LOCOMO = BENCH.parent.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
FACTS_MEMORIES = BENCH / "data" / "facts" / "memories.jsonl"
PAIR_FILES = (BENCH / "data" / "consolidation" / "contradiction_pairs.jsonl",
              BENCH / "data" / "consolidation" / "dedupe_pairs.jsonl")  # fmt: skip
SEED = 36_01
# The agents the background's memories belong to (each source's own): none is the bench's labelled agent.
LOCOMO_AGENT = "companion-app"
PAIRS_AGENTS = ("ops-agent", "data-agent", "mobile-agent", "portal-agent", "family-agent")


def for_consolidation(size: int, *, locomo: Path = DEFAULT_LOCOMO) -> list[dict[str, Any]]:
    """``size`` import lines around the consolidation pairs: the facts set's agents' memories and LoCoMo's."""
    return _mixed(size, (_facts_lines(), _locomo_lines(locomo)))


def for_facts(size: int, *, locomo: Path = DEFAULT_LOCOMO) -> list[dict[str, Any]]:
    """``size`` import lines around the facts set: LoCoMo's. Not the consolidation pairs: their domains are the
    facts set's (a mobile app's minimum iOS version, a web team's deploy day), so the set's questions, written for one
    team's namespace without naming the project, would ask about both (tried: docs/benchmarks.md, issue 36)."""
    return _mixed(size, (_locomo_lines(locomo),))


def for_facts_confusable(size: int, *, locomo: Path = DEFAULT_LOCOMO) -> list[dict[str, Any]]:
    """The harder background tried first: the consolidation pairs' memories (the same domains) and LoCoMo's."""
    return _mixed(size, (_pair_lines(), _locomo_lines(locomo)))


def _mixed(size: int, sources: Sequence[Iterable[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Up to ``size`` lines taking each source in turn (each shuffled, seeded), repeated texts dropped."""
    if size <= 0:
        return []
    pools = []
    for k, source in enumerate(sources):
        lines = list(source)
        Random(SEED + k).shuffle(lines)
        pools.append(iter(lines))
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < size and pools:
        for pool in list(pools):
            line = next(pool, None)
            if line is None:
                pools.remove(pool)
            elif line["content"] not in seen:
                seen.add(line["content"])
                out.append(line)
                if len(out) == size:
                    break
    return out


def _facts_lines() -> Iterator[dict[str, Any]]:
    for row in _jsonl(FACTS_MEMORIES):
        line = {"content": row["content"], "memory_type": row.get("memory_type") or "fact", "agent": row["agent"]}
        if row.get("tags"):
            line["tags"] = list(row["tags"])
        if row.get("project"):
            line["project"] = row["project"]
        yield line


def _pair_lines() -> Iterator[dict[str, Any]]:
    for path in PAIR_FILES:
        for row in _jsonl(path):
            agent = PAIRS_AGENTS[hash_domain(row.get("domain", "")) % len(PAIRS_AGENTS)]
            for side in (row["a"], row["b"]):
                line = {"content": side["content"], "memory_type": side.get("memory_type") or "fact", "agent": agent}
                if side.get("topics"):
                    line["topics"] = list(side["topics"])
                yield line


def _locomo_lines(path: Path) -> Iterator[dict[str, Any]]:
    """LoCoMo's observations (short statements about two people) and its turns, as a companion app saves them."""
    if not path.exists():
        return
    for conversation in load_locomo(path):
        for text in conversation.observations:
            yield {"content": text, "memory_type": "fact", "agent": LOCOMO_AGENT, "tags": ["companion"]}
        for turn in conversation.turns:
            if len(turn.text) >= 30:
                yield {"content": turn.said, "memory_type": "history", "agent": LOCOMO_AGENT, "tags": ["chat"]}


def hash_domain(domain: str) -> int:
    """A stable small number for a domain name (``hash`` of a str changes between runs)."""
    return sum(ord(c) for c in domain)


def by_agent(lines: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The lines grouped by their agent (each agent imports its own), without the ``agent`` key."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        rest = {k: v for k, v in line.items() if k != "agent"}
        grouped.setdefault(str(line["agent"]), []).append(rest)
    return grouped


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
