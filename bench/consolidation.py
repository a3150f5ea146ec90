"""Consolidation (issues 25, 36): the contradiction and dedupe detectors on labelled pairs, through a real node.

By default (issue 36) each set runs inside ONE namespace that also holds background memories of other projects and
agents (bench/background.py; hundreds, then thousands), as a user's namespace does: the background is imported
first, then every pair's ``a``, then every pair's ``b`` (so ``b`` is the newer), and the jobs find their candidates
among all those neighbours, as in production; then each pair's two memories are read back (their relations: a
``contradicts`` flag between them with its kind and rule, a ``merged-into`` one into the other, or both ending in
one third memory through their merged-into relations, which leaves them one memory as a merge does). Flags and merges
that join a pair's memory to anything else are counted apart. ``--consolidation-per-pair`` is the older diagnostic:
each pair is saved into a namespace of its own (one API key per pair) on a fresh node, ``a`` then ``b`` (``b`` is
the newer), and the consolidation jobs run through REST as a node runs them: for the contradiction task the
``contradictions`` job, then ``GET /v1/contradictions`` (a proposal's ``kind``: contradiction, or update when the
newer replaces the older; an older node names no kind and counts as a contradiction); for the dedupe task ``dedupe``
(merged or not; a save answered with ``duplicate_of`` counts as merged), then ``contradictions`` as the ``all`` job
would (a duplicate left unmerged and flagged counts against it). Figures per split (``tune``, ``untouched``) of
bench/data/consolidation/ and on the older sets in tests/data/. The harness reads only what the API answers, so a
change to the rules shows up here without a change to this file.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import background
from bench.node import Node
from bench.progress import Phases, Progress

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "consolidation"
EXISTING_DATA = REPO_ROOT / "tests" / "data"
SPLITS = ("tune", "untouched", "existing")  # existing: the older sets of tests/data, which have no split
DEFAULT_CONCURRENCY = 4  # pairs in flight; each is its own namespace, so their jobs never wait on one another
QUICK_EVERY = 5  # --quick: every fifth pair of each set
AGENT = "bench"
# Kinds a proposal may name for "the newer replaces the older"; anything else (or none) is a contradiction.
UPDATE_KINDS = frozenset({"update", "supersession", "supersede"})
POSITIVE = frozenset({"contradiction", "update"})  # the contradiction task's pairs that need a person's decision
# The targets (contradictions on the untouched split; the others on every split).
TARGETS: dict[str, dict[str, Any]] = {
    "contradiction": {
        "precision": (">=", 0.90),
        "recall": (">=", 0.80),
        "duplicates_flagged": ("<=", 0),
    },
    "dedupe": {"precision": (">=", 0.98), "recall": (">=", 0.80), "updates_merged": ("<=", 0)},
}
NODE_SETTINGS = {"ENGRAM_CONSOLIDATION_INTERVAL_SECONDS": "0"}  # no scheduled `all` job racing the bench's jobs
# Shared namespaces: every candidate the detectors keep is flagged in one run (the per-run cap only spreads them over
# runs), so each pair's verdict is read after one job, and the candidates per 1,000 memories are the detector's.
SHARED_SETTINGS = {"ENGRAM_CONSOLIDATION_MAX_PROPOSALS": "1000000"}
MAX_MERGE_CHAIN = 8  # merged-into relations followed from a pair's memory to the one it ends in
JOB_POLL_SECONDS = 1.0  # how often a job that outlived its call is asked again
SAVE_CONCURRENCY = 4  # saves in flight while filling a shared namespace (all of a side before the other)
# What kind of disagreement a contradiction pair is, from its `why` (the readers' note; detectors never read it).
CHOICE_WORDS = ("tool", "choice", "engine", "framework", "toolkit", "hosting", "cdn", "format", "protocol",
                "disk type", "signing", "payment", "place", "zone", "hosted")  # fmt: skip
STATE_WORDS = ("on/off", "enabled/disabled", "allowed/blocked", "automatic/manual", "public/private",
               "always/never", "accepted/rejected", "closed/open")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Side:
    """One memory of a pair, as an agent saves it."""

    content: str
    topics: tuple[str, ...] = ()
    memory_type: str = "fact"

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"content": self.content, "memory_type": self.memory_type}
        if self.topics:
            body["topics"] = list(self.topics)
        return body


@dataclass(frozen=True, slots=True)
class Pair:
    """A labelled pair: ``a`` is saved first (the older), ``b`` second (the newer)."""

    a: Side
    b: Side
    label: str
    split: str = "existing"
    domain: str = ""
    why: str = ""  # a few words for readers; the bench groups figures by it, the node never sees it

    @property
    def kind(self) -> str:
        """What kind of case the pair is: for a contradiction preference, negation, person, state, choice or value;
        an update is an update; otherwise its label."""
        if self.label != "contradiction":
            return self.label
        why = self.why.lower()
        if "preference" in why or "reversed" in why:
            return "preference"
        if "negat" in why or "finding" in why:
            return "negation"
        if why.startswith("two ") or "maintainer" in why or "person" in why:
            return "person"
        if any(w in why for w in STATE_WORDS):
            return "state"
        if any(w in why for w in CHOICE_WORDS):
            return "choice"
        return "value"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the node did with one pair: the kind of the proposal listed for it ("" when none), the rule that raised
    it, whether dedupe merged it (or the save answered duplicate_of), and an error that kept it from being asked."""

    proposed: str = ""
    rule: str = ""
    merged: bool = False
    at_save: bool = False
    error: str = ""

    @property
    def as_update(self) -> bool:
        return self.proposed in UPDATE_KINDS

    @property
    def folded(self) -> bool:
        return self.merged or self.at_save


