"""The log and the index when things go wrong (real nats-server, real Qdrant Edge): NATS down, damaged index,
unservable entries, full disk."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from engram.errors import DiskFull, InvalidArgument, Unavailable
from engram.ids import uuid7
from engram.index import point_id
from engram.index.qdrant_edge import EdgeIndex
from engram.log import LogEntry, subject
from engram.log.events import MEMORY_SAVED, event_body
from engram.log.nats import NatsLog
from engram.model import MAX_METADATA_DEPTH, Caller, Memory, MemoryInput, SearchFilter
from engram.process.health import DISK, INDEX, LOG, Health
from engram.process.natsd import NatsServer
from engram.process.runtime import DiskGuard, HealthLogState
from engram.services.search.indexer import Indexer
from engram.validation import Limits, raw_json_depth, validate
from tests.integration.test_log_and_index import DIM, _save, _vectors

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


async def _wait(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_append_fails_fast_while_nats_is_down_and_readiness_says_why(nats_server: NatsServer) -> None:
    health = Health()
    log = await NatsLog.connect(nats_server.url, state=HealthLogState(health), reconnect_wait=0.1)
    try:
        await log.append("ns", "memory_saved", {"x": 1}, msg_id="before")
        nats_server.stop()
        await _wait(lambda: health.problem(LOG) is not None)
        started = time.monotonic()
        with pytest.raises(Unavailable, match="unreachable right now; nothing was saved") as refused:
            await log.append("ns", "memory_saved", {"x": 2}, msg_id="during")
        assert time.monotonic() - started < 1.0
        assert refused.value.retry_after > 0
        nats_server.respawn()
        await _wait(lambda: health.problem(LOG) is None)
        appended = await log.append("ns", "memory_saved", {"x": 3}, msg_id="after")
        assert appended.seq == 2  # the refused write was never stored, not even later
    finally:
        await log.close()


async def test_indexer_follows_again_at_once_after_nats_restarts(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url, reconnect_wait=0.1)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        await _save(log, "before the restart")
        nats_server.stop()
        nats_server.respawn()
        await _wait(lambda: log.connected)
        _, seq = await _save(log, "after the restart")
        await indexer.wait_for(seq, timeout=3)  # not the ordered consumer's heartbeat timeout
        assert index.count("ns") == 2
    finally:
        await indexer.stop()
        index.close()
        await log.close()


async def test_follows_resume_by_themselves_when_the_reconnected_server_cannot_serve_them_yet(
    nats_server: NatsServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reconnection to a server that cannot create consumers yet (in a cluster: while the stream's new leader is
    elected) used to leave the indexer with no subscription at all, for good; every follow retries until it can."""
    caplog.set_level(logging.WARNING, logger="engram.log.nats")
    log = await NatsLog.connect(nats_server.url, reconnect_wait=0.1)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    seen: list[int] = []

    async def collect(entry: LogEntry) -> None:
        seen.append(entry.seq)

    follow = await log.follow(1, collect)
    try:
        for i in range(2):
            await _save(log, f"before {i}")
        await indexer.wait_for(2, timeout=10)
        await _wait(lambda: seen == [1, 2])
        nats_server.stop()
        nats_server.store_dir.rename(nats_server.store_dir.with_name("nats-aside"))
        nats_server.store_dir.mkdir()  # the server comes back without the stream
        nats_server.respawn()
        await _wait(lambda: log.connected)
        await asyncio.sleep(1.5)  # several failed attempts
        await log.ensure_stream()  # the stream is back (empty: its entries 1 and 2 were delivered already)
        for i in range(3):
            memory = Memory(id=uuid7(), namespace="ns", content=f"after {i}", owner_agent="a", version=1)
            body = event_body(MEMORY_SAVED, memory, Caller("ns", "a"), vectors=_vectors(memory.content, [1, 0, 0, 0]))
            await log.jetstream.publish(subject("ns", MEMORY_SAVED), json.dumps(body).encode())
        await indexer.wait_for(3, timeout=10)
        assert index.count("ns") == 3
        await _wait(lambda: seen[-1] == 3)
        assert seen == [1, 2, 3]  # each entry once, in order
        assert "following the log again from seq 3 failed" in caplog.text
    finally:
        await follow.unsubscribe()
        await indexer.stop()
        index.close()
        await log.close()


