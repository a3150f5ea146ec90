"""Discrete facts (issue 24 dev set): agents save unrelated facts one after another, then one question is asked.

The set (bench/data/facts/, built by bench/facts_build.py) is saved session by session into a fresh node with the
server's defaults, each agent session through one MCP session of its own (the agent named by X-Engram-Agent-ID),
in order; a change marked as a supersession goes through `supersede_memory` (another agent's fact too; a node that
refuses it gets the new fact saved plainly and the refusal counted). Every query then runs through MCP
`search_memory` with limit 5 and nothing else, and again dense-only as a reference. Figures per kind and split
(`tune`, `untouched`): top-1, recall@5 and MRR; for latest-version also how often an outdated version ranked above
the current one. Also what an agent pays in context: the bytes of tools/list and of the default (compact) answers
to save_memory and to search_memory with limit 5 (the text block an agent reads).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from bench import background
from bench.client import ToolCallError, connect
from bench.metrics import LatencySummary, mean
from bench.node import Node
from bench.progress import Phases, Progress

DEFAULT_FACTS = Path(__file__).resolve().parent / "data" / "facts"
KINDS = ("paraphrase", "identifier", "who", "latest-version", "multi-hop")
SPLITS = ("tune", "untouched")
SEARCH_LIMIT = 5
QUICK_SESSIONS = 12  # --quick: this many sessions spread over the timeline, and the queries answered inside them
# The retrieval modes: the set's figures are the server defaults; dense-only is the reference (pure retrievers
# never rerank, as in the quality section).
MODES: dict[str, dict[str, Any]] = {"default": {}, "dense": {"sources": ["dense"], "rerank": False}}


@dataclass(frozen=True, slots=True)
class FactMemory:
    """One memory of the set as an agent saves it."""

    id: str
    session: str
    order: int
    agent: str
    content: str
    memory_type: str
    tags: tuple[str, ...] = ()
    project: str | None = None
    supersedes: str | None = None  # explicit: replaced with supersede_memory
    newer_than: str | None = None  # unmarked: a newer fact about the same attribute, saved plainly

    def save_arguments(self) -> dict[str, Any]:
        """The save_memory arguments: what an agent would pass (no ids, no bench metadata)."""
        arguments: dict[str, Any] = {"content": self.content, "memory_type": self.memory_type}
        if self.tags:
            arguments["tags"] = list(self.tags)
        if self.project:
            arguments["project"] = self.project
        return arguments


@dataclass(frozen=True, slots=True)
class FactQuery:
    id: str
    kind: str
    text: str
    answers: tuple[str, ...]  # multi-hop: both facts, the first needed first
    split: str
    outdated: tuple[str, ...] = ()  # latest-version: older versions that must rank below the answer
    next_saved: tuple[str, ...] = ()  # the memories saved right after an answer in its session (must rank below it)


@dataclass(frozen=True, slots=True)
class FactSession:
    id: str
    agent: str
    date: str
    split: str


@dataclass(slots=True)
class FactSet:
    sessions: list[FactSession]
    memories: list[FactMemory]  # in save order: by session (time order), then order within the session
    queries: list[FactQuery]
    note: str = ""

    def by_session(self) -> Iterator[tuple[FactSession, list[FactMemory]]]:
        grouped: dict[str, list[FactMemory]] = {}
        for memory in self.memories:
            grouped.setdefault(memory.session, []).append(memory)
        for session in self.sessions:
            yield session, grouped.get(session.id, [])

    def counts(self) -> dict[str, Any]:
        owner = {m.id: m.agent for m in self.memories}
        supersessions = [m for m in self.memories if m.supersedes in owner]  # a subset may lack the old fact
        return {
            "memories": len(self.memories),
            "agents": len({m.agent for m in self.memories}),
            "sessions": len(self.sessions),
            "sessions_untouched": sum(1 for s in self.sessions if s.split == "untouched"),
            "queries": len(self.queries),
            "queries_by_split_kind": {
                split: {kind: sum(1 for q in self.queries if q.split == split and q.kind == kind) for kind in KINDS}
                for split in SPLITS
            },
            "supersessions": len(supersessions),
            "cross_agent_supersessions": sum(1 for m in supersessions if owner.get(m.supersedes or "") != m.agent),
            "unmarked_changes": sum(1 for m in self.memories if m.newer_than in owner),
        }


def load_facts(path: Path = DEFAULT_FACTS, *, sessions: int | None = None) -> FactSet:
    """Reads sessions.jsonl, memories.jsonl and queries.jsonl; ``sessions`` keeps that many sessions spread evenly
    over the timeline, their memories, and the queries whose answers all lie in them (outdated versions outside are
    dropped; a supersession whose old fact is outside becomes a plain save)."""
    all_sessions = [FactSession(s["id"], s["agent"], s["date"], s["split"]) for s in _jsonl(path / "sessions.jsonl")]
    kept = all_sessions
    if sessions and sessions < len(all_sessions):
        kept = [all_sessions[i * len(all_sessions) // sessions] for i in range(sessions)]
    position = {s.id: i for i, s in enumerate(kept)}
    memories = [
        FactMemory(
            id=m["id"], session=m["session"], order=int(m["order"]), agent=m["agent"], content=m["content"],
            memory_type=m.get("memory_type", "general"), tags=tuple(m.get("tags") or ()), project=m.get("project"),
            supersedes=m.get("supersedes"), newer_than=m.get("newer_than"),
        )
        for m in _jsonl(path / "memories.jsonl")
        if m["session"] in position
    ]  # fmt: skip
    memories.sort(key=lambda m: (position[m.session], m.order))
    present = {m.id for m in memories}
    after = {m.id: n.id for m, n in itertools.pairwise(memories) if m.session == n.session}
    queries = [
        FactQuery(
            q["id"],
            q["kind"],
            q["text"],
            tuple(q["answers"]),
            q["split"],
            _kept(q.get("outdated"), present),
            tuple(after[a] for a in q["answers"] if a in after and after[a] not in q["answers"]),
        )
        for q in _jsonl(path / "queries.jsonl")
        if all(a in present for a in q["answers"])
    ]
    note_text = f"{len(kept)} of {len(all_sessions)} sessions: not comparable to the full set" if sessions else ""
    return FactSet(kept, memories, queries, note_text)


def _kept(ids: Sequence[str] | None, present: set[str]) -> tuple[str, ...]:
    return tuple(x for x in ids or () if x in present)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


# --- scoring ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one query did: the rank of the first right hit (0: not in the top 5), the share of answers found, and
    for latest-version whether an outdated version ranked above the current one."""

    rank: int
    recall: float
    all_found: bool
    outdated_above: bool = False
    outdated_first: bool = False
    next_saved_above: bool = False  # the memory saved right after the answer ranked above it (or came without it)


