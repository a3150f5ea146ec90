"""Retrieval quality through the public API: LoCoMo recall@k and BEIR nDCG@10, per retrieval mode."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.client import EngramClient, ToolCallError, connect
from bench.datasets import CONTEXT_SETTINGS, DEFAULT_CONTEXT_MODE, BeirSet, Conversation, locomo_records
from bench.metrics import LatencySummary, mean, ndcg_at_k, recall_at_k
from bench.node import Node
from bench.progress import Phases, Progress, note

# Retrieval modes: the search_memory arguments each one adds. Pure retrievers never rerank.
MODES: dict[str, dict[str, Any]] = {
    "bm25": {"sources": ["bm25"], "rerank": False},
    "dense": {"sources": ["dense"], "rerank": False},
    "full": {"rerank": False},
    "full+rerank": {"rerank": True},
}
LOCOMO_KS = (5, 10, 25)
LOCOMO_LIMIT = 25
BEIR_K = 10
MAX_ERROR_SHARE = 0.05  # more failed searches than this and the mode's figure is marked unreliable


@dataclass(frozen=True, slots=True)
class QualityOptions:
    """Where quality nodes live and how they run."""

    home_root: Path
    settings: dict[str, str]
    chunk: int
    context_mode: str = DEFAULT_CONTEXT_MODE


async def run_locomo(
    conversations: Sequence[Conversation],
    options: QualityOptions,
    phases: Phases,
    out: dict[str, Any],
    *,
    only: Sequence[str] = (),
) -> None:
    """Imports every turn of every conversation into a fresh node (set up for ``options.context_mode``), then scores
    each mode's recall@k (or only those named in ``only``) into ``out``."""
    records = [r for conv in conversations for r in locomo_records(conv, context_mode=options.context_mode)]
    questions = sum(len(conv.answerable) for conv in conversations)
    out |= {
        "conversations": [conv.sample_id for conv in conversations],
        "memories": len(records),
        "questions": questions,
        "context": options.context_mode,
        "search_limit": LOCOMO_LIMIT,
    }
    name = "locomo" if options.context_mode == DEFAULT_CONTEXT_MODE else f"locomo-context-{options.context_mode}"
    node_options = dataclasses.replace(options, settings=options.settings | CONTEXT_SETTINGS[options.context_mode])
    async with _loaded_node(name, records, node_options, phases, out) as client:
        for mode in await _modes(client, out):
            if only and mode not in only:
                continue
            with phases(f"quality/{name}/{mode}"), Progress(f"LoCoMo {mode}", questions, unit="questions") as bar:
                out["modes"][mode] = await _locomo_mode(client, conversations, MODES[mode], out["last_seq"], bar)


async def _locomo_mode(
    client: EngramClient, conversations: Sequence[Conversation], args: dict[str, Any], min_seq: int, bar: Progress
) -> dict[str, Any]:
    recalls: dict[int, list[float]] = {k: [] for k in LOCOMO_KS}
    by_category: dict[str, list[float]] = {}
    checks = _Checks()
    for conv in conversations:
        for q in conv.answerable:
            hits = await checks.search(client, q.question, limit=LOCOMO_LIMIT, tags=[conv.sample_id],
                                       min_seq=min_seq, **args)  # fmt: skip
            checks.foreign += sum(1 for h in hits if conv.sample_id not in h["memory"].get("tags", []))
            retrieved = checks.metadata_values(hits, "dia_id")
            for k in LOCOMO_KS:
                recalls[k].append(recall_at_k(retrieved, q.evidence, k))
            by_category.setdefault(q.category_name, []).append(recall_at_k(retrieved, q.evidence, 10))
            bar.advance()
    result: dict[str, Any] = {f"recall@{k}": mean(values) for k, values in recalls.items()}
    result["recall@10_by_category"] = {name: mean(v) for name, v in sorted(by_category.items())}
    result["questions_by_category"] = {name: len(v) for name, v in sorted(by_category.items())}
    return result | checks.summary()


async def run_beir(beir: BeirSet, options: QualityOptions, phases: Phases, out: dict[str, Any]) -> None:
    """Imports the corpus into a fresh node, then scores each mode's nDCG@10 over the judged queries into ``out``."""
    tag = f"beir-{beir.name}"
    records = beir.records(tag)
    out |= {
        "name": beir.name,
        "memories": len(records),
        "queries": len(beir.judged),
        "tag": tag,
        "search_limit": BEIR_K,
    }
    if beir.note:
        out["note"] = beir.note
    async with _loaded_node(beir.name, records, options, phases, out) as client:
        for mode in await _modes(client, out, tags=[tag]):
            label = f"{beir.name} {mode}"
            with phases(f"quality/{beir.name}/{mode}"), Progress(label, len(beir.judged), unit="queries") as bar:
                out["modes"][mode] = await _beir_mode(client, beir, tag, MODES[mode], out["last_seq"], bar)


