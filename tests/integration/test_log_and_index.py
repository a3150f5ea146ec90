"""The log (real JetStream) and the index (real Qdrant Edge): ordering, dedup, idempotent catch-up, filters."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import IndexPoint, IndexQuery
from engram.index.qdrant_edge import EdgeIndex
from engram.log.events import MEMORY_SAVED, event_body
from engram.log.nats import NatsLog
from engram.model import Caller, Memory, SearchFilter
from engram.process.natsd import NatsServer
from engram.services.search.indexer import Indexer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
DIM = 4
BM25 = Bm25Encoder()


def _vectors(text: str, dense: list[float]) -> dict:
    import base64

    import numpy as np

    sparse = BM25.document(text)
    return {
        "dense": base64.b64encode(np.asarray(dense, dtype="<f4").tobytes()).decode(),
        "sparse": {"indices": sparse.indices, "values": sparse.values},
    }


async def _save(log: NatsLog, text: str, *, namespace: str = "ns", version: int = 1, memory_id: str = "",
                tags: list[str] | None = None, dense: list[float] | None = None) -> tuple[str, int]:  # fmt: skip
    memory = Memory(id=memory_id or uuid7(), namespace=namespace, content=text, owner_agent="a", version=version,
                    tags=tags or [], created_at=1.0, updated_at=1.0)  # fmt: skip
    body = event_body(MEMORY_SAVED, memory, Caller(namespace, "a"), vectors=_vectors(text, dense or [1, 0, 0, 0]))
    return memory.id, (await log.append(namespace, MEMORY_SAVED, body, msg_id=f"{memory.id}:{version}")).seq


async def test_append_returns_consecutive_sequences_and_dedups_by_msg_id(nats_server: NatsServer) -> None:
    log = await NatsLog.connect(nats_server.url)
    try:
        first = (await log.append("ns", "memory_saved", {"x": 1}, msg_id="m1")).seq
        second = (await log.append("ns", "memory_saved", {"x": 2}, msg_id="m2")).seq
        again = await log.append("ns", "memory_saved", {"x": 1}, msg_id="m1")
        entry = await log.read(second)
    finally:
        await log.close()
    assert (first, second, again.seq, again.duplicate) == (1, 2, 1, True)
    assert entry is not None and entry.body == {"x": 2, "seq": 2} and entry.event == "memory_saved"


async def test_two_writers_never_reuse_a_sequence(nats_server: NatsServer) -> None:
    a, b = await NatsLog.connect(nats_server.url), await NatsLog.connect(nats_server.url)
    try:
        appended = await asyncio.gather(
            *(w.append("ns", "e", {"i": i}, msg_id=f"w{i}") for i, w in enumerate([a, b] * 20))
        )
        seqs = [x.seq for x in appended]
        bodies = [await a.read(s) for s in seqs]
    finally:
        await a.close()
        await b.close()
    assert sorted(seqs) == list(range(1, 41))
    assert all(body is not None and body.body["seq"] == s for body, s in zip(bodies, seqs, strict=True))


async def test_indexer_catches_up_from_its_last_applied_sequence(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    try:
        first_id, _ = await _save(log, "alpha memory")
        index = EdgeIndex(tmp_path / "index", dim=DIM)
        indexer = Indexer(log, index)
        await indexer.start()
        await indexer.wait_caught_up(timeout=30)
        await indexer.stop()
        index.close()
        _, last = await _save(log, "beta memory")  # written while the search service was down

        index = EdgeIndex(tmp_path / "index", dim=DIM)
        assert index.applied_seq() == 1
        indexer = Indexer(log, index)
        await indexer.start()
        await indexer.wait_caught_up(timeout=30)
        assert indexer.applied_seq == last
        assert index.count("ns") == 2
        await _save(log, "alpha memory", memory_id=first_id, version=1)  # a replayed copy: still one point
        _, newest = await _save(log, "gamma memory")
        await indexer.wait_for(newest, timeout=5)
        assert index.count("ns") == 3
        await indexer.stop()
        index.close()
    finally:
        await log.close()


async def test_older_version_never_overwrites_newer(nats_server: NatsServer, tmp_path: Path) -> None:
    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        memory_id, _ = await _save(log, "version two", version=2)
        _, seq = await _save(log, "version one", memory_id=memory_id, version=1)
        await indexer.wait_for(seq, timeout=5)
        assert index.retrieve("ns", [memory_id])[0]["content"] == "version two"
    finally:
        await indexer.stop()
        index.close()
        await log.close()


async def test_wait_for_a_sequence_that_never_comes_is_bounded(nats_server: NatsServer, tmp_path: Path) -> None:
    from engram.errors import Unavailable

    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        with pytest.raises(Unavailable, match="not caught up"):
            await indexer.wait_for(99, timeout=0.2)
    finally:
        await indexer.stop()
        index.close()
        await log.close()


def test_index_filters_by_namespace_tags_owner_type_and_time(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", dim=DIM)

    def point(namespace: str, text: str, *, tags: list[str], owner: str, kind: str, ts: float) -> IndexPoint:
        memory_id = uuid7()
        payload = {"id": memory_id, "namespace": namespace, "content": text, "tags": tags, "owner_agent": owner,
                   "memory_type": kind, "status": "active", "_created_ts": ts}  # fmt: skip
        return IndexPoint(memory_id, payload, [1, 0, 0, 0], BM25.document(text))

    index.upsert([
        point("a", "deploy notes", tags=["ops", "prod"], owner="x", kind="fact", ts=10),
        point("a", "deploy plan", tags=["ops"], owner="y", kind="decision", ts=20),
        point("b", "deploy secret", tags=["ops", "prod"], owner="x", kind="fact", ts=30),
    ])  # fmt: skip

    def contents(flt: SearchFilter, namespace: str = "a") -> set[str]:
        lists = index.search(IndexQuery(namespace, flt, 10, dense=[1, 0, 0, 0], sparse=BM25.query("deploy")))
        return {s.payload["content"] for ranked in lists.values() for s in ranked}

    assert contents(SearchFilter()) == {"deploy notes", "deploy plan"}
    assert contents(SearchFilter(tags=["ops", "prod"])) == {"deploy notes"}
    assert contents(SearchFilter(owner_agent="y")) == {"deploy plan"}
    assert contents(SearchFilter(memory_types=["decision", "preference"])) == {"deploy plan"}
    assert contents(SearchFilter(created_after=15)) == {"deploy plan"}
    assert contents(SearchFilter(created_before=15)) == {"deploy notes"}
    assert contents(SearchFilter(), namespace="b") == {"deploy secret"}
    assert [p["content"] for p in index.recent("a", SearchFilter(), 10)] == ["deploy plan", "deploy notes"]
    index.close()


async def test_a_log_that_never_pauses_still_gets_its_index_maintained(
    nats_server: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device backfilling from its cluster never leaves the indexer idle: maintenance (Qdrant Edge's graph build)
    runs every BUSY_MAINTAIN_ENTRIES entries anyway, instead of once over everything at the end."""
    from engram.services.search import indexer as indexer_module

    monkeypatch.setattr(indexer_module, "IDLE_SECONDS", 3600.0)  # never idle during the test
    monkeypatch.setattr(indexer_module, "BUSY_MAINTAIN_ENTRIES", 40)
    monkeypatch.setattr(indexer_module, "MAX_BATCH", 20)  # however far behind it falls, it applies 20 at a time
    log = await NatsLog.connect(nats_server.url)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    maintained: list[int] = []
    real_maintain = index.maintain

    def counting_maintain() -> None:
        maintained.append(index.count("ns"))
        real_maintain()

    monkeypatch.setattr(index, "maintain", counting_maintain)
    indexer = Indexer(log, index)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    try:
        for i in range(200):  # as a backfill pulls them: one after the other, the indexer following live
            _, seq = await _save(log, f"pulled memory {i}")
        await indexer.wait_for(seq, timeout=30)
        assert len(maintained) >= 2, maintained  # a build still running in its child may let a turn pass
        assert maintained[0] < 100, "maintenance waited for the end"
    finally:
        await indexer.stop()
        index.close()
        await log.close()


