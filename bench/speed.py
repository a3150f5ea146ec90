"""Speed through the public API: bulk import rate, search and save latency, and node RSS at growing sizes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import shutil
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.calls import (
    DIAGNOSTIC_SHARE,
    IMPORT_TAG,
    SEARCH_LIMIT,
    SETTLE_TIMEOUT_SECONDS,
    QueryPool,
    searcher,
    settle,
    timed,
)
from bench.client import EngramClient, ToolCallError, connect
from bench.datasets import SpeedCorpus
from bench.given import FLAT_MAX, GivenCorpus, GivenRecords, given_cache
from bench.metrics import LatencySummary
from bench.node import Node
from bench.progress import Phases, Progress, note
from bench.quality import reranker_missing
from bench.reference import Reference, embed_corpus, flat_search, load_embedder
from bench.smaps import breakdown
from bench.sync import run_backfill

DEFAULT_SIZES = (10_000, 50_000)
DEFAULT_SEARCHES = 200
DEFAULT_SAVES = 200
DEFAULT_UPDATES = 1000  # memories updated at each size before its searches: searches then run with versions present
DEFAULT_WARMUP = 20
SAVE_TAG = "bench-speed-save"
VERSION_TAG = "bench-speed-updated"
DIAGNOSTIC_SOURCES = ("dense", "bm25")
REBUILD_TIMEOUT = 3600.0  # a damaged index of 50k memories is rebuilt in about a minute; a million's in minutes
DEFAULT_GIVEN_BASE = 20_000  # distinct texts the bench embeds for a run with given vectors (bench/given.py)
# While a bulk import runs (and until the index has built the vector graph of it), a search and a save are issued
# every PROBE_INTERVAL_SECONDS, each on its own regardless of the ones still waiting, and how long each waits is
# recorded: the node's stalls as an agent would meet them (issue 27). The probes go on for PROBE_TAIL_SECONDS after
# the index has applied the import, which covers the graph build of the indexer's first idle second.
PROBE_INTERVAL_SECONDS = 0.1
PROBE_TAIL_SECONDS = 5.0
PROBE_TAG = "bench-speed-probe"


@dataclass(frozen=True, slots=True)
class SpeedOptions:
    """Where the speed node lives, how it runs, and how much to measure at each size."""

    home_root: Path
    settings: dict[str, str]
    chunk: int
    sizes: tuple[int, ...] = DEFAULT_SIZES
    searches: int = DEFAULT_SEARCHES
    saves: int = DEFAULT_SAVES
    warmup: int = DEFAULT_WARMUP
    updates: int = DEFAULT_UPDATES
    backfill: bool = True  # a new edge device's backfill at the largest size (bench/sync.py)
    # Searches and saves every 100 ms during the import to the largest size (Probes). Only then: 20 calls a second
    # take a share of the cores the import needs, so the smaller sizes' imports measure its rate alone.
    probes: bool = True
    reference: bool = True  # the embedder alone and a flat numpy dense search in the bench process (reference.py)
    # The import's lines carry dense vectors made in the bench from given_base distinct texts (bench/given.py), so
    # a million memories load without a million embeddings; the node embeds queries, saves and updates as ever.
    given_vectors: bool = False
    given_base: int = DEFAULT_GIVEN_BASE
    consolidate: bool = True  # one `all` consolidation job at each size (takes minutes at 50k; hours at 1M)

    @property
    def texts_needed(self) -> int:
        """Imported memories up to the largest size plus a distinct text for every save (with given vectors: the
        base texts, the rest is made from them)."""
        if self.given_vectors:
            return self.given_base
        return max(self.sizes) + self.saves * len(self.sizes)


async def run_speed(
    corpus: SpeedCorpus, queries: Sequence[str], options: SpeedOptions, phases: Phases, out: dict[str, Any]
) -> None:
    """One fresh node; for each size: import up to it, wait for the index, then time searches and saves."""
    sizes = tuple(sorted(set(options.sizes)))
    if len(corpus.texts) < options.texts_needed:
        raise ValueError(f"the speed corpus has {len(corpus.texts)} texts, {options.texts_needed} are needed")
    pool = QueryPool(queries)
    ids: list[str] = []
    out |= {
        "sizes": list(sizes),
        "corpus_sources": corpus.sources,
        "searches_per_size": options.searches,
        "saves_per_size": options.saves,
        "updates_per_size": options.updates,
        "warmup": options.warmup,
        "search_limit": SEARCH_LIMIT,
        "steps": [],
    }
    given: GivenCorpus | None = None
    if options.given_vectors:
        with phases("speed/given_vectors"):
            given = _given(corpus.texts[: options.given_base], queries, sizes, options, out)
        records = _given_lines(given)
        saves: Iterator[str] = (given.text(i) for i in itertools.count(max(sizes)))
    else:
        imports = corpus.texts[: max(sizes)]
        saves = iter(corpus.texts[max(sizes) :])
        records = _records(imports)
        if options.reference:
            with phases("speed/reference"):
                out["reference"] = _reference(imports, queries, sizes, options)
    with phases("speed/start"):
        node = Node.start(options.home_root / "speed", options.settings)
    out["node_start_seconds"] = round(node.started_seconds, 3)
    out["readyz"] = node.ready
    out["rss_bytes_empty"] = node.rss()
    try:
        async with connect(node.http_url, node.mcp_url) as client:
            per_source = client.accepts("search_memory", "sources")
            rerank_missing: str | None = None
            imported = saved = 0
            # Vectors in an import line are an admin's to give (docs/api.md); the dev node's callers are not admins.
            keyed = {"Authorization": f"Bearer {node.admin_key()}"} if given is not None else {}
            for size in sizes:
                step: dict[str, Any] = {"size": size}
                out["steps"].append(step)
                ids += await _grow(client, node, records, imported, size, options, phases, step, headers=keyed)
                if options.updates and client.accepts("update_memory", "content"):
                    await _versions(client, ids, options, phases, step)
                if not imported:  # a probe search needs memories to rerank
                    rerank_missing = await reranker_missing(client, node.ready)
                    if rerank_missing:
                        out["rerank_skipped"] = rerank_missing
                        note(f"  skipping reranked searches: {rerank_missing}")
                imported = size
                if "settle_before_search_seconds" not in step:
                    with phases(f"speed/{size}/settle"):
                        step["settle_before_search_seconds"] = await settle(client)
                await _searches(client, pool, options, phases, step, rerank=not rerank_missing, per_source=per_source)
                texts = [next(saves) for _ in range(options.saves)]
                with phases(f"speed/{size}/save"):
                    step["save"] = await timed(f"save @{size}", _saver(client), texts, warmup=0)
                saved += options.saves + step.get("during_import", {}).get("save", {}).get("count", 0)
                step["memories"] = imported + saved
                if node.grpc_address and options.consolidate:
                    with phases(f"speed/{size}/consolidate_all"):
                        step["consolidate_all"] = await _consolidate_all(node.grpc_address, step["memories"])
                step["rss_bytes"] = node.rss()
                step["rss_breakdown_bytes"] = breakdown(node.worker_pid(), node.home)
                step["disk_bytes"] = disk_usage(node.home)
                step["disk_bytes_per_memory"] = round(step["disk_bytes"]["total"] / max(1, step["memories"]), 1)
            out["queries_reused"] = pool.reused
        if options.backfill:  # a new edge device joins the node at its largest size and pulls it all
            with phases("speed/edge_backfill"):
                backfill = out.setdefault("edge_backfill", {})
                try:
                    await run_backfill(node, options.home_root / "backfill-edge", options.settings, backfill)
                except Exception as e:  # the speed figures above stand; the backfill's failure is recorded
                    backfill["error"] = repr(e)
                    note(f"  edge backfill failed: {e!r}")
        node = _restart_and_rebuild(node, options, phases, out)
    finally:
        node.stop_into(out)


def _reference(
    texts: Sequence[str], queries: Sequence[str], sizes: tuple[int, ...], options: SpeedOptions
) -> dict[str, Any]:
    """The in-process reference (bench/reference.py), before the node starts: the embedder alone over the texts
    the node will import, then a flat dense search at each size."""
    reference = embed_corpus(load_embedder(options.settings), texts)
    note(f"  reference: the embedder alone embeds {reference.per_second:.0f} texts/s")
    count = options.warmup + options.searches
    taken = [queries[i % len(queries)] for i in range(count)]
    searches = {str(size): flat_search(reference, size, taken, warmup=options.warmup) for size in sizes}
    return {"embed_per_second": round(reference.per_second, 1), "embedded": len(texts), "flat_search": searches}


def _given(
    texts: Sequence[str], queries: Sequence[str], sizes: tuple[int, ...], options: SpeedOptions, out: dict[str, Any]
) -> GivenCorpus:
    """Embeds the base texts once with the node's embedder (that is also the reference's embedder-alone rate; a
    later run with the same texts and model reads them from the bench's cache), and times the flat reference over
    the given vectors at each size up to FLAT_MAX."""
    embedder = load_embedder(options.settings)
    cached = given_cache(Path(options.settings["ENGRAM_MODEL_CACHE"]).parent, embedder.model_id, texts)
    if cached.exists():
        reference = Reference(embedder, np.load(cached), 0.0)
        note(f"  given vectors: {len(texts)} base texts read from {cached}")
    else:
        reference = embed_corpus(embedder, texts)
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, reference.vectors)
        note(f"  given vectors: {len(texts)} base texts embedded at {reference.per_second:.0f} texts/s")
    given = GivenCorpus(list(texts), reference.vectors, embedder.model_id)
    out["import_vectors"] = {
        "given": True, "base_texts": len(texts), "model": given.model,
        "how": "base texts embedded once in the bench; memory i beyond them is a pair of base texts whose dense "
        "vector is the normalised sum of theirs; the node makes every sparse vector and embeds queries and saves",
    }  # fmt: skip
    if options.reference:
        count = options.warmup + options.searches
        taken = [queries[i % len(queries)] for i in range(count)]
        flat = [size for size in sizes if size <= FLAT_MAX]
        matrix = Reference(reference.embedder, given.matrix(max(flat)), reference.seconds) if flat else None
        searches = {str(s): flat_search(matrix, s, taken, warmup=options.warmup) for s in flat if matrix is not None}
        out["reference"] = {"embedded": len(texts), "flat_search": searches, "flat_search_skipped_above": FLAT_MAX}
        if reference.seconds:  # embedded in this run, not read from the cache
            out["reference"]["embed_per_second"] = round(reference.per_second, 1)
    return given


def _given_lines(given: GivenCorpus) -> Callable[[int, int], Sequence[dict[str, Any]]]:
    """The import lines of memories start .. stop-1 with their given vectors, made chunk by chunk."""

    def lines(start: int, stop: int) -> Sequence[dict[str, Any]]:
        return GivenRecords(given, start, stop, [IMPORT_TAG])

    return lines


def _records(texts: Sequence[str]) -> Callable[[int, int], Sequence[dict[str, Any]]]:
    """The import lines of texts[start:stop] (the node embeds them)."""

    def lines(start: int, stop: int) -> list[dict[str, Any]]:
        return [{"content": text, "tags": [IMPORT_TAG], "source_id": f"speed:{i}"}
                for i, text in enumerate(texts[start:stop], start=start)]  # fmt: skip

    return lines


def disk_usage(home: Path) -> dict[str, int]:
    """Bytes on disk under the node's data dir: the log (nats-server's store), the index, and the total."""
    out: dict[str, int] = {"total": 0}
    for path in home.rglob("*"):
        try:
            if path.is_symlink() or not path.is_file():
                continue
            size = path.stat().st_blocks * 512
        except OSError:  # a segment file replaced meanwhile
            continue
        part = path.relative_to(home).parts[0]
        out[part] = out.get(part, 0) + size
        out["total"] += size
    return dict(sorted(out.items(), key=lambda item: -item[1]))


def _restart_and_rebuild(node: Node, options: SpeedOptions, phases: Phases, out: dict[str, Any]) -> Node:
    """Times a plain restart, then a start whose index was damaged (segments deleted) and is rebuilt from the log.

    Returns the node left running (the caller stops it).
    """
    home = node.home
    memories = out["steps"][-1].get("memories", 0)
    node.stop()
    with phases("speed/restart"):
        node = Node.start(home, options.settings, timeout=REBUILD_TIMEOUT)
    out["restart_seconds"] = round(node.started_seconds, 3)
    node.stop()
    for segment in (home / "index" / "segments").iterdir():
        shutil.rmtree(segment, ignore_errors=True)
    with phases("speed/rebuild"), Progress("rebuild the damaged index", 1, unit="runs") as bar:
        node = Node.start(home, options.settings, timeout=REBUILD_TIMEOUT)
        bar.advance()
    out["rebuild"] = {"memories": memories, "seconds": round(node.started_seconds, 3)}
    return node


async def _grow(
    client: EngramClient,
    node: Node,
    lines: Callable[[int, int], Sequence[dict[str, Any]]],
    start: int,
    size: int,
    options: SpeedOptions,
    phases: Phases,
    step: dict[str, Any],
    *,
    headers: dict[str, str],
) -> list[str]:
    """Imports memories start .. size-1 (``lines``) and waits until the index has them; records rates and RSS into
    ``step``.

    Returns the ids of the imported memories."""
    records = lines(start, size)
    probes = Probes(client, size) if options.probes and size == max(options.sizes) else None
    step["import_probed"] = probes is not None
    probing = asyncio.create_task(probes.run()) if probes else None
    try:
        with phases(f"speed/{size}/import"), Progress(f"import to {size}", len(records), unit="memories") as bar:
            result = await client.import_records(records, chunk=options.chunk, on_chunk=bar.advance, headers=headers)
        if result.rejected:
            note(f"  {len(result.rejected)} lines rejected, e.g. {result.rejected[:3]}")
        step["import"] = result.summary()
        with phases(f"speed/{size}/index"):
            waited = await client.wait_indexed(result.last_seq)
        step["index_catch_up_seconds"] = round(waited, 3)
        if probes and probing:
            await asyncio.sleep(PROBE_TAIL_SECONDS)
            probes.stop()
            await probing
            step["during_import"] = probes.summary()
            note(f"  during the import: longest search {step['during_import']['search']['max_ms']:.0f} ms, "
                 f"longest save {step['during_import']['save']['max_ms']:.0f} ms")  # fmt: skip
    finally:
        if probes and probing and not probing.done():
            probes.stop()
            await probing
    # Searchable throughput: from the first import request until the index has applied the last line.
    total = result.seconds + waited
    step["indexed_memories_per_second"] = round(result.imported / total, 1) if total > 0 else 0.0
    step["rss_bytes_after_import"] = node.rss()
    return result.ids


class Probes:
    """Searches and saves issued every PROBE_INTERVAL_SECONDS over REST until stopped; records how long each waited.

    REST on a client of their own, so that a connection lost in a stall counts as that call's error and leaves the
    run's MCP session alone (a lost read ends an MCP session: measured)."""

    def __init__(self, client: EngramClient, size: int) -> None:
        self._url, self._size = client.http_url, size
        self._stopped = asyncio.Event()
        self._waits: dict[str, list[float]] = {"search": [], "save": []}
        self._began = time.perf_counter()
        self._slowest: dict[str, list[tuple[float, float]]] = {"search": [], "save": []}  # (s into the import, wait)
        self._errors: dict[str, list[str]] = {"search": [], "save": []}

    def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        calls: set[asyncio.Task[None]] = set()
        headers = {"X-Engram-Agent-ID": "bench-probe"}
        async with httpx.AsyncClient(headers=headers, timeout=SETTLE_TIMEOUT_SECONDS) as http:
            tick = 0
            while not self._stopped.is_set():
                # One query throughout: its embedding is cached after the first, so the probes wait on the node,
                # not on the embedder, and take little from the import they watch.
                query = {"query": "what was decided about the import?", "limit": SEARCH_LIMIT, "rerank": False}
                text = {"content": f"Probe {self._size}-{tick}: saved during the import.", "tags": [PROBE_TAG]}
                calls.add(asyncio.create_task(self._one("search", http, "/v1/memories:search", query)))
                calls.add(asyncio.create_task(self._one("save", http, "/v1/memories", text)))
                tick += 1
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(PROBE_INTERVAL_SECONDS):
                        await self._stopped.wait()
            await asyncio.gather(*calls)

    async def _one(self, kind: str, http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
        began = time.perf_counter()
        try:
            (await http.post(f"{self._url}{path}", json=body)).raise_for_status()
        except Exception as e:  # a lost connection is a stall's worst outcome: recorded, not raised
            self._errors[kind].append(repr(e)[:200])
            return
        wait = time.perf_counter() - began
        self._waits[kind].append(wait)
        self._slowest[kind] = sorted([*self._slowest[kind], (began - self._began, wait)], key=lambda t: -t[1])[:10]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"interval_ms": PROBE_INTERVAL_SECONDS * 1000, "transport": "REST"}
        for kind, waits in self._waits.items():
            out[kind] = dataclasses.asdict(LatencySummary.of(waits)) | {"errors": len(self._errors[kind])}
            # When the longest waits began (seconds into the import) and how long they were (ms): a stall shows
            # as several calls waiting at one moment, to set beside the node's log (a graph build's swap, a GC).
            out[kind]["slowest"] = [[round(at, 1), round(wait * 1000)] for at, wait in self._slowest[kind]]
            if self._errors[kind]:
                out[kind]["error_examples"] = sorted(set(self._errors[kind]))[:3]
        return out