async def _beir_mode(
    client: EngramClient, beir: BeirSet, tag: str, args: dict[str, Any], min_seq: int, bar: Progress
) -> dict[str, Any]:
    ndcgs, recalls = [], []
    checks = _Checks()
    for query_id in beir.judged:
        hits = await checks.search(client, beir.queries[query_id], limit=BEIR_K, tags=[tag], min_seq=min_seq, **args)
        retrieved = checks.metadata_values(hits, "doc_id")
        qrels = beir.qrels[query_id]
        ndcgs.append(ndcg_at_k(retrieved, qrels, BEIR_K))
        recalls.append(recall_at_k(retrieved, [d for d, r in qrels.items() if r > 0], BEIR_K))
        bar.advance()
    return {f"ndcg@{BEIR_K}": mean(ndcgs), f"recall@{BEIR_K}": mean(recalls)} | checks.summary()


class _Checks:
    """Per-mode bookkeeping: failed searches, hits from outside the filter, metadata that did not round-trip."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.foreign = 0
        self.missing_metadata = 0
        self.durations: list[float] = []
        self.searches = 0

    async def search(self, client: EngramClient, query: str, **args: Any) -> list[dict[str, Any]]:
        self.searches += 1
        began = time.perf_counter()
        try:
            answer = await client.search(query, **args)
        except ToolCallError as e:
            self.errors.append(e.text)
            return []
        self.durations.append(time.perf_counter() - began)
        hits: list[dict[str, Any]] = answer.get("hits", [])
        return hits

    def metadata_values(self, hits: list[dict[str, Any]], key: str) -> list[str]:
        values = []
        for hit in hits:
            value = (hit["memory"].get("metadata") or {}).get(key)
            if value is None:
                self.missing_metadata += 1
            else:
                values.append(str(value))
        return values

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "searches": self.searches,
            "errors": len(self.errors),
            "foreign_hits": self.foreign,
            "hits_without_metadata": self.missing_metadata,
            "latency_ms": dataclasses.asdict(LatencySummary.of(self.durations)),
        }
        if self.errors:
            result["error_examples"] = sorted(set(self.errors))[:5]
            result["unreliable"] = len(self.errors) > MAX_ERROR_SHARE * max(1, self.searches)
        return result


@contextlib.asynccontextmanager
async def _loaded_node(
    name: str, records: list[dict[str, Any]], options: QualityOptions, phases: Phases, out: dict[str, Any]
) -> AsyncIterator[EngramClient]:
    """A fresh node with ``records`` imported and indexed; fills ``out`` with import, index and node figures."""
    with phases(f"quality/{name}/start"):
        node = Node.start(options.home_root / f"quality-{name}", options.settings)
    out["node_start_seconds"] = round(node.started_seconds, 3)
    out["readyz"] = node.ready
    try:
        async with connect(node.http_url, node.mcp_url) as client:
            with phases(f"quality/{name}/import"), Progress(f"{name} import", len(records), unit="lines") as bar:
                imported = await client.import_records(records, chunk=options.chunk, on_chunk=bar.advance)
            out["import"] = imported.summary()
            out["last_seq"] = imported.last_seq
            if imported.rejected:
                note(f"  {len(imported.rejected)} lines rejected, e.g. {imported.rejected[:3]}")
            with phases(f"quality/{name}/index"):
                out["index_catch_up_seconds"] = round(await client.wait_indexed(imported.last_seq), 3)
            out["rss_bytes"] = node.rss()
            out["modes"] = {}
            yield client
    finally:
        node.stop_into(out)


async def _modes(client: EngramClient, out: dict[str, Any], *, tags: list[str] | None = None) -> list[str]:
    """The modes this node can run; the reasons for any it cannot go to ``out["skipped"]``."""
    skipped: dict[str, str] = {}
    modes = []
    if client.accepts("search_memory", "sources"):
        modes += ["bm25", "dense"]
    else:
        skipped["bm25"] = skipped["dense"] = "search_memory has no `sources` argument on this node"
    modes.append("full")
    reason = await reranker_missing(client, out.get("readyz") or {}, tags=tags)
    if reason:
        skipped["full+rerank"] = reason
    else:
        modes.append("full+rerank")
    out["skipped_modes"] = skipped
    for mode, why in skipped.items():
        note(f"  skipping {mode}: {why}")
    return modes


async def reranker_missing(client: EngramClient, ready: dict[str, Any], *, tags: list[str] | None = None) -> str | None:
    """None when the node reranks, else why not.

    ``/readyz`` says so when it names the reranker; otherwise a probe search with rerank=true decides (it needs
    memories to rerank, so on an empty node only readyz can tell).
    """
    if ready.get("rerank_model") or ready.get("rerank") in ("on", True):
        return None
    probe = await client.search("reranker probe", limit=2, rerank=True, tags=tags)
    if probe.get("reranked"):
        return None
    return f"no reranker on the node ({probe.get('rerank_note') or 'the probe search was not reranked'})"