def score(query: FactQuery, ranked: Sequence[frozenset[str]]) -> Outcome:
    """``ranked``: for each hit, best first, the set ids it stands for (usually one).

    >>> q = FactQuery("q", "latest-version", "?", ("b",), "tune", outdated=("a",))
    >>> score(q, [frozenset({"a"}), frozenset({"x"}), frozenset({"b"})])
    Outcome(rank=3, recall=1.0, all_found=True, outdated_above=True, outdated_first=True, next_saved_above=False)
    >>> h = FactQuery("h", "multi-hop", "?", ("a", "b"), "tune", next_saved=("x",))
    >>> score(h, [frozenset({"x"}), frozenset({"b"})])
    Outcome(rank=2, recall=0.5, all_found=False, outdated_above=False, outdated_first=False, next_saved_above=True)
    """
    top = list(ranked[:SEARCH_LIMIT])
    wanted = set(query.answers)
    rank = next((i for i, ids in enumerate(top, start=1) if ids & wanted), 0)
    found = set().union(*top) & wanted if top else set()
    outdated = set(query.outdated)
    first_outdated = next((i for i, ids in enumerate(top, start=1) if ids & outdated), 0)
    first_next = next((i for i, ids in enumerate(top, start=1) if ids & set(query.next_saved)), 0)
    return Outcome(
        rank=rank,
        recall=len(found) / len(wanted),
        all_found=found == wanted,
        outdated_above=bool(first_outdated) and (rank == 0 or first_outdated < rank),
        outdated_first=first_outdated == 1,
        next_saved_above=bool(first_next) and (rank == 0 or first_next < rank),
    )