@dataclass(frozen=True, slots=True)
class ConsolidationOptions:
    home_root: Path
    settings: dict[str, str]
    data: Path = DEFAULT_DATA
    existing: Path = EXISTING_DATA
    concurrency: int = DEFAULT_CONCURRENCY
    quick: bool = False
    per_pair: bool = False  # the diagnostic: one namespace per pair (issue 25's mode)
    background_sizes: tuple[int, ...] = background.DEFAULT_SIZES
    locomo: Path = background.DEFAULT_LOCOMO


@dataclass(frozen=True, slots=True)
class PairSet:
    task: str  # contradiction or dedupe
    source: str  # the file, relative to the repository
    pairs: list[Pair] = field(default_factory=list)


# --- data -----------------------------------------------------------------------------------------------------


def load_pairs(path: Path) -> list[Pair]:
    """A JSON Lines set; a pair without a split (the older sets) is in split ``existing``."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(Pair(_side(row["a"]), _side(row["b"]), row["label"], row.get("split", "existing"),
                              row.get("domain", ""), row.get("why", "")))  # fmt: skip
    return pairs


def load_sets(options: ConsolidationOptions) -> list[PairSet]:
    """The new sets (both splits) and the older ones, each read once; --quick keeps every QUICK_EVERY-th pair."""
    files = (
        ("contradiction", options.data / "contradiction_pairs.jsonl"),
        ("dedupe", options.data / "dedupe_pairs.jsonl"),
        ("contradiction", options.existing / "contradiction_pairs.jsonl"),
        ("dedupe", options.existing / "duplicate_pairs.jsonl"),
    )
    sets = []
    for task, path in files:
        pairs = load_pairs(path)
        if options.quick:
            pairs = pairs[::QUICK_EVERY]
        sets.append(PairSet(task, _relative(path), pairs))
    return sets


def counts(sets: Sequence[PairSet]) -> dict[str, Any]:
    """Pairs per set, split, label and domain."""
    out: dict[str, Any] = {}
    for pair_set in sets:
        entry = out.setdefault(pair_set.source, {"task": pair_set.task, "pairs": 0, "by_split_label": {},
                                                 "by_domain": {}})  # fmt: skip
        for pair in pair_set.pairs:
            entry["pairs"] += 1
            labels = entry["by_split_label"].setdefault(pair.split, {})
            labels[pair.label] = labels.get(pair.label, 0) + 1
            if pair.domain:
                entry["by_domain"][pair.domain] = entry["by_domain"].get(pair.domain, 0) + 1
    return out


def _side(raw: dict[str, Any]) -> Side:
    return Side(raw["content"], tuple(raw.get("topics") or ()), raw.get("memory_type") or "fact")


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


# --- scoring --------------------------------------------------------------------------------------------------


def contradiction_figures(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The contradiction task. precision: proposals (any kind) on pairs that need a decision (contradiction or
    update) of all proposals; recall: contradictions proposed (any kind) of all contradictions; updates: proposed as
    an update (supersession), and proposed at all (the old code's contradictions count); duplicates and related
    pairs proposed are false alarms.

    >>> p = [Pair(Side("x"), Side("y"), label) for label in ("contradiction", "update", "duplicate", "related")]
    >>> f = contradiction_figures(p, [Verdict("contradiction"), Verdict("update"), Verdict("contradiction"), Verdict()])
    >>> f["precision"], f["recall"], f["update_recall_as_update"], f["duplicates_flagged"]
    (0.6667, 1.0, 1.0, 1)
    """
    by = _by_label(pairs, verdicts)
    proposed = [v for _, v in _zip(pairs, verdicts) if v.proposed]
    right = [v for p, v in _zip(pairs, verdicts) if v.proposed and p.label in POSITIVE]
    contradictions, updates = by.get("contradiction", []), by.get("update", [])
    as_contradiction = sum(bool(v.proposed) and not v.as_update for v in contradictions)
    figures: dict[str, Any] = {
        "pairs": len(pairs),
        "proposed": len(proposed),
        "precision": _ratio(len(right), len(proposed)),
        "recall": _ratio(sum(bool(v.proposed) for v in contradictions), len(contradictions)),
        "recall_as_contradiction": _ratio(as_contradiction, len(contradictions)),
        "contradictions_proposed_as_update": sum(v.as_update for v in contradictions),
        "updates": len(updates),
        "update_recall_as_update": _ratio(sum(v.as_update for v in updates), len(updates)),
        "update_recall_any_kind": _ratio(sum(bool(v.proposed) for v in updates), len(updates)),
        "duplicates": len(by.get("duplicate", [])),
        "duplicates_flagged": sum(bool(v.proposed) for v in by.get("duplicate", [])),
        "related": len(by.get("related", [])),
        "related_flagged": sum(bool(v.proposed) for v in by.get("related", [])),
        "rules": _rules(verdicts),
        "by_kind": by_kind(pairs, verdicts),
        "errors": sum(bool(v.error) for v in verdicts),
    }
    if not updates:
        for key in ("updates", "update_recall_as_update", "update_recall_any_kind"):
            del figures[key]
    return figures