async def test_a_rebuild_from_the_log_builds_no_graph_on_the_way(
    nats_server: NatsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catching up at start (a rebuild) runs no maintenance every BUSY_MAINTAIN_ENTRIES entries: reads wait for
    the catch-up, and the builds would take the cores it needs; the graph is built in the first idle second."""
    from engram.services.search import indexer as indexer_module

    monkeypatch.setattr(indexer_module, "IDLE_SECONDS", 3600.0)
    monkeypatch.setattr(indexer_module, "BUSY_MAINTAIN_ENTRIES", 40)
    monkeypatch.setattr(indexer_module, "MAX_BATCH", 20)
    log = await NatsLog.connect(nats_server.url)
    for i in range(120):
        _, seq = await _save(log, f"logged memory {i}")
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    maintained: list[int] = []
    monkeypatch.setattr(index, "maintain", lambda: maintained.append(index.count("ns")))
    indexer = Indexer(log, index)
    await indexer.start()
    try:
        await indexer.wait_caught_up(timeout=30)
        assert indexer.applied_seq >= seq and maintained == []
    finally:
        await indexer.stop()
        index.close()
        await log.close()


@pytest.mark.parametrize("between", [2, 40])
async def test_a_conditional_append_reads_every_entry_another_writer_made_since_its_base(
    nats_server: NatsServer, between: int
) -> None:
    """Based on the end this writer last saw (seen_seq), a conditional append finds the entry another replica
    appended since, whether it reads the gap one by one or in pages."""
    from engram.log import Overtaken

    mine, other = await NatsLog.connect(nats_server.url), await NatsLog.connect(nats_server.url)
    try:
        await _save(mine, "my own save")
        based_on = mine.seen_seq()
        assert based_on is not None and based_on == await mine.last_seq()
        for i in range(between):
            await _save(other, f"another replica's save {i}", memory_id=f"m{i}")
        target = f"m{between // 2}"
        with pytest.raises(Overtaken) as caught:
            await mine.append("ns", MEMORY_SAVED, {"x": 1}, msg_id="late", based_on=based_on,
                              stale=lambda entry: entry.body.get("memory_id") == target)  # fmt: skip
        assert caught.value.entry.body["memory_id"] == target
        appended = await mine.append("ns", MEMORY_SAVED, {"x": 1}, msg_id="late", based_on=based_on,
                                     stale=lambda entry: False)  # fmt: skip
        assert appended.seq == based_on + between + 1
    finally:
        await mine.close()
        await other.close()


async def test_every_append_is_scrubbed_and_message_ids_are_per_namespace(nats_server: NatsServer) -> None:
    """Issue 22: the one scrubbing step every write path passes (a path that forgot to scrub stores no secret), and
    JetStream's duplicate window never drops one namespace's write as a copy of another's."""
    log = await NatsLog.connect(nats_server.url)
    token = "ghp_" + "Vb7Kq2Xr9Lm4Nt6Pw1Zs8Dy3Fh5Jc0Ga2Ue4"
    vectors = {"model": "m", "dense": "AAAA", "sparse_model": "s", "sparse": {"indices": [1], "values": [1.0]}}
    body = {"event": "memory_saved", "memory_id": "m1", "memory": {"content": f"push with {token}",
            "metadata": {"password": "hunter2"}}, "source": token, "vectors": vectors}  # fmt: skip
    try:
        first = await log.append("alpha", "memory_saved", body, msg_id="m1:1")
        other = await log.append("beta", "memory_saved", {"event": "memory_saved", "memory_id": "m1"}, msg_id="m1:1")
        again = await log.append("alpha", "memory_saved", body, msg_id="m1:1")
        stored = await log.read(first.seq)
    finally:
        await log.close()

    assert stored is not None and token not in json.dumps(stored.body) and "hunter2" not in json.dumps(stored.body)
    assert "[REDACTED:" in stored.body["memory"]["content"] and stored.body["vectors"] == vectors
    assert not other.duplicate and other.seq == first.seq + 1
    assert again.duplicate and again.seq == first.seq