def summarize(outcomes: Sequence[Outcome], kind: str | None = None) -> dict[str, Any]:
    """top-1, recall@5 and MRR (reciprocal rank of the first right hit in the top 5, else 0) over ``outcomes``."""
    figures: dict[str, Any] = {
        "queries": len(outcomes),
        "top1": mean(1.0 if o.rank == 1 else 0.0 for o in outcomes),
        "recall@5": mean(o.recall for o in outcomes),
        "mrr": mean(1.0 / o.rank if o.rank else 0.0 for o in outcomes),
        "next_saved_above": sum(1 for o in outcomes if o.next_saved_above),
    }
    if kind == "multi-hop":
        figures["both@5"] = mean(1.0 if o.all_found else 0.0 for o in outcomes)
    if kind == "latest-version":
        figures["outdated_above"] = sum(1 for o in outcomes if o.outdated_above)
        figures["outdated_first"] = sum(1 for o in outcomes if o.outdated_first)
    return figures


def tables(queries: Sequence[FactQuery], outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Figures per split (tune, untouched, all), each overall and per kind."""
    result: dict[str, Any] = {}
    for split in (*SPLITS, "all"):
        chosen = [(q, o) for q, o in zip(queries, outcomes, strict=True) if split in ("all", q.split)]
        per_kind = {
            kind: summarize([o for q, o in chosen if q.kind == kind], kind)
            for kind in KINDS
            if any(q.kind == kind for q, _ in chosen)
        }
        result[split] = {"overall": summarize([o for _, o in chosen]), "kinds": per_kind}
    return result


# --- the section --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactsOptions:
    home_root: Path
    settings: dict[str, str]
    background: Sequence[dict[str, Any]] = ()  # import lines of other projects' agents, saved before the set
    name: str = "facts"  # the node's home under home_root


@dataclass(slots=True)
class _Saved:
    """What saving the set did: set id -> server id, and the counts."""

    server_id: dict[str, str] = field(default_factory=dict)
    last_seq: int = 0
    saves: int = 0
    superseded: int = 0
    refused: int = 0
    refused_cross_agent: int = 0
    refusal_examples: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)  # the save answers' warnings, by kind
    errors: list[str] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    answer_bytes: list[int] = field(default_factory=list)  # each save answer's text block

    def summary(self) -> dict[str, Any]:
        return {
            "saved": self.saves,
            "superseded": self.superseded,
            "supersessions_refused": self.refused,
            "supersessions_refused_cross_agent": self.refused_cross_agent,
            "refusal_examples": [text for text, _ in self.refusal_examples.most_common(3)],
            "warnings": dict(self.warnings),
            "errors": len(self.errors),
            "error_examples": sorted(set(self.errors))[:5],
            "last_seq": self.last_seq,
            "latency_ms": _latency(self.durations),
        }


def _latency(seconds: list[float]) -> dict[str, Any]:
    s = LatencySummary.of(seconds)
    return {"count": s.count, "p50_ms": s.p50_ms, "p95_ms": s.p95_ms, "max_ms": s.max_ms}


async def run_facts(facts: FactSet, options: FactsOptions, phases: Phases, out: dict[str, Any]) -> None:
    """Saves the set into a fresh node, session by session, then scores every query in each mode into ``out``."""
    out |= {"data": facts.counts(), "search_limit": SEARCH_LIMIT}
    if facts.note:
        out["note"] = facts.note
    with phases("facts/start"):
        node = Node.start(options.home_root / options.name, options.settings)
    out["node_start_seconds"] = round(node.started_seconds, 3)
    out["readyz"] = node.ready
    try:
        if options.background:
            with phases("facts/background"):
                out["background"] = await _import_background(node.http_url, options.background)
        began = time.monotonic()
        with phases("facts/save"), Progress("facts save", len(facts.memories), unit="memories") as bar:
            saved = await _save_all(node.mcp_url, facts, bar)
        out["save"] = saved.summary() | {"seconds": round(time.monotonic() - began, 1)}
        ids_of: dict[str, set[str]] = {}
        for set_id, server_id in saved.server_id.items():
            ids_of.setdefault(server_id, set()).add(set_id)
        async with connect(node.http_url, node.mcp_url) as client:
            with phases("facts/index"):
                out["index_catch_up_seconds"] = round(await client.wait_indexed(saved.last_seq), 3)
            out["answer_bytes"] = await _answer_sizes(node.mcp_url, facts, saved)
            out["modes"] = {}
            for mode, arguments in MODES.items():
                if "sources" in arguments and not client.accepts("search_memory", "sources"):
                    out.setdefault("skipped_modes", {})[mode] = "search_memory has no `sources` argument"
                    continue
                with phases(f"facts/search/{mode}"), Progress(f"facts {mode}", len(facts.queries),
                                                              unit="queries") as bar:  # fmt: skip
                    out["modes"][mode] = await _search_all(client, facts.queries, ids_of, saved.last_seq,
                                                           arguments, bar)  # fmt: skip
        out["rss_bytes"] = node.rss()
    finally:
        node.stop_into(out)


async def _import_background(http_url: str, lines: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The background memories, each agent's through the import endpoint as that agent (bench/background.py)."""
    began, imported = time.monotonic(), 0
    async with httpx.AsyncClient(base_url=http_url, timeout=httpx.Timeout(60, read=1800)) as http:
        for agent, records in background.by_agent(lines).items():
            for start in range(0, len(records), 500):
                body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[start : start + 500])
                response = await http.post("/v1/memories:import", content=body.encode(), headers={
                    "Content-Type": "application/x-ndjson", "X-Engram-Agent-ID": agent})  # fmt: skip
                response.raise_for_status()
                imported += int(response.json().get("imported") or 0)
    return {"memories": imported, "agents": len(background.by_agent(lines)),
            "seconds": round(time.monotonic() - began, 1)}  # fmt: skip


