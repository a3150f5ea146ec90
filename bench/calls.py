"""Timed calls against a bench node, shared by the speed, edge, sync and console runs: distinct queries, the wait for
a node to settle after writes, and a sequential series of timed searches or saves."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx

from bench.client import EngramClient, ToolCallError
from bench.metrics import LatencySummary
from bench.progress import Progress

SEARCH_LIMIT = 10
IMPORT_TAG = "bench-speed"
DIAGNOSTIC_SHARE = 4  # each single-retriever series is a quarter of the main one (no warm-up: the node is warm)
# The indexer builds the vector graph of new points in its first idle second (services/search/indexer.py), in a
# child process since issue 27; before, that build held the GIL and the whole node stopped answering (seconds per
# 10k new points; 17-27 s at 50k), and a request sent just before it ended could lose its connection (uvicorn's
# keep-alive timer fired first). The swap of the built index still holds it briefly. A settle waits longer than the
# idle second, then asks /healthz on fresh connections until it answers within SETTLE_RESPONSIVE_SECONDS, then sends
# one untimed search. Its time is recorded: how long the node stopped.
SETTLE_SECONDS = 1.5
SETTLE_RESPONSIVE_SECONDS = 0.5
SETTLE_TIMEOUT_SECONDS = 600.0


class QueryPool:
    """Hands out distinct queries so that no timed search hits the query-embedding cache; once all are taken, it
    hands them out again as numbered variants ("... (2)"), still distinct."""

    def __init__(self, queries: Sequence[str]) -> None:
        if not queries:
            raise ValueError("the speed run needs at least one query")
        self._queries, self._next, self.reused = list(queries), 0, 0

    def take(self, n: int) -> list[str]:
        taken = []
        for _ in range(n):
            query, round_ = self._queries[self._next % len(self._queries)], self._next // len(self._queries)
            if round_:
                self.reused += 1
                query = f"{query} ({round_ + 1})"
            taken.append(query)
            self._next += 1
        return taken


async def settle(client: EngramClient) -> float:
    """Lets the node build the vector graph of what was just written; returns the wait in seconds."""
    started = time.perf_counter()
    await asyncio.sleep(SETTLE_SECONDS)
    limits = httpx.Limits(max_keepalive_connections=0)  # a fresh connection each time: no keep-alive to lose
    async with asyncio.timeout(SETTLE_TIMEOUT_SECONDS), httpx.AsyncClient(limits=limits, timeout=None) as http:
        while True:
            asked = time.perf_counter()
            (await http.get(f"{client.http_url}/healthz")).raise_for_status()
            if time.perf_counter() - asked < SETTLE_RESPONSIVE_SECONDS:
                break
    await client.search("settle", limit=1, rerank=False)
    return round(time.perf_counter() - started, 3)


def searcher(
    client: EngramClient, *, rerank: bool, sources: list[str] | None = None
) -> Callable[[str], Awaitable[Any]]:
    async def search(query: str) -> Any:
        return await client.search(query, limit=SEARCH_LIMIT, rerank=rerank, sources=sources)

    return search


async def timed(
    label: str, call: Callable[[str], Awaitable[Any]], inputs: Sequence[str], *, warmup: int
) -> dict[str, Any]:
    """Runs ``call`` on each input in turn (one client, sequential); times all but the first ``warmup``."""
    durations: list[float] = []
    errors: list[str] = []
    extra: dict[str, Any] = {}
    with Progress(label, len(inputs), unit="calls") as bar:
        for i, item in enumerate(inputs):
            began = time.perf_counter()
            try:
                answer = await call(item)
            except ToolCallError as e:
                errors.append(e.text)
                bar.advance()
                continue
            elapsed = time.perf_counter() - began
            if i >= warmup:
                durations.append(elapsed)
                if isinstance(answer, dict) and "reranked" in answer:
                    extra["reranked"] = extra.get("reranked", 0) + bool(answer["reranked"])
            bar.advance()
    result = dataclasses.asdict(LatencySummary.of(durations)) | extra
    result["first_ms"] = [round(d * 1000, 1) for d in durations[:5]]  # a cold start shows in the first calls
    result["errors"] = len(errors)
    if errors:
        result["error_examples"] = sorted(set(errors))[:5]
    return result