async def _versions(
    client: EngramClient, ids: list[str], options: SpeedOptions, phases: Phases, step: dict[str, Any]
) -> None:
    """Updates ``options.updates`` imported memories (timed), so that the searches that follow run with earlier
    versions in the versions index; then times point-in-time searches (as_of a moment before the updates)."""
    size = step["size"]
    stride = max(1, len(ids) // options.updates)
    chosen = ids[::stride][: options.updates]
    before = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    last_seq = 0

    async def update(memory_id: str) -> Any:
        nonlocal last_seq
        answer = await client.tool("update_memory", id=memory_id, content=f"Revised: {memory_id}", tags=[VERSION_TAG])
        last_seq = max(last_seq, int(answer.get("seq", 0)))
        return answer

    with phases(f"speed/{size}/update"):
        step["update"] = await timed(f"update @{size}", update, chosen, warmup=0)
    with phases(f"speed/{size}/index"):
        await client.wait_indexed(last_seq)
    step["versions"] = len(chosen)
    if client.accepts("search_memory", "as_of"):
        count = max(1, options.searches // DIAGNOSTIC_SHARE)
        queries = [f"Revised {memory_id}" for memory_id in chosen[: options.warmup + count]]

        async def as_of(query: str) -> Any:
            return await client.search(query, limit=SEARCH_LIMIT, rerank=False, as_of=before)

        with phases(f"speed/{size}/settle"):
            step["settle_before_search_seconds"] = await settle(client)
        with phases(f"speed/{size}/search_as_of"):
            step["search_as_of"] = await timed(f"search_as_of @{size}", as_of, queries, warmup=options.warmup)


async def _consolidate_all(address: str, memories: int) -> dict[str, Any]:
    """Times one `all` consolidation job (expire, dedupe, contradictions, decay, enrich_backfill, team summaries)
    over the namespace, through the consolidation service's gRPC API, and counts what it flagged per 1,000
    memories: the proposals written (contradictions and updates, at most the node's cap a run) and every candidate
    found (those left for later runs too)."""
    from engram.grpc.clients import ConsolidationClient
    from engram.model import Caller

    client = ConsolidationClient(address, timeout=3600)
    caller = Caller("default", "bench", source="bench", scopes=frozenset({"read", "write"}))
    started = time.perf_counter()
    try:
        job = await client.run_job(caller, "all")
    finally:
        await client.close()
    seconds = time.perf_counter() - started
    found = (job.result or {}).get("contradictions") or {}
    flagged = int(found.get("flagged", 0))
    candidates = flagged + int(found.get("deferred", 0)) + int(found.get("rejected_by_judge", 0))
    per_thousand = {"flags_per_1000": round(1000 * flagged / max(1, memories), 3),
                    "candidates_per_1000": round(1000 * candidates / max(1, memories), 3)}  # fmt: skip
    note(f"  consolidate all: {seconds:.1f} s, {job.state}: {job.summary} ({per_thousand['flags_per_1000']} flags per "
         f"1,000 memories, {per_thousand['candidates_per_1000']} candidates)")  # fmt: skip
    return {"seconds": round(seconds, 3), "state": job.state, "result": job.result, "memories": memories,
            **per_thousand}  # fmt: skip


async def _searches(
    client: EngramClient,
    pool: QueryPool,
    options: SpeedOptions,
    phases: Phases,
    step: dict[str, Any],
    *,
    rerank: bool,
    per_source: bool,
) -> None:
    """Timed search series at one size: plain (MCP and REST, query by query in turn), reranked (if possible), then
    one retriever at a time."""
    size = step["size"]
    with phases(f"speed/{size}/search"):
        queries = pool.take(2 * (options.warmup + options.searches))
        step["search"], step["search_rest"] = await _timed_mcp_and_rest(client, queries, size, warmup=options.warmup)
    step["search_mcp_minus_rest_ms"] = {
        key: round(step["search"][key] - step["search_rest"][key], 2) for key in ("p50_ms", "p95_ms")
    }
    series: list[tuple[str, Callable[[str], Awaitable[Any]], int, int]] = []
    if rerank:
        series.append(("search_rerank", searcher(client, rerank=True), options.warmup, options.searches))
    if per_source:  # diagnostics: where the time of a search goes (the node is warm by now)
        n = max(1, options.searches // DIAGNOSTIC_SHARE)
        series += [(f"search_{s}_only", searcher(client, rerank=False, sources=[s]), 0, n) for s in DIAGNOSTIC_SOURCES]
    for name, call, warmup, count in series:
        with phases(f"speed/{size}/{name}"):
            step[name] = await timed(f"{name} @{size}", call, pool.take(warmup + count), warmup=warmup)
    if "search_rerank" in step:
        step["rerank_p95_delta_ms"] = step["search_rerank"]["p95_ms"] - step["search"]["p95_ms"]


async def _timed_mcp_and_rest(
    client: EngramClient, queries: Sequence[str], size: int, *, warmup: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same search over MCP and over REST, taking the queries in turn (each a fresh one) and alternating which
    goes first, so that the machine's noise falls on both alike; times all but the first ``warmup`` of each."""
    mcp, rest = searcher(client, rerank=False), _rest_searcher(client)
    durations: dict[str, list[float]] = {"mcp": [], "rest": []}
    errors: dict[str, list[str]] = {"mcp": [], "rest": []}
    pairs = len(queries) // 2
    with Progress(f"search MCP+REST @{size}", 2 * pairs, unit="calls") as bar:
        for i in range(pairs):
            calls = [("mcp", mcp, queries[2 * i]), ("rest", rest, queries[2 * i + 1])]
            for kind, call, query in calls if i % 2 == 0 else calls[::-1]:
                began = time.perf_counter()
                try:
                    await call(query)
                except (ToolCallError, httpx.HTTPError) as e:
                    errors[kind].append(e.text if isinstance(e, ToolCallError) else repr(e)[:200])
                else:
                    if i >= warmup:
                        durations[kind].append(time.perf_counter() - began)
                bar.advance()
    results = []
    for kind in ("mcp", "rest"):
        result = dataclasses.asdict(LatencySummary.of(durations[kind]))
        result["first_ms"] = [round(d * 1000, 1) for d in durations[kind][:5]]
        result["errors"] = len(errors[kind])
        if errors[kind]:
            result["error_examples"] = sorted(set(errors[kind]))[:5]
        results.append(result)
    return results[0], results[1]


def _rest_searcher(client: EngramClient) -> Callable[[str], Awaitable[Any]]:
    async def search(query: str) -> Any:
        return await client.rest_search(query, limit=SEARCH_LIMIT, rerank=False)

    return search


def _saver(client: EngramClient) -> Callable[[str], Awaitable[Any]]:
    async def save(text: str) -> Any:
        return await client.save(text, tags=[SAVE_TAG])

    return save
