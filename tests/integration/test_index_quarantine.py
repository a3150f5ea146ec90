"""No log entry stops the index (real nats-server, both index adapters): an entry the index cannot apply is set
aside with its error, reported, kept across restarts and rebuilds, and can be retried or dropped; a storage that
refuses every write is waited out, never blamed on the entries."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from engram import model
from engram.ids import uuid7
from engram.index import MemoryIndex
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_server import QdrantServerIndex
from engram.log.events import MEMORY_PURGED, MEMORY_SAVED, event_body
from engram.log.nats import NatsLog
from engram.model import Caller, Memory, SearchFilter
from engram.process import metrics
from engram.process.health import INDEX, QUARANTINE, Health
from engram.process.natsd import NatsServer
from engram.services.search.indexer import SEARCH_SERVICE, Indexer
from tests.integration.test_log_and_index import DIM, _save, _vectors

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@dataclass
class Backend:
    name: str
    open: Callable[[], MemoryIndex]
    wipe: Callable[[], None]  # what an operator does to rebuild the index: delete it

    def close(self, index: MemoryIndex) -> None:
        if self.name == "edge":  # the server's client outlives the service (closed by the fixture)
            index.close()


@pytest.fixture(params=["edge", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "edge":
        yield Backend("edge", lambda: EdgeIndex(tmp_path / "index", dim=DIM), lambda: shutil.rmtree(tmp_path / "index"))
        return
    client = QdrantClient(location=":memory:")  # one server that outlives the service: reopening finds the data
    collection = f"test_{uuid7().replace('-', '')}"
    yield Backend(
        "server",
        lambda: QdrantServerIndex(client, collection=collection, dim=DIM),
        lambda: client.delete_collection(collection),
    )
    client.close()


async def _poison(log: NatsLog, namespace: str, *, metadata: dict | None = None, dense: list[float] | None = None):
    """A save written straight into the log (no edge checks it) that the index refuses: a dense vector of the
    wrong size (both adapters), or metadata the index cannot hold (NaN: Qdrant Edge)."""
    memory = Memory(id=uuid7(), namespace=namespace, content="poison", owner_agent="a", metadata=metadata or {})
    body = event_body(MEMORY_SAVED, memory, Caller(namespace, "a"), vectors=_vectors("poison", dense or [1, 0, 0]))
    return memory.id, (await log.append(namespace, MEMORY_SAVED, body, msg_id=f"{memory.id}:1")).seq


def _contents(index: MemoryIndex, namespace: str) -> set[str]:
    return {p["content"] for p in index.recent(namespace, SearchFilter(), 10)}


async def _started(log: NatsLog, index: MemoryIndex, health: Health | None = None) -> Indexer:
    indexer = Indexer(log, index, health=health)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    return indexer


async def test_an_entry_the_index_refuses_is_set_aside_and_every_namespace_goes_on(
    nats_server: NatsServer, backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    log = await NatsLog.connect(nats_server.url)
    health = Health()
    index = backend.open()
    indexer = await _started(log, index, health)
    try:
        await _save(log, "before", namespace="a")
        bad_id, bad_seq = await _poison(log, "b")
        await _save(log, "same namespace after", namespace="b")
        _, last = await _save(log, "other namespace after", namespace="c")
        with caplog.at_level(logging.WARNING):
            await indexer.wait_for(last, timeout=20)
        assert _contents(index, "a") == {"before"}
        assert _contents(index, "b") == {"same namespace after"}
        assert _contents(index, "c") == {"other namespace after"}
        [aside] = indexer.quarantine
        assert (aside.seq, aside.namespace, aside.memory_id, aside.event) == (bad_seq, "b", bad_id, MEMORY_SAVED)
        assert "dim" in aside.error
        problem = health.problem(QUARANTINE)
        assert problem is not None and problem.degraded and f"log sequence {bad_seq}" in problem.detail
        assert health.ready(SEARCH_SERVICE) and health.problem(INDEX) is None  # degraded, still serving
        assert indexer.sample()[metrics.INDEX_QUARANTINED] == 1
        assert f"log entry {bad_seq}" in caplog.text and "set aside" in caplog.text
    finally:
        await indexer.stop()
        backend.close(index)

    # A restart keeps the quarantine, and the counts agree (no rebuild for an entry set aside).
    index = backend.open()
    health = Health()
    indexer = await _started(log, index, health)
    try:
        assert [item.seq for item in indexer.quarantine] == [bad_seq]
        assert health.problem(QUARANTINE) is not None and health.ready(SEARCH_SERVICE)
        assert _contents(index, "c") == {"other namespace after"}
        _, last = await _save(log, "after the restart", namespace="b")
        await indexer.wait_for(last, timeout=10)
    finally:
        await indexer.stop()
        backend.close(index)
        await log.close()


async def test_a_log_already_holding_a_nan_recovers_on_start_and_after_the_index_is_deleted(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    """The reported case: metadata {"x": NaN}, which Qdrant Edge cannot hold, already in the log of a node that is
    upgraded (its index built by a version that retried it for ever is deleted, as the docs say to rebuild)."""
    log = await NatsLog.connect(nats_server.url)
    await _save(log, "first", namespace="a")
    _, bad_seq = await _poison(log, "b", metadata={"x": float("nan")}, dense=[0, 1, 0, 0])
    _, last = await _save(log, "second", namespace="c")
    for _ in range(2):  # a first start on this log, then a start after the index was deleted
        index = EdgeIndex(tmp_path / "index", dim=DIM)
        health = Health()
        indexer = await _started(log, index, health)
        try:
            assert indexer.applied_seq >= last
            assert [item.seq for item in indexer.quarantine] == [bad_seq]
            assert "NaN" in indexer.quarantine.entries[0].error or "Float" in indexer.quarantine.entries[0].error
            assert _contents(index, "a") == {"first"} and _contents(index, "c") == {"second"}
            assert health.ready(SEARCH_SERVICE)
        finally:
            await indexer.stop()
            index.close()
        shutil.rmtree(tmp_path / "index")
    await log.close()


async def test_a_quarantined_entry_is_retried_after_an_upgrade_and_dropped_on_request(
    nats_server: NatsServer, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = await NatsLog.connect(nats_server.url)
    health = Health()
    index = backend.open()
    indexer = await _started(log, index, health)
    try:
        # Metadata deeper than this version serves (written by an older one); an upgrade may serve it.
        deep = Memory(id=uuid7(), namespace="ns", content="deep", owner_agent="a", metadata=_nested(25))
        body = event_body(MEMORY_SAVED, deep, Caller("ns", "a"), vectors=_vectors("deep", [0, 0, 1, 0]))
        deep_seq = (await log.append("ns", MEMORY_SAVED, body, msg_id=f"{deep.id}:1")).seq
        _, bad_seq = await _poison(log, "ns")
        _, last = await _save(log, "good", namespace="ns")
        await indexer.wait_for(last, timeout=20)
        assert [item.seq for item in indexer.quarantine] == [deep_seq, bad_seq]

        applied, failed = await indexer.retry_quarantined([deep_seq, bad_seq])
        assert applied == [] and [item.seq for item in failed] == [deep_seq, bad_seq]  # nothing changed yet

        monkeypatch.setattr(model, "MAX_METADATA_DEPTH", 40)  # the upgrade
        applied, failed = await indexer.retry_quarantined([deep_seq])
        assert [item.seq for item in applied] == [deep_seq] and failed == []
        assert _contents(index, "ns") == {"deep", "good"}
        assert [item.seq for item in indexer.quarantine] == [bad_seq]

        dropped = await indexer.drop_quarantined([bad_seq])
        assert [item.seq for item in dropped] == [bad_seq]
        assert len(indexer.quarantine) == 0 and health.problem(QUARANTINE) is None
    finally:
        await indexer.stop()
        backend.close(index)

    index = backend.open()  # the retry and the drop were stored; the counts agree with the log
    indexer = await _started(log, index)
    try:
        assert len(indexer.quarantine) == 0
        assert _contents(index, "ns") == {"deep", "good"}
    finally:
        await indexer.stop()
        backend.close(index)

    backend.wipe()  # a rebuild finds what still cannot be applied, and sets it aside again
    index = backend.open()
    indexer = await _started(log, index)
    try:
        assert [item.seq for item in indexer.quarantine] == [bad_seq]
    finally:
        await indexer.stop()
        backend.close(index)
        await log.close()


async def test_a_purge_of_the_memory_takes_its_entries_out_of_the_quarantine(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = await _started(log, index)
    try:
        bad_id, bad_seq = await _poison(log, "ns")
        _, last = await _save(log, "good", namespace="ns")
        await indexer.wait_for(last, timeout=20)
        assert bad_seq in indexer.quarantine
        await log.erase([bad_seq])  # what ingest's purge does, then it records the purge
        body = {"event": MEMORY_PURGED, "namespace": "ns", "memory_id": bad_id, "agent": "admin", "erased": 1}
        purged = (await log.append("ns", MEMORY_PURGED, body, msg_id=f"{bad_id}:purged")).seq
        await indexer.wait_for(purged, timeout=10)
        assert len(indexer.quarantine) == 0
    finally:
        await indexer.stop()
        index.close()
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = await _started(log, index)
    try:  # the counts still agree with the log: no rebuild
        assert not (tmp_path / "index.damaged").exists() and _contents(index, "ns") == {"good"}
    finally:
        await indexer.stop()
        index.close()
        await log.close()


async def test_a_storage_that_refuses_every_write_is_waited_out_not_blamed_on_the_entries(
    nats_server: NatsServer,
) -> None:
    log = await NatsLog.connect(nats_server.url)
    client = QdrantClient(location=":memory:")
    index = QdrantServerIndex(client, collection="down", dim=DIM)
    health = Health()
    indexer = await _started(log, index, health)
    try:
        _, first = await _save(log, "applied", namespace="ns")
        await indexer.wait_for(first, timeout=10)
        client.close()  # the index's storage goes away: every write fails, the bookkeeping's too
        await _save(log, "waits", namespace="ns")
        await _wait_until(lambda: health.problem(INDEX) is not None, timeout=10)
        problem = health.problem(INDEX)
        assert problem is not None and "paused" in problem.detail and not health.ready(SEARCH_SERVICE)
        await asyncio.sleep(1.0)  # more than an entry's attempts take
        assert indexer.applied_seq == first and len(indexer.quarantine) == 0
    finally:
        await indexer.stop()
        await log.close()


async def _wait_until(condition: Callable[[], bool], *, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


def _nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


async def test_an_entry_whose_sparse_vector_would_make_the_edge_index_panic_is_set_aside(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    """A sparse vector with fewer values than indices makes Qdrant Edge's Rust code panic (pyo3's PanicException,
    a BaseException) mid-write: it used to end the indexer's task while readiness still said ready. Such a vector
    is refused before it reaches the index (a panic that still happens is an IndexPanic, set aside the same way)."""
    log = await NatsLog.connect(nats_server.url)
    health = Health()
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = await _started(log, index, health)
    try:
        memory = Memory(id=uuid7(), namespace="b", content="panic", owner_agent="a")
        vectors = {**_vectors("panic", [1.0] + [0.0] * (DIM - 1)), "sparse": {"indices": [1, 2, 3], "values": [0.5]}}
        body = event_body(MEMORY_SAVED, memory, Caller("b", "a"), vectors=vectors)
        bad_seq = (await log.append("b", MEMORY_SAVED, body, msg_id=f"{memory.id}:1")).seq
        _, last = await _save(log, "after the panic", namespace="c")
        await indexer.wait_for(last, timeout=20)
        assert _contents(index, "c") == {"after the panic"}
        [aside] = indexer.quarantine
        assert aside.seq == bad_seq and "sparse vector" in aside.error
        assert health.ready(SEARCH_SERVICE) and health.problem(QUARANTINE) is not None
    finally:
        await indexer.stop()
        index.close()
        await log.close()
