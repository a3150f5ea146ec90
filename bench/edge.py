"""The edge node's footprint (issue 10, point 6) on a real `engram edge` process, offline (its cluster does not
answer), with the edge profile `engram edge` applies: at each size, resident memory (the node, split into its
anonymous and file-backed parts, and its nats-server) and search latency; then its start-up time with the largest
index, and its memory and latency after that restart."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.calls import DIAGNOSTIC_SHARE, IMPORT_TAG, QueryPool, searcher, settle, timed
from bench.client import EngramClient, connect
from bench.node import Node, free_port
from bench.progress import Phases, Progress, note
from bench.smaps import breakdown

DEVICE = "bench-edge-footprint"
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class EdgeOptions:
    """Where the edge node lives, how it runs, and how much to measure at each size."""

    home_root: Path
    settings: dict[str, str]
    chunk: int
    sizes: tuple[int, ...]
    searches: int
    warmup: int


def footprint(node: Node) -> dict[str, int]:
    """Node and nats-server RSS in bytes (Node.rss), plus the node's anonymous and file-backed shares (file pages:
    the index's memory-mapped files and the libraries, clean page cache the kernel can take back) and its peak RSS
    since it started (VmHWM: a bulk import's buffers, before they are handed back)."""
    rss = node.rss()
    status = _status(node.worker_pid())
    shares = {"node_anon": "RssAnon", "node_file": "RssFile", "node_peak": "VmHWM"}
    return rss | {key: status.get(field, 0) for key, field in shares.items()}


async def run_edge(texts: Sequence[str], queries: Sequence[str], options: EdgeOptions, phases: Phases,
                   out: dict[str, Any]) -> None:  # fmt: skip
    """One offline edge node; for each size: import up to it, settle, time searches, measure; then restart it."""
    sizes = tuple(sorted(set(options.sizes)))
    if len(texts) < max(sizes):
        raise ValueError(f"the edge run needs {max(sizes)} texts, the corpus has {len(texts)}")
    command = ("edge", "--upstream", f"http://127.0.0.1:{free_port()}", "--device", DEVICE)  # nothing listens there
    home = options.home_root / "edge-footprint"
    pool = QueryPool(queries)
    out |= {"sizes": list(sizes), "command": "engram edge (offline)", "steps": []}
    with phases("edge/start"):
        node = Node.start(home, options.settings, command=command)
    out["start_seconds_empty"] = round(node.started_seconds, 3)
    out["rss_bytes_empty"] = footprint(node)
    try:
        async with connect(node.http_url, node.mcp_url) as client:
            imported = 0
            for size in sizes:
                step: dict[str, Any] = {"size": size}
                out["steps"].append(step)
                with phases(f"edge/{size}/import"):
                    step["import"] = await _import(client, texts, imported, size, options.chunk)
                imported = size
                with phases(f"edge/{size}/search"):
                    step["settle_before_search_seconds"] = await settle(client)
                    step["search"] = await timed(f"edge search @{size}", searcher(client, rerank=False),
                                                  pool.take(options.warmup + options.searches),
                                                  warmup=options.warmup)  # fmt: skip
                rss = step["rss_bytes"] = footprint(node)
                step["rss_breakdown_bytes"] = breakdown(node.worker_pid(), node.home)
                note(f"  edge @{size}: node {rss['node'] / MIB:.0f} MiB, nats {rss['nats'] / MIB:.0f} MiB, "
                     f"p95 {step['search']['p95_ms']:.1f} ms")  # fmt: skip
        node.stop()
        with phases("edge/restart"):
            node = Node.start(home, options.settings, command=command)
        out["restart_seconds"] = round(node.started_seconds, 3)
        out["rss_bytes_restarted"] = footprint(node)
        async with connect(node.http_url, node.mcp_url) as client:
            with phases("edge/restart/search"):
                count = max(1, options.searches // DIAGNOSTIC_SHARE)
                out["search_restarted"] = await timed("edge search after restart", searcher(client, rerank=False),
                                                       pool.take(count), warmup=0)  # fmt: skip
        out["rss_bytes_restarted_searched"] = footprint(node)
        out["rss_breakdown_restarted_bytes"] = breakdown(node.worker_pid(), node.home)
        out["queries_reused"] = pool.reused
    finally:
        node.stop_into(out)


async def _import(client: EngramClient, texts: Sequence[str], start: int, size: int, chunk: int) -> dict[str, Any]:
    """Imports texts[start:size] and waits until the index has them."""
    records = [
        {"content": text, "tags": [IMPORT_TAG], "source_id": f"edge:{i}"}
        for i, text in enumerate(texts[start:size], start=start)
    ]
    began = time.monotonic()
    with Progress(f"edge import to {size}", len(records), unit="memories") as bar:
        result = await client.import_records(records, chunk=chunk, on_chunk=bar.advance)
    await client.wait_indexed(result.last_seq)
    seconds = time.monotonic() - began
    return result.summary() | {"indexed_seconds": round(seconds, 1),
                               "indexed_memories_per_second": round(result.imported / seconds, 1)}  # fmt: skip


def _status(pid: int) -> dict[str, int]:
    """The kB figures of /proc/<pid>/status, in bytes."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB":
                out[key] = int(parts[0]) * 1024
    except (OSError, ValueError):
        pass
    return out