async def _save_all(mcp_url: str, facts: FactSet, bar: Progress) -> _Saved:
    saved = _Saved()
    owner = {m.id: m.agent for m in facts.memories}
    for session, memories in facts.by_session():
        async with agent_session(mcp_url, session.agent) as client:
            for memory in memories:
                await _save_one(client, memory, owner, saved)
                bar.advance()
    return saved


async def _save_one(client: Client, memory: FactMemory, owner: dict[str, str], saved: _Saved) -> None:
    arguments = memory.save_arguments()
    began = time.perf_counter()
    answer: dict[str, Any] | None = None
    old = saved.server_id.get(memory.supersedes or "")
    if old:
        try:
            answer = await tool(client, "supersede_memory", old_id=old, **arguments)
            saved.superseded += 1
        except ToolCallError as e:
            saved.refused += 1
            saved.refused_cross_agent += owner.get(memory.supersedes or "") != memory.agent
            saved.refusal_examples[e.text[:200]] += 1
    if answer is None:
        try:
            answer = await tool(client, "save_memory", **arguments)
        except ToolCallError as e:
            saved.errors.append(e.text[:300])
            return
    saved.durations.append(time.perf_counter() - began)
    saved.answer_bytes.append(len(json.dumps(answer, separators=(",", ":")).encode()))
    saved.saves += 1
    for warning in answer.get("warnings") or ():
        saved.warnings[str(warning.get("kind") or "warning")] += 1
    saved.server_id[memory.id] = str(answer["id"])
    saved.last_seq = max(saved.last_seq, int(answer.get("seq") or 0))


