"""Edge sync figures (issue 10), on real `engram edge` and `engram serve` processes:

- converge: an edge node makes N mutations offline (saves, then updates of some of them) while its cluster does
  not exist yet; the cluster starts on the port the edge was told; the figure is the time from the cluster being
  ready until both sides agree (outbox empty, cursor at the cluster log's end, every save on the cluster);
- backfill: a new device joins a cluster (the speed run's node at its largest size) and pulls everything; the
  figures are the pull rate (entries per second, until the cursor reaches the cluster's end), the time until the
  device's index has applied it all, and the device's RSS then.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.calls import DIAGNOSTIC_SHARE, QueryPool, searcher, settle, timed
from bench.client import connect
from bench.edge import footprint
from bench.node import Node, free_port
from bench.progress import Phases, Progress, note

DEFAULT_OFFLINE_MUTATIONS = 10_000
UPDATE_SHARE = 0.1  # of the offline mutations, updates of memories saved offline just before
UPDATE_CONCURRENCY = 8
POLL_SECONDS = 0.2
CONVERGE_TIMEOUT = 3600.0
# The edge is told to try again quickly, so the figure measures sync, not how long the back-off had grown while
# the cluster did not exist yet.
EDGE_SETTINGS = {"ENGRAM_SYNC_RETRY_MAX_SECONDS": "1", "ENGRAM_SYNC_INTERVAL_SECONDS": "1"}


@dataclass
class SyncOptions:
    home_root: Path
    settings: dict[str, str]
    chunk: int
    mutations: int = DEFAULT_OFFLINE_MUTATIONS


async def run_converge(texts: Sequence[str], options: SyncOptions, phases: Phases, out: dict[str, Any]) -> None:
    updates = int(options.mutations * UPDATE_SHARE)
    saves = options.mutations - updates
    if len(texts) < saves:
        raise ValueError(f"the sync run needs {saves} texts, the corpus has {len(texts)}")
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    out |= {"offline_mutations": options.mutations, "saves": saves, "updates": updates}
    with phases("sync/edge_start"):
        edge = Node.start(options.home_root / "sync-edge", {**options.settings, **EDGE_SETTINGS},
                          command=("edge", "--upstream", upstream, "--device", "bench-edge"))  # fmt: skip
    cluster: Node | None = None
    try:
        with phases("sync/offline_mutations"):
            began = time.monotonic()
            async with connect(edge.http_url, edge.mcp_url) as client:
                with Progress("offline saves", saves, unit="memories") as bar:
                    result = await client.import_records(
                        [{"content": t} for t in texts[:saves]], chunk=options.chunk, on_chunk=bar.advance
                    )
            await _update(edge.http_url, result.ids[:updates])
            out["offline_seconds"] = round(time.monotonic() - began, 1)
        out["edge_rss_bytes_offline"] = edge.rss()
        with phases("sync/cluster_start"):
            cluster = Node.start(options.home_root / "sync-cluster", options.settings, port=port)
        with phases("sync/converge"):
            began = time.monotonic()
            await _converged(edge, cluster, saves, options.mutations)
            seconds = time.monotonic() - began
        out["converge_seconds"] = round(seconds, 1)
        out["mutations_per_second"] = round(options.mutations / seconds, 1) if seconds else 0.0
        out["edge_state"] = _state(edge)
        note(f"  converged {options.mutations} offline mutations in {seconds:.1f}s")
    finally:
        for node in (edge, cluster):
            if node is not None:
                node.stop()


async def run_backfill(cluster: Node, home: Path, settings: dict[str, str], out: dict[str, Any]) -> None:
    """A new device pulls everything of ``cluster``."""
    stats = httpx.get(f"{cluster.http_url}/v1/stats", timeout=60).json()
    began = time.monotonic()
    edge = Node.start(home, {**settings, **EDGE_SETTINGS},
                      command=("edge", "--upstream", cluster.http_url, "--device", "bench-backfill"))  # fmt: skip
    try:
        out["edge_start_seconds"] = round(edge.started_seconds, 3)
        with Progress("backfill", 1, unit="entries") as bar:
            while True:
                state = _state(edge)
                if state.get("cursor") and state.get("cursor") == state.get("cluster_seq") and not state.get("outbox"):
                    break
                bar.total = max(int(state.get("cluster_seq") or 1), 1)
                bar.advance(int(state.get("cursor") or 0) - bar.done)
                await asyncio.sleep(POLL_SECONDS)
        pulled = time.monotonic() - began
        state = _state(edge)
        while (await _count(edge.http_url)) < stats["total"]:
            await asyncio.sleep(POLL_SECONDS)
        searchable = time.monotonic() - began
        out |= {
            "cluster_memories": stats["total"],
            "entries_pulled": state.get("pulled_total"),
            "pull_seconds": round(pulled, 1),
            "entries_per_second": round(int(state.get("pulled_total") or 0) / pulled, 1) if pulled else 0.0,
            "searchable_seconds": round(searchable, 1),
            "edge_rss_bytes": edge.rss(),  # while the index still builds the graphs of what it took in
        }
        note(f"  backfilled {stats['total']} memories in {pulled:.1f}s (searchable after {searchable:.1f}s)")
        await _settled_footprint(edge, out)
    finally:
        edge.stop()


async def _settled_footprint(edge: Node, out: dict[str, Any]) -> None:
    """The backfilled device once its index has built its graphs (as the edge section measures after an import):
    its memory (and peak), and the latency of searches on what it pulled."""

    async with connect(edge.http_url, f"{edge.http_url}/mcp") as client:
        out["settle_seconds"] = await settle(client)
        out["edge_rss_bytes_settled"] = footprint(edge)
        queries = QueryPool([f"what did the team decide about item {i}?" for i in range(200)])
        out["search_settled"] = await timed("backfilled edge search", searcher(client, rerank=False),
                                             queries.take(200 // DIAGNOSTIC_SHARE + 20), warmup=20)  # fmt: skip
    rss = out["edge_rss_bytes_settled"]
    note(f"  backfilled edge, settled: node {rss['node'] / 2**20:.0f} MiB (peak {rss['node_peak'] / 2**20:.0f}), "
         f"nats {rss['nats'] / 2**20:.0f} MiB, p95 {out['search_settled']['p95_ms']:.1f} ms")  # fmt: skip


async def _update(url: str, ids: Sequence[str]) -> None:
    """Updates each memory once, a few at a time (what an agent correcting itself does)."""
    gate = asyncio.Semaphore(UPDATE_CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, timeout=60, headers={"X-Engram-Agent-ID": "bench"}) as http:

        async def one(n: int, memory_id: str) -> None:
            async with gate:
                answer = await http.patch(f"/v1/memories/{memory_id}", json={"content": f"Corrected note {n}"})
                answer.raise_for_status()

        with Progress("offline updates", len(ids), unit="memories") as bar:
            for start in range(0, len(ids), 100):
                part = ids[start : start + 100]
                await asyncio.gather(*(one(start + i, m) for i, m in enumerate(part)))
                bar.advance(len(part))


async def _converged(edge: Node, cluster: Node, saves: int, mutations: int) -> None:
    deadline = time.monotonic() + CONVERGE_TIMEOUT
    with Progress("converge", mutations, unit="changes") as bar:
        while time.monotonic() < deadline:
            state = _state(edge)
            bar.advance(min(int(state.get("pushed_total") or 0), mutations) - bar.done)
            done = int(state.get("pushed_total") or 0) >= mutations and not state.get("outbox")
            if done and state.get("cursor") == state.get("cluster_seq") and await _count(cluster.http_url) >= saves:
                return
            await asyncio.sleep(POLL_SECONDS)
    raise TimeoutError(f"the edge did not converge within {CONVERGE_TIMEOUT:.0f}s: {_state(edge)}")


async def _count(url: str) -> int:
    async with httpx.AsyncClient(timeout=60) as http:
        answer = await http.get(f"{url}/v1/stats")
    return int(answer.json().get("total", 0)) if answer.status_code == 200 else 0


def _state(node: Node) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads((node.home / "sync" / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in state.items() if k not in ("errors", "rejected")}
