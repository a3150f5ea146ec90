"""Still derived from the log: deleting both indexes and restarting rebuilds every version, status, chain,
point-in-time answer and read count exactly as they were."""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from engram.grpc.clients import IngestClient, SearchClient
from engram.model import Caller, MemoryInput, SearchFilter
from engram.services.consolidation.expiry import ExpiryJob
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

EVERY_STATUS = ["active", "archived", "expired", "superseded"]


def _caller(namespace: str, agent: str, admin: bool = False) -> Caller:
    scopes = frozenset({"read", "write", "admin"} if admin else {"read", "write"})
    return Caller(namespace=namespace, agent_id=agent, source="test", scopes=scopes)


async def _mutate(node: NodeHandle, namespace: str) -> tuple[list[str], list[float], int]:
    """Every kind of change, over a few memories; returns their ids, some moments between changes, the last seq."""
    ingest, search = IngestClient(node.grpc_address), SearchClient(node.grpc_address)
    a, b, root = _caller(namespace, "claude-code"), _caller(namespace, "gemini-cli"), _caller(namespace, "ops", True)
    moments: list[float] = []
    try:
        ids = []
        for n in range(6):
            saved = await ingest.save(a if n % 2 else b, MemoryInput(content=f"Fact number {n} about the rebuild"))
            ids.append(saved.memory.id)
        moments.append(time.time())
        await asyncio.sleep(0.02)
        for n in range(3):
            await ingest.update(b, ids[0], MemoryInput(content=f"Fact zero, revision {n}"), ["content"])
            moments.append(time.time())
            await asyncio.sleep(0.02)
        await ingest.update(a, ids[1], MemoryInput(tags=["kept"], importance="high"), ["tags", "importance"])
        await ingest.delete(b, ids[2])
        chain = await ingest.supersede(a, ids[3], replacement=MemoryInput(content="Fact three, replaced"))
        await ingest.supersede(a, ids[3], replacement=MemoryInput(content="Fact three, replaced again"))
        ids += [chain.new.id]
        # Newest wins: another agent's supersession, one undone by the owner and one kept.
        undone = await ingest.supersede(b, ids[5], replacement=MemoryInput(content="Fact five, by another agent"))
        await ingest.unsupersede(a, ids[5])
        kept = await ingest.supersede(b, ids[1], replacement=MemoryInput(content="Fact one, by another agent"))
        ids += [undone.new.id, kept.new.id]
        soon = await ingest.save(b, MemoryInput(content="Short-lived fact", expires_at=time.time() + 60))
        ids.append(soon.memory.id)
        await search.get(b, soon.memory.id, min_seq=soon.seq)  # the job finds what the index has applied
        await ExpiryJob(search, ingest, interval=3600, clock=lambda: time.time() + 120).run_once()
        purged = await ingest.save(a, MemoryInput(content="To be purged"))
        await ingest.delete(root, purged.memory.id, purge=True)
        for memory_id in ids[:3]:
            await search.get(a, memory_id, min_seq=0)
        moments.append(time.time())
        deadline = time.monotonic() + 20
        while (await search.get(a, ids[0], for_update=True)).access_count < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        last = (await search.stats()).log_last_seq
        listed = await search.list(a, limit=100, flt=SearchFilter(statuses=EVERY_STATUS), min_seq=last)
        return sorted({*ids, *(m.id for m in listed.memories)}), moments, last
    finally:
        await search.close()
        await ingest.close()


async def _snapshot(node: NodeHandle, namespace: str, ids: list[str], moments: list[float], last: int) -> Any:
    search = SearchClient(node.grpc_address)
    a = _caller(namespace, "claude-code")
    try:
        memories = {i: await search.get(a, i, min_seq=last, with_history=True, for_update=True) for i in ids}
        histories = {i: await search.history(a, i) for i in ids}
        points = {}
        for i in ids:
            for t in moments:
                try:
                    points[(i, t)] = await search.memory_at(a, i, t)
                except Exception as e:
                    points[(i, t)] = repr(e)
        listing = await search.list(a, limit=100, flt=SearchFilter(statuses=EVERY_STATUS))
        found = await search.search(a, "fact zero revision", limit=10, flt=SearchFilter(as_of=moments[1]))
        stats = await search.memory_stats(a)
        return {
            "memories": memories,
            "histories": histories,
            "points": points,
            "listing": [m.id for m in listing.memories],
            "as_of": sorted((h.memory.id, h.memory.version) for h in found.hits),  # ties may swap: same set
            "stats": (stats.total, stats.by_agent, stats.by_type, stats.by_status),
        }
    finally:
        await search.close()


async def test_deleting_the_indexes_rebuilds_every_version_status_and_chain_exactly(
    tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "home"
    namespace = f"rb{uuid.uuid4().hex[:8]}"
    node = start_node(home, model_cache)
    try:
        ids, moments, last = await _mutate(node, namespace)
        before = await _snapshot(node, namespace, ids, moments, last)
    finally:
        assert node.stop() == 0
    assert len(ids) == 11 and before["as_of"]  # 6 saved, 4 replacements, 1 expired; the purged one is gone
    statuses = sorted(m.status for m in before["memories"].values())
    assert statuses == ["active"] * 6 + ["archived", "expired"] + ["superseded"] * 3
    undone = before["memories"][ids[5]]  # ids are sorted: the six saves come first
    [former] = [m for m in before["memories"].values() if m.content == "Fact five, by another agent"]
    assert (undone.status, undone.superseded_by, undone.version, former.relations) == ("active", "", 3, [])
    assert [v.event for v in before["histories"][ids[5]].versions][-1] == "memory_unsuperseded"
    assert max(m.version for m in before["memories"].values()) == 4
    shutil.rmtree(home / "index")
    shutil.rmtree(home / "index-versions")
    node = start_node(home, model_cache)
    try:
        after = await _snapshot(node, namespace, ids, moments, last)
    finally:
        assert node.stop() == 0
    for part in before:
        assert after[part] == before[part], part