async def _answer_sizes(mcp_url: str, facts: FactSet, saved: _Saved) -> dict[str, Any]:
    """What an agent pays in context with the server's defaults: tools/list as the server sends it, and the median
    text block of save_memory and of search_memory(limit 5) answers."""
    async with agent_session(mcp_url, facts.sessions[0].agent) as client:
        listed = await client.list_tools()
        tools_bytes = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
        searches = []
        for query in facts.queries:
            result = await client.call_tool("search_memory", {"query": query.text, "limit": SEARCH_LIMIT,
                                                              "min_seq": saved.last_seq})  # fmt: skip
            searches.append(sum(len(getattr(block, "text", "").encode()) for block in result.content))
    async with agent_session(f"{mcp_url}?tools=core", facts.sessions[0].agent) as client:  # small-context clients
        core = await client.list_tools()
    async with agent_session(f"{mcp_url}?tools=full", facts.sessions[0].agent) as client:  # one option away
        full = await client.list_tools()
    return {
        "tools_list": tools_bytes,
        "tools": len(listed.tools),
        "tools_list_core": len(core.model_dump_json(by_alias=True, exclude_none=True).encode()),
        "tools_core": len(core.tools),
        "tools_list_full": len(full.model_dump_json(by_alias=True, exclude_none=True).encode()),
        "tools_full": len(full.tools),
        "search_limit5_median": statistics.median(searches) if searches else None,
        "save_median": statistics.median(saved.answer_bytes) if saved.answer_bytes else None,
    }


async def _search_all(client: Any, queries: Sequence[FactQuery], ids_of: dict[str, set[str]], min_seq: int,
                      arguments: dict[str, Any], bar: Progress) -> dict[str, Any]:  # fmt: skip
    outcomes, durations, errors, reranked = [], [], [], 0
    tops: list[list[str]] = []  # the set ids of each query's hits, best first ("?": a memory not of the set)
    for query in queries:
        began = time.perf_counter()
        try:
            answer = await client.search(query.text, limit=SEARCH_LIMIT, min_seq=min_seq, **arguments)
        except ToolCallError as e:
            errors.append(e.text[:300])
            answer = {"hits": []}
        durations.append(time.perf_counter() - began)
        reranked += bool(answer.get("reranked"))
        ranked = [frozenset(ids_of.get(str(hit["memory"]["id"]), ())) for hit in answer.get("hits", [])]
        outcomes.append(score(query, ranked))
        tops.append([min(ids) if ids else "?" for ids in ranked])
        bar.advance()
    result = tables(queries, outcomes)
    result |= {
        "searches": len(queries), "errors": len(errors), "error_examples": sorted(set(errors))[:5],
        "reranked": reranked, "latency_ms": _latency(durations),
        "per_query": {
            q.id: {"rank": o.rank, "recall": round(o.recall, 3), "hits": top}
            for q, o, top in zip(queries, outcomes, tops, strict=True)
        },
    }  # fmt: skip
    return result


@contextlib.asynccontextmanager
async def agent_session(mcp_url: str, agent: str) -> AsyncIterator[Client]:
    """One MCP session (the SDK client over streamable HTTP) speaking as ``agent``."""
    headers = {"X-Engram-Agent-ID": agent}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=600)) as http,
        Client(
            streamable_http_client(mcp_url, http_client=http), client_info=Implementation(name=agent, version="1.0")
        ) as client,  # fmt: skip
    ):
        yield client


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    """Calls a tool; its structured answer, or ToolCallError with the text the agent would read."""
    result = await client.call_tool(name, arguments)
    if result.is_error:
        raise ToolCallError(name, " ".join(getattr(block, "text", "") for block in result.content))
    if result.structured_content is None:
        raise ToolCallError(name, "no structured content in the answer")
    content: dict[str, Any] = result.structured_content
    return content
