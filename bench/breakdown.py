"""Where a search's milliseconds go (issue 35): every layer from the MCP request down to the flat in-process search
over the same vectors, timed in one process on a node of one size.

    python -m bench.breakdown --size 10000 [--home DIR] [--queries 150]

The corpus is imported once into ``--home`` by a node of its own (a later run with the same home reuses it). Then the
embedded node runs inside this process (``run_node``), and each layer is timed on fresh queries (none repeats, so no
layer reads the query-embedding cache), from the inside out: the reference (the node's embedder and one matmul over
the index's own vectors), the query's embedding, the retrievers in Qdrant, fusion and the hits' memories, the whole
reader, the search service's client, the gateway's operation, the answer's encoding, and REST and MCP over HTTP.
Each layer's p50 minus the one inside it is what that layer adds. The HTTP clients run in this process too: the
figures over HTTP include the client's own work, which MCP ``ping`` and REST ``/healthz`` measure alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.client import connect
from bench.datasets import load_beir, load_locomo, speed_corpus, speed_queries
from bench.node import Node, node_env
from bench.run import DEFAULT_BEIR, DEFAULT_LOCOMO, DEFAULT_MODEL_CACHE

IMPORT_CHUNK = 1000
IMPORTED_MARK = "breakdown-imported"
SEARCH_LIMIT = 10
NAMESPACE = "default"


class Queries:
    """Hands out each query once, so no timed search reads a cached embedding."""

    def __init__(self, queries: Sequence[str]) -> None:
        self._queries = iter(queries)

    def take(self, n: int) -> list[str]:
        taken = [q for _, q in zip(range(n), self._queries, strict=False)]
        if len(taken) < n:
            raise SystemExit("breakdown: out of distinct queries; ask for fewer (--queries)")
        return taken


def p50_p95(durations: Sequence[float], cpu: Sequence[float] = ()) -> dict[str, float]:
    """Wall time p50 and p95, and the median CPU time of this process (every thread: the node's, onnxruntime's and
    the client's) per call: on a loaded machine the wall time mostly measures the wait for a core, the CPU time the
    work."""
    ordered = sorted(durations)
    summary = {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 3),
        "n": len(ordered),
    }
    if cpu:
        summary["cpu_p50_ms"] = round(statistics.median(cpu) * 1000, 3)
    return summary


async def timed(queries: Sequence[str], call: Callable[[str], Awaitable[Any]], warmup: int) -> dict[str, float]:
    durations, cpu = [], []
    for i, query in enumerate(queries):
        began, began_cpu = time.perf_counter(), time.process_time()
        await call(query)
        if i >= warmup:
            durations.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
    return p50_p95(durations, cpu)


async def alternating(
    queries: Sequence[str], calls: dict[str, Callable[[str], Awaitable[Any]]], warmup: int
) -> dict[str, dict[str, float]]:
    """Each call timed as ``timed`` does, taking the queries in turns (each query once)."""
    durations: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for i, query in enumerate(queries):
        name = names[i % len(names)]
        began, began_cpu = time.perf_counter(), time.process_time()
        await calls[name](query)
        if i // len(names) >= warmup:
            durations[name].append(time.perf_counter() - began)
            cpu[name].append(time.process_time() - began_cpu)
    return {name: p50_p95(durations[name], cpu[name]) for name in calls}


def ensure_imported(home: Path, texts: Sequence[str], settings: dict[str, str]) -> None:
    """Imports ``texts`` into ``home`` through a node of its own, once."""
    mark = home / IMPORTED_MARK
    if mark.exists() and mark.read_text() == str(len(texts)):
        return
    node = Node.start(home, settings)
    try:

        async def load() -> None:
            async with connect(node.http_url, node.mcp_url) as client:
                records = [{"content": t, "source_id": f"breakdown:{i}"} for i, t in enumerate(texts)]
                result = await client.import_records(records, chunk=IMPORT_CHUNK)
                await client.wait_indexed(result.last_seq)

        asyncio.run(load())
    finally:
        node.stop()
    mark.write_text(str(len(texts)))


@contextlib.contextmanager
def captured() -> Iterator[dict[str, Any]]:
    """The search service that run_node builds, kept for this script."""
    from engram.services.search import server

    found: dict[str, Any] = {}
    build = server.build_service

    async def keep(*args: Any, **kwargs: Any) -> Any:
        found["search"] = await build(*args, **kwargs)
        return found["search"]

    server.build_service = keep  # type: ignore[assignment]
    try:
        yield found
    finally:
        server.build_service = build  # type: ignore[assignment]


async def breakdown(home: Path, settings: dict[str, str], queries: Queries, count: int, warmup: int) -> dict[str, Any]:
    from engram.config import Settings
    from engram.index import DENSE, QUESTIONS, SPARSE
    from engram.index import IndexQuery as IndexRequest
    from engram.model import Caller, SearchQuery
    from engram.services.gateway.backend import Backend
    from engram.services.gateway.mcp.answers import answer
    from engram.services.gateway.operations import Operations
    from engram.services.gateway.operations.cursors import CursorTracker
    from engram.services.node.node import run_node
    from engram.services.search.queries import query_kind

    config = Settings.from_env({**settings, "ENGRAM_HOME": str(home), "ENGRAM_PORT": "0"})
    n = warmup + count
    out: dict[str, Any] = {"search_in_process": config.search_in_process}
    with captured() as found:
        node = asyncio.create_task(run_node(config, announce=False))
        info_path = home / "node.json"
        while not info_path.exists() or "search" not in found:
            if node.done():
                node.result()
            await asyncio.sleep(0.1)
        info = json.loads(info_path.read_text())
        search = found["search"]
        reader, index, embedder = search.reader, search.index, search.embedder._inner
        while True:  # the index catches up with the log first
            try:
                reader._indexer.require_ready()
                break
            except Exception:
                await asyncio.sleep(0.2)
        caller = Caller(namespace=NAMESPACE, agent_id="bench", scopes=frozenset({"read", "write"}))

        # The reference: the node's embedder and one matmul over the index's own vectors.
        vectors: list[np.ndarray] = []
        async for _, batch in reader.scan(caller, _no_filter(), with_vectors=True):
            vectors.extend(np.frombuffer(v, dtype="<f4") for v in batch)
        matrix = np.vstack(vectors)
        out["memories"] = len(matrix)

        async def flat(query: str) -> None:
            q = embedder.embed([query])[0]
            scores = matrix @ q
            top = np.argpartition(-scores, SEARCH_LIMIT)[:SEARCH_LIMIT]
            top[np.argsort(-scores[top])]

        async def embed(query: str) -> None:
            embedder.embed([query])

        out["reference_flat"] = await timed(queries.take(n), flat, warmup)
        out["embed_query"] = await timed(queries.take(n), embed, warmup)

        # The retrievers in Qdrant, fusion and the hits' memories: the reader's _retrieve, stage by stage.
        stage_times: dict[str, list[float]] = {"retrievers": [], "sparse_encode": [], "fuse": [], "hydrate": []}
        stage_cpu: dict[str, list[float]] = {name: [] for name in stage_times}
        flt = _no_filter()
        for i, query in enumerate(queries.take(n)):
            dense = embedder.embed([query])[0].tolist()
            t0, c0 = time.perf_counter(), time.process_time()
            terms = reader._sparse.query(query)
            t1, c1 = time.perf_counter(), time.process_time()
            request = IndexRequest(namespace=NAMESPACE, filter=flt, limit=reader._config.candidates, dense=dense,
                                   sparse=terms, questions=dense if index.holds_questions() else None,
                                   with_payload=False)  # fmt: skip
            lists = index.search(request)
            t2, c2 = time.perf_counter(), time.process_time()
            ranked = {name: [(s.id, s.score) for s in r] for name, r in lists.items()}
            from engram.services.search.fusion import reach

            fused = reader._fuse(ranked, query_kind(query), reach(len(terms.indices), reader._point_count()))
            t3, c3 = time.perf_counter(), time.process_time()
            keep = max(SEARCH_LIMIT, reader._config.newer_depth) + SEARCH_LIMIT  # as the reader keeps them, no rerank
            reader._candidates(NAMESPACE, fused[:keep], None)
            t4, c4 = time.perf_counter(), time.process_time()
            if i >= warmup:
                for name, seconds, cpu in (("sparse_encode", t1 - t0, c1 - c0), ("retrievers", t2 - t1, c2 - c1),
                                           ("fuse", t3 - t2, c3 - c2), ("hydrate", t4 - t3, c4 - c3)):  # fmt: skip
                    stage_times[name].append(seconds)
                    stage_cpu[name].append(cpu)
        out |= {name: p50_p95(values, stage_cpu[name]) for name, values in stage_times.items()}
        out["sources"] = [s for s in (DENSE, SPARSE, QUESTIONS) if s != QUESTIONS or index.holds_questions()]

        async def in_reader(query: str) -> None:
            await reader.search(caller, SearchQuery(query, limit=SEARCH_LIMIT, rerank=False))

        backend = Backend(ingest_addr=info["grpc_address"], search_addr=info["grpc_address"])
        local = Backend(ingest_addr=info["grpc_address"], search_addr=info["grpc_address"], searcher=reader)
        try:
            from engram.services.gateway.schemas.requests import SearchRequest

            async def over_grpc(query: str) -> None:
                await backend.search_client.search(caller, query, limit=SEARCH_LIMIT, flt=_no_filter(), rerank=False)

            ops, ops_local = Operations(backend, CursorTracker(), config), Operations(local, CursorTracker(), config)

            async def operation(query: str) -> None:
                await ops.search(caller, SearchRequest(query=query, limit=SEARCH_LIMIT, rerank=False))

            async def operation_in_process(query: str) -> None:
                await ops_local.search(caller, SearchRequest(query=query, limit=SEARCH_LIMIT, rerank=False))

            # In turns, query by query: the machine's load changes within a run.
            out |= await alternating(
                queries.take(4 * n),
                {"reader_search": in_reader, "grpc_client_search": over_grpc, "operation_search": operation,
                 "operation_search_in_process": operation_in_process},
                warmup,
            )  # fmt: skip
            result = await ops.search(caller, SearchRequest(query="what did they decide", limit=SEARCH_LIMIT,
                                                            rerank=False))  # fmt: skip
            out["hits_in_sample"] = len(result.hits)
            encode: list[float] = []
            rest_json: list[float] = []
            for _ in range(200):
                t0 = time.process_time()
                answer(result)
                t1 = time.process_time()
                result.model_dump_json()
                t2 = time.process_time()
                encode.append(t1 - t0)
                rest_json.append(t2 - t1)
            out["mcp_answer_encode"] = p50_p95(encode, encode)
            out["rest_json_encode"] = p50_p95(rest_json, rest_json)
        finally:
            await backend.close()
            await local.close()

        async with (
            httpx.AsyncClient(base_url=info["http_url"], timeout=30) as http,
            connect(info["http_url"], info["http_url"] + "/mcp") as client,
        ):

            async def rest(query: str) -> None:
                r = await http.post(
                    "/v1/memories:search", json={"query": query, "limit": SEARCH_LIMIT, "rerank": False}
                )
                r.raise_for_status()

            async def mcp(query: str) -> None:
                await client.search(query, limit=SEARCH_LIMIT, rerank=False)

            async def healthz(_: str) -> None:
                (await http.get("/healthz")).raise_for_status()

            async def ping(_: str) -> None:
                await client.tool("ping")

            out["rest_http_search"] = await timed(queries.take(n), rest, warmup)
            out["mcp_http_search"] = await timed(queries.take(n), mcp, warmup)
            out["rest_http_healthz"] = await timed(["-"] * n, healthz, warmup)
            out["mcp_http_ping"] = await timed(["-"] * n, ping, warmup)
        node.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await node
    return out


def _no_filter() -> Any:
    from engram.model import SearchFilter

    return SearchFilter()


def table(out: dict[str, Any]) -> str:
    rows = [
        ("reference: embed + matmul over the index's vectors", "reference_flat"),
        ("query embedding alone", "embed_query"),
        ("BM25 query terms", "sparse_encode"),
        ("retrievers in Qdrant (dense + BM25)", "retrievers"),
        ("fusion", "fuse"),
        ("hits' memories (payloads + vectors of the fused top 20)", "hydrate"),
        ("reader.search, whole (in process)", "reader_search"),
        ("search client over gRPC (the hop)", "grpc_client_search"),
        ("gateway operation over gRPC (pydantic results)", "operation_search"),
        ("gateway operation, search service in process", "operation_search_in_process"),
        ("MCP answer: compact JSON", "mcp_answer_encode"),
        ("REST answer: JSON", "rest_json_encode"),
        ("REST over HTTP, search", "rest_http_search"),
        ("MCP over HTTP, search", "mcp_http_search"),
        ("REST over HTTP, /healthz", "rest_http_healthz"),
        ("MCP over HTTP, ping", "mcp_http_ping"),
    ]
    lines = ["| layer | CPU p50 ms | wall p50 ms | wall p95 ms |", "|---|---|---|---|"]
    lines += [
        f"| {label} | {out[key].get('cpu_p50_ms', 0):.2f} | {out[key]['p50_ms']:.2f} | {out[key]['p95_ms']:.2f} |"
        for label, key in rows
        if key in out
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.breakdown", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--home", type=Path, default=None, help="data dir to reuse (default: a new temporary one)")
    parser.add_argument("--queries", type=int, default=150, help="timed queries per layer")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--beir", type=Path, default=DEFAULT_BEIR)
    parser.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    parser.add_argument("--import-only", action="store_true", help="only import the corpus into --home")
    args = parser.parse_args(argv)
    conversations, beir = load_locomo(args.locomo), load_beir(args.beir)
    texts = speed_corpus(beir, conversations, needed=args.size).texts[: args.size]
    queries = Queries(speed_queries(beir, conversations))
    settings = node_env(args.model_cache, {})
    home = args.home or Path(tempfile.mkdtemp(prefix="engram-breakdown-"))
    ensure_imported(home, texts, settings)
    if args.import_only:
        return 0
    out = asyncio.run(breakdown(home, settings, queries, args.queries, args.warmup))
    print(json.dumps(out, indent=1))
    print(table(out))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