def by_kind(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> dict[str, dict[str, int]]:
    """Per kind of pair (Pair.kind): how many, and how many were proposed (flagged in any kind).

    >>> x, y = Side("x"), Side("y")
    >>> p = [Pair(x, y, "contradiction", why="preference reversal"), Pair(x, y, "related")]
    >>> by_kind(p, [Verdict("contradiction"), Verdict()])
    {'preference': {'pairs': 1, 'proposed': 1}, 'related': {'pairs': 1, 'proposed': 0}}
    """
    kinds: dict[str, dict[str, int]] = {}
    for pair, verdict in _zip(pairs, verdicts):
        entry = kinds.setdefault(pair.kind, {"pairs": 0, "proposed": 0})
        entry["pairs"] += 1
        entry["proposed"] += bool(verdict.proposed)
    return dict(sorted(kinds.items()))


def dedupe_figures(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The dedupe task. precision and recall of merging duplicates (a save answered duplicate_of counts as a merge);
    updates and distinct pairs merged (both must stay 0); and what the contradictions job then flagged among the
    pairs dedupe left, as the ``all`` job runs them.

    >>> p = [Pair(Side("x"), Side("y"), label) for label in ("duplicate", "duplicate", "distinct", "update")]
    >>> f = dedupe_figures(p, [Verdict(merged=True), Verdict("contradiction"), Verdict(), Verdict(merged=True)])
    >>> f["precision"], f["recall"], f["updates_merged"], f["duplicates_flagged"]
    (0.5, 0.5, 1, 1)
    """
    by = _by_label(pairs, verdicts)
    merged = [p for p, v in _zip(pairs, verdicts) if v.folded]
    duplicates = by.get("duplicate", [])
    figures: dict[str, Any] = {
        "pairs": len(pairs),
        "merged": len(merged),
        "merged_at_save": sum(v.at_save for v in verdicts),
        "precision": _ratio(sum(p.label == "duplicate" for p in merged), len(merged)),
        "recall": _ratio(sum(v.folded for v in duplicates), len(duplicates)),
        "duplicates": len(duplicates),
        "distinct": len(by.get("distinct", [])),
        "distinct_merged": sum(v.folded for v in by.get("distinct", [])),
        "updates": len(by.get("update", [])),
        "updates_merged": sum(v.folded for v in by.get("update", [])),
        "duplicates_flagged": sum(bool(v.proposed) for v in duplicates),
        "distinct_flagged": sum(bool(v.proposed) for v in by.get("distinct", [])),
        "updates_proposed_as_update": sum(v.as_update for v in by.get("update", [])),
        "errors": sum(bool(v.error) for v in verdicts),
    }
    if not by.get("update"):
        for key in ("updates", "updates_merged", "updates_proposed_as_update"):
            del figures[key]
    return figures


def checks(task: str, figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target of the task beside its figure: value, target, ok (None when the figure is missing)."""
    out = {}
    for name, (sense, target) in TARGETS[task].items():
        value = figures.get(name)
        ok = None if value is None else (value >= target if sense == ">=" else value <= target)
        out[name] = {"value": value, "target": f"{sense} {target}", "ok": ok}
    return out


def mistakes(task: str, pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """The pairs the node got wrong, for reading (never written for the untouched split)."""
    out = []
    for pair, verdict in _zip(pairs, verdicts):
        expected, got = _expected(task, pair), _got(task, verdict)
        if got != expected:
            wrong = {"label": pair.label, "got": got, "rule": verdict.rule, "domain": pair.domain}
            wrong |= {"a": pair.a.content, "b": pair.b.content} | ({"error": verdict.error} if verdict.error else {})
            out.append(wrong)
    return out


def _expected(task: str, pair: Pair) -> str:
    if task == "dedupe":
        return "merged" if pair.label == "duplicate" else "kept"
    return {"contradiction": "contradiction", "update": "update"}.get(pair.label, "none")


def _got(task: str, verdict: Verdict) -> str:
    if verdict.error:
        return "error"
    if task == "dedupe":
        return "merged" if verdict.folded else "kept"
    if not verdict.proposed:
        return "none"
    return "update" if verdict.as_update else "contradiction"


def _by_label(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> dict[str, list[Verdict]]:
    by: dict[str, list[Verdict]] = {}
    for pair, verdict in _zip(pairs, verdicts):
        by.setdefault(pair.label, []).append(verdict)
    return by


def _rules(verdicts: Sequence[Verdict]) -> dict[str, int]:
    rules: dict[str, int] = {}
    for verdict in verdicts:
        if verdict.proposed:
            rules[verdict.rule or "-"] = rules.get(verdict.rule or "-", 0) + 1
    return dict(sorted(rules.items(), key=lambda item: -item[1]))


def _zip(pairs: Sequence[Pair], verdicts: Sequence[Verdict]) -> Iterator[tuple[Pair, Verdict]]:
    return zip(pairs, verdicts, strict=True)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


# --- the node ---------------------------------------------------------------------------------------------------


async def run_consolidation(options: ConsolidationOptions, phases: Phases, out: dict[str, Any]) -> None:
    """Every pair of every set through a fresh node, then the figures per task and split into ``out``: in shared
    namespaces (one per set and background size) unless ``per_pair``."""
    if options.per_pair:
        await _run_per_pair(options, phases, out)
    else:
        await _run_shared(options, phases, out)


async def _run_per_pair(options: ConsolidationOptions, phases: Phases, out: dict[str, Any]) -> None:
    sets = load_sets(options)
    out |= {
        "path": "real node: REST save (a, then b), POST /v1/consolidation/jobs, GET /v1/contradictions; "
        "one namespace per pair (diagnostic)",
        "mode": "per-pair",
        "data": counts(sets),
        "targets": {task: {k: f"{s} {t}" for k, (s, t) in targets.items()} for task, targets in TARGETS.items()},
    }
    if options.quick:
        out["note"] = f"--quick: every {QUICK_EVERY}th pair; not comparable to a full run"
    with phases("consolidation/start"):
        node = Node.start(options.home_root / "consolidation", options.settings | NODE_SETTINGS)
    out["node_start_seconds"] = round(node.started_seconds, 3)
    try:
        keys = _KeyMaker(Path(node.settings.get("ENGRAM_KEYS_FILE") or node.home / "keys.json"))
        began = time.monotonic()
        for pair_set in sets:
            with phases(f"consolidation/{pair_set.task}/{pair_set.source}"):
                verdicts = await _ask_all(node.http_url, keys, pair_set, options.concurrency)
            _record(out, pair_set, verdicts)
        out["seconds"] = round(time.monotonic() - began, 1)
        out["pairs_per_second"] = round(sum(len(s.pairs) for s in sets) / max(out["seconds"], 1e-9), 1)
    finally:
        node.stop_into(out)


async def _run_shared(options: ConsolidationOptions, phases: Phases, out: dict[str, Any]) -> None:
    """Each set in one namespace per background size (the older tests/data sets at the first size only), all on one
    node; ``out`` holds the first size's figures at the top (as the per-pair mode does) and every size's under
    ``shared``."""
    sets = load_sets(options)
    sizes = options.background_sizes[:1] if options.quick else options.background_sizes
    out |= {
        "path": "real node: background imported (POST /v1/memories:import, its own agents), then every pair's a, "
        "then every b (REST save as agent bench), POST /v1/consolidation/jobs, each pair's memories read back",
        "mode": "shared",
        "background_sizes": list(sizes),
        "data": counts(sets),
        "targets": {task: {k: f"{s} {t}" for k, (s, t) in targets.items()} for task, targets in TARGETS.items()},
        "shared": {},
    }
    if options.quick:
        out["note"] = f"--quick: every {QUICK_EVERY}th pair, background {sizes[0]}; not comparable to a full run"
    with phases("consolidation/start"):
        node = Node.start(options.home_root / "consolidation", options.settings | NODE_SETTINGS | SHARED_SETTINGS)
    out["node_start_seconds"] = round(node.started_seconds, 3)
    try:
        store = Path(node.settings.get("ENGRAM_KEYS_FILE") or node.home / "keys.json")
        began = time.monotonic()
        for size in sizes:
            lines = background.for_consolidation(size, locomo=options.locomo)
            run: dict[str, Any] = {"background": len(lines)}
            out["shared"][str(size)] = run  # filled set by set: an interrupted run keeps the sets it measured
            for number, pair_set in enumerate(sets):
                if pair_set.source.startswith("tests/") and size != sizes[0]:
                    continue  # the older sets once, at the first size
                namespace = f"bench-shared-{size}-{number}"
                with phases(f"consolidation/shared{size}/{pair_set.task}/{pair_set.source}"):
                    verdicts, outside = await _shared_namespace(node.http_url, store, namespace, pair_set, lines)
                _record(run, pair_set, verdicts)
                run.setdefault("outside", {})[pair_set.source] = outside
            if size == sizes[0]:
                out |= {k: v for k, v in run.items() if k in ("contradiction", "dedupe", "outside")}
        out["seconds"] = round(time.monotonic() - began, 1)
        saved = sum(r["contradiction"][s]["pairs"] for r in out["shared"].values() for s in r.get("contradiction", {}))
        saved += sum(r["dedupe"][s]["pairs"] for r in out["shared"].values() for s in r.get("dedupe", {}))
        out["pairs_per_second"] = round(saved / max(out["seconds"], 1e-9), 1)
    finally:
        node.stop_into(out)


async def _shared_namespace(
    http_url: str, store: Path, namespace: str, pair_set: PairSet, lines: Sequence[dict[str, Any]]
) -> tuple[list[Verdict], dict[str, Any]]:
    """One set among ``lines`` in ``namespace``: the verdict of each pair, and what happened outside the pairs."""
    from engram.keys import KeyStore

    keys = KeyStore(store)
    _, admin = keys.create(namespace=namespace, agent=AGENT, scopes=("read", "write", "admin"))
    headers = {"Authorization": f"Bearer {admin}"}
    timeout = httpx.Timeout(60, read=1800)
    async with httpx.AsyncClient(base_url=http_url, timeout=timeout) as http:
        imported = 0
        for agent, records in background.by_agent(lines).items():
            _, secret = keys.create(namespace=namespace, agent=agent, scopes=("read", "write"))
            for start in range(0, len(records), 500):
                imported += await _import(http, {"Authorization": f"Bearer {secret}"}, records[start : start + 500])
        label = f"consolidation {pair_set.task} {Path(pair_set.source).parent.name} ({len(lines)} around)"
        with Progress(label, 2 * len(pair_set.pairs), unit="saves") as bar:
            older = await _save_side(http, headers, [p.a for p in pair_set.pairs], bar)
            newer = await _save_side(http, headers, [p.b for p in pair_set.pairs], bar)
        jobs: dict[str, Any] = {}
        if pair_set.task == "dedupe":
            jobs["dedupe"] = await _job(http, headers, "dedupe")
        jobs["contradictions"] = await _job(http, headers, "contradictions")
        verdicts, outside = await _read_back(http, headers, older, newer)
    memories = imported + sum(1 for x in older + newer if "id" in x)
    flagged = int(jobs["contradictions"].get("flagged") or 0)
    outside |= {
        "namespace_memories": memories,
        "flagged": flagged,
        "flagged_per_1000": round(1000 * flagged / max(memories, 1), 2),
        "flags_outside_pairs": flagged - sum(bool(v.proposed) for v in verdicts) - outside["flags_pair_to_other"],
        "jobs": jobs,
    }
    return verdicts, outside


async def _import(http: httpx.AsyncClient, headers: dict[str, str], records: Sequence[dict[str, Any]]) -> int:
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    response = await http.post("/v1/memories:import", content=body,
                               headers=headers | {"Content-Type": "application/x-ndjson"})  # fmt: skip
    response.raise_for_status()
    return int(response.json().get("imported") or 0)


async def _save_side(
    http: httpx.AsyncClient, headers: dict[str, str], sides: Sequence[Side], bar: Progress
) -> list[dict[str, Any]]:
    """Saves ``sides`` (a few at once); each save's answer, or {"error": ...}."""
    answers: list[dict[str, Any]] = [{} for _ in sides]
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(sides)):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            index = queue.get_nowait()
            try:
                answers[index] = await _save(http, headers, sides[index])
            except httpx.HTTPError as e:
                answers[index] = {"error": f"{type(e).__name__}: {e}"[:300]}
            bar.advance()

    await asyncio.gather(*(worker() for _ in range(SAVE_CONCURRENCY)))
    return answers


async def _read_back(
    http: httpx.AsyncClient, headers: dict[str, str], older: Sequence[dict[str, Any]], newer: Sequence[dict[str, Any]]
) -> tuple[list[Verdict], dict[str, Any]]:
    """Each pair's verdict from its two memories' relations, and the merges and flags joining a pair's memory to
    a memory outside the pair."""
    verdicts: list[Verdict] = []
    merged_elsewhere = flags_elsewhere = 0
    for a, b in zip(older, newer, strict=True):
        if "id" not in a or "id" not in b:
            verdicts.append(Verdict(error=a.get("error") or b.get("error") or "not saved"))
            continue
        at_save = b.get("duplicate_of") == a["id"] or b["id"] == a["id"]
        if at_save:
            verdicts.append(Verdict(at_save=True))
            continue
        one, two = await _memory(http, headers, a["id"]), await _memory(http, headers, b["id"])
        ids = {a["id"], b["id"]}
        merged = proposed = rule = ""
        for memory, other in ((one, b["id"]), (two, a["id"])):
            for relation in memory.get("relations") or []:
                kind, target = relation.get("kind"), relation.get("memory_id")
                if kind == "merged-into":
                    if target == other:
                        merged = "yes"
                    elif target not in ids:
                        merged_elsewhere += 1
                elif kind == "contradicts":
                    if target == other:
                        note = _note(relation.get("note") or "")
                        proposed, rule = note.get("kind") or "contradiction", note.get("rule") or ""
                    elif target not in ids:
                        flags_elsewhere += 1
        if not merged and await _survivor(http, headers, one) == await _survivor(http, headers, two):
            merged = "yes"  # both merged into a third memory: the namespace holds them as one, as a merge would
        verdicts.append(Verdict(proposed=proposed, rule=rule, merged=bool(merged)))
    return verdicts, {"merged_pair_to_other": merged_elsewhere, "flags_pair_to_other": flags_elsewhere}


async def _survivor(http: httpx.AsyncClient, headers: dict[str, str], memory: dict[str, Any]) -> str:
    """The id of the memory ``memory`` ends in through its merged-into relations (itself when it was not merged)."""
    seen = {memory["id"]}
    for _ in range(MAX_MERGE_CHAIN):
        target = next((r.get("memory_id") for r in memory.get("relations") or [] if r.get("kind") == "merged-into"),
                      None)  # fmt: skip
        if not target or target in seen:
            break
        seen.add(target)
        memory = await _memory(http, headers, target)
    return str(memory["id"])


async def _memory(http: httpx.AsyncClient, headers: dict[str, str], memory_id: str) -> dict[str, Any]:
    response = await http.get(f"/v1/memories/{memory_id}", headers=headers)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer.get("memory", answer) if isinstance(answer.get("memory"), dict) else answer


def _note(text: str) -> dict[str, Any]:
    try:
        note = json.loads(text)
    except ValueError:
        return {}
    return note if isinstance(note, dict) else {}


def _record(out: dict[str, Any], pair_set: PairSet, verdicts: list[Verdict]) -> None:
    score: Callable[[Sequence[Pair], Sequence[Verdict]], dict[str, Any]] = (
        contradiction_figures if pair_set.task == "contradiction" else dedupe_figures
    )
    task = out.setdefault(pair_set.task, {})
    for split in SPLITS:
        chosen = [(p, v) for p, v in zip(pair_set.pairs, verdicts, strict=True) if p.split == split]
        if not chosen:
            continue
        pairs, found = [p for p, _ in chosen], [v for _, v in chosen]
        figures = score(pairs, found) | {"source": pair_set.source}
        figures["checks"] = checks(pair_set.task, figures)
        if split != "untouched":  # the untouched split's pairs are never shown, so nobody tunes on them
            figures["mistakes"] = mistakes(pair_set.task, pairs, found)
        task[split] = figures


class _KeyMaker:
    """An admin key per namespace, written to the node's key file (the node reloads it when it changes)."""

    def __init__(self, path: Path) -> None:
        from engram.keys import KeyStore

        self._store = KeyStore(path)
        self._made = 0

    def next(self) -> str:
        self._made += 1
        namespace = f"bench-pair-{self._made:05d}"
        _, secret = self._store.create(namespace=namespace, agent=AGENT, scopes=("read", "write", "admin"))
        return secret


async def _ask_all(http_url: str, keys: _KeyMaker, pair_set: PairSet, concurrency: int) -> list[Verdict]:
    verdicts: list[Verdict] = [Verdict()] * len(pair_set.pairs)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(len(pair_set.pairs)):
        queue.put_nowait(index)
    timeout = httpx.Timeout(60, read=600)
    label = f"consolidation {pair_set.task} {Path(pair_set.source).parent.name}"
    async with httpx.AsyncClient(base_url=http_url, timeout=timeout) as http:
        with Progress(label, len(pair_set.pairs), unit="pairs") as bar:

            async def worker() -> None:
                while not queue.empty():
                    index = queue.get_nowait()
                    secret = keys.next()
                    try:
                        verdicts[index] = await _ask(http, secret, pair_set.task, pair_set.pairs[index])
                    except (httpx.HTTPError, ValueError, KeyError) as e:
                        verdicts[index] = Verdict(error=f"{type(e).__name__}: {e}"[:300])
                    bar.advance()

            await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return verdicts


async def _ask(http: httpx.AsyncClient, secret: str, task: str, pair: Pair) -> Verdict:
    """Saves the pair into the key's namespace and runs the task's jobs; what they did to the pair."""
    headers = {"Authorization": f"Bearer {secret}"}
    older = await _save(http, headers, pair.a)
    newer = await _save(http, headers, pair.b)
    at_save = newer.get("duplicate_of") == older["id"] or newer["id"] == older["id"]
    merged = False
    if task == "dedupe" and not at_save:
        result = await _job(http, headers, "dedupe")
        merged = int(result.get("merged") or 0) > 0
    if at_save or merged:
        return Verdict(merged=merged, at_save=at_save)
    await _job(http, headers, "contradictions")
    response = await http.get("/v1/contradictions", headers=headers, params={"limit": 10})
    response.raise_for_status()
    ids = {older["id"], newer["id"]}
    for item in response.json().get("contradictions") or []:
        if {item["memory"]["id"], item["other"]["id"]} == ids:
            return Verdict(proposed=str(item.get("kind") or "contradiction"), rule=str(item.get("rule") or ""))
    return Verdict()


async def _save(http: httpx.AsyncClient, headers: dict[str, str], side: Side) -> dict[str, Any]:
    response = await http.post("/v1/memories", headers=headers, json=side.body())
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


async def _job(http: httpx.AsyncClient, headers: dict[str, str], kind: str) -> dict[str, Any]:
    response = await http.post("/v1/consolidation/jobs", headers=headers, json={"kind": kind})
    response.raise_for_status()
    job = response.json()
    while job.get("state") == "running":  # it outlived the call's deadline: follow it
        await asyncio.sleep(JOB_POLL_SECONDS)
        response = await http.get(f"/v1/consolidation/jobs/{job['id']}", headers=headers)
        response.raise_for_status()
        job = response.json()
    if job.get("state") != "succeeded":
        raise ValueError(f"job {kind} ended {job.get('state')}: {job.get('summary') or job.get('error')}")
    result: dict[str, Any] = job.get("result") or {}
    return result