async def _filled_index(log: NatsLog, path: Path, n: int) -> list[str]:
    index = EdgeIndex(path, dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    ids = [(await _save(log, f"memory {i}"))[0] for i in range(n)]
    await indexer.wait_for(await log.last_seq(), timeout=10)
    await indexer.stop()
    index.close()
    return ids


async def test_index_missing_points_is_rebuilt_from_the_log(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    try:
        ids = await _filled_index(log, tmp_path / "index", 30)
        damaged = EdgeIndex(tmp_path / "index", dim=DIM)
        lost: list[Any] = [point_id("ns", memory_id) for memory_id in ids[:7]]  # the stored points of 7 memories
        damaged._shard.core._shard.update(qe.UpdateOperation.delete_points(lost))  # type: ignore[union-attr]
        assert damaged.count("ns") == 23
        damaged.close()

        health = Health()
        index = EdgeIndex(tmp_path / "index", dim=DIM)
        indexer = Indexer(log, index, health=health)
        await indexer.start()
        await indexer.wait_caught_up(timeout=30)
        assert index.count("ns") == 30
        assert health.problem(INDEX) is None
        assert (tmp_path / "index.damaged").exists()  # kept aside, not deleted
        await indexer.stop()
        index.close()
    finally:
        await log.close()


async def test_index_without_payload_indexes_is_rebuilt(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    try:
        await _filled_index(log, tmp_path / "index", 5)
        for segment in (tmp_path / "index" / "segments").iterdir():  # segments deleted, WAL left
            shutil.rmtree(segment)
        index = EdgeIndex(tmp_path / "index", dim=DIM)
        assert index.check() is not None
        indexer = Indexer(log, index)
        await indexer.start()
        await indexer.wait_caught_up(timeout=30)
        assert index.check() is None
        assert len(index.recent("ns", SearchFilter(), 10)) == 5  # order_by works again
        await indexer.stop()
        index.close()
    finally:
        await log.close()


async def test_an_unservable_log_entry_is_skipped_and_the_rest_served(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        good, _ = await _save(log, "a good memory")
        # Written by an older version that accepted anything: metadata 300 levels deep.
        deep = Memory(id=uuid7(), namespace="ns", content="deep", owner_agent="a", metadata=_nested(300))
        body = event_body(MEMORY_SAVED, deep, Caller("ns", "a"), vectors=_vectors("deep", [1, 0, 0, 0]))
        await log.append("ns", MEMORY_SAVED, body, msg_id=f"{deep.id}:1")
        _, last = await _save(log, "another good memory")
        await indexer.wait_for(last, timeout=5)
        assert {p["content"] for p in index.recent("ns", SearchFilter(), 10)} == {
            "a good memory",
            "another good memory",
        }
        assert index.skipped_count() == 1
    finally:
        await indexer.stop()
        index.close()

    # The counts still agree on the next start: no rebuild for a skipped entry.
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        assert not (tmp_path / "index.damaged").exists()
        assert index.retrieve("ns", [good])
    finally:
        await indexer.stop()
        index.close()
        await log.close()


async def test_min_seq_beyond_the_end_of_the_log_is_refused_at_once(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    try:
        await _save(log, "one")
        started = time.monotonic()
        with pytest.raises(InvalidArgument, match="beyond the end of the log"):
            await indexer.check_min_seq(9999)
        assert time.monotonic() - started < 1.0
        await indexer.check_min_seq(1)
    finally:
        await indexer.stop()
        index.close()
        await log.close()


def test_metadata_nested_deeper_than_the_limit_is_refused_before_anything_is_stored() -> None:
    import json

    limits = Limits(max_content_bytes=1000, max_metadata_bytes=16384)
    fine = validate(MemoryInput("c", metadata_json=json.dumps(_nested(MAX_METADATA_DEPTH))), limits)
    assert fine.metadata
    for depth in (MAX_METADATA_DEPTH + 1, 300):
        with pytest.raises(InvalidArgument, match=f"nested {depth} levels deep; at most {MAX_METADATA_DEPTH}"):
            validate(MemoryInput("c", metadata_json=json.dumps(_nested(depth))), limits)
    # Deeper than Python's own parser could take: refused on the text, never parsed.
    with pytest.raises(InvalidArgument, match="nested 5000 levels deep"):
        validate(MemoryInput("c", metadata_json='{"a":' + "[" * 4999 + "]" * 4999 + "}"), Limits(1000, 10**6))


def test_raw_json_depth_ignores_brackets_inside_strings() -> None:
    assert raw_json_depth('{"a": "[[[{{{", "b": [1, {"c": "\\"]]"}]}') == 3
    assert raw_json_depth('"just text"') == 0


def test_disk_guard_refuses_writes_below_the_reserve_and_recovers(tmp_path: Path) -> None:
    health = Health()
    full = DiskGuard(tmp_path, 1 << 62, health)  # a reserve no disk has
    with pytest.raises(DiskFull, match="writes resume by themselves"):
        full.require_space()
    problem = health.problem(DISK)
    assert problem is not None and problem.affects("engram.v1.Ingest") and not problem.affects("engram.v1.Search")
    DiskGuard(tmp_path, 0, health).require_space()
    assert health.problem(DISK) is None
