"""The indexer's side of agents working together, on a real log (JetStream) and real indexes (Qdrant Edge, and
qdrant-client's local mode for the server adapter): handoff events as memory versions, handoff fields and
deadlines, the agent registry (persisted with the applied sequence, rebuilt identically from the log), and
indexes of an earlier layout rebuilt from the log."""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import EXPIRES_TS, HANDOFF_STATUS, HANDOFF_TO, MemoryIndex
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_server import QdrantServerIndex
from engram.log.events import (
    HANDOFF_ACCEPTED,
    HANDOFF_COMPLETED,
    HANDOFF_CREATED,
    MEMORY_ACCESSED,
    MEMORY_SAVED,
    MEMORY_UPDATED,
    event_body,
)
from engram.log.nats import NatsLog
from engram.model import Caller, Handoff, Memory, SearchFilter, format_time
from engram.process.natsd import NatsServer
from engram.services.search import indexer as indexer_module
from engram.services.search.agents import AgentRecord
from engram.services.search.indexer import LAYOUT, Indexer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
DIM = 4
BM25 = Bm25Encoder()
T0 = 1_763_900_000.0
NS = "team-ns"


def vectors(text: str) -> dict[str, object]:
    sparse = BM25.document(text)
    return {
        "dense": base64.b64encode(np.asarray([1.0, 0.0, 0.0, 0.0], dtype="<f4").tobytes()).decode(),
        "sparse": {"indices": sparse.indices, "values": sparse.values},
    }


async def append(log: NatsLog, event: str, memory: Memory, caller: Caller) -> int:
    body = event_body(event, memory, caller, vectors=vectors(memory.content))
    return (await log.append(memory.namespace, event, body, msg_id=f"{memory.id}:{memory.version}")).seq


def new_memory(content: str, owner: str, at: float, **fields: Any) -> Memory:
    return Memory(id=uuid7(), namespace=NS, content=content, owner_agent=owner, created_at=at, updated_at=at, **fields)


def next_version(memory: Memory, at: float, **changes: Any) -> Memory:
    return replace(memory, version=memory.version + 1, updated_at=at, **changes)


@pytest.fixture
async def log(nats_server: NatsServer) -> AsyncIterator[NatsLog]:
    connected = await NatsLog.connect(nats_server.url)
    yield connected
    await connected.close()


@dataclass
class Running:
    indexer: Indexer
    index: MemoryIndex
    versions: MemoryIndex


async def start(log: NatsLog, index: MemoryIndex, versions: MemoryIndex) -> Running:
    indexer = Indexer(log, index, versions=versions)
    await indexer.start()
    await indexer.wait_caught_up(timeout=30)
    return Running(indexer, index, versions)


def edge_pair(path: Path) -> tuple[MemoryIndex, MemoryIndex]:
    return EdgeIndex(path / "index", dim=DIM), EdgeIndex(path / "index-versions", dim=DIM)


async def stop(running: Running) -> None:
    await running.indexer.stop()
    running.index.close()
    running.versions.close()


def rebuilds(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "rebuilding it from the log" in r.getMessage()]


ALICE = Caller(NS, "claude-code", source="claude-code", device="laptop", team="auth")
ALICE_ON_DESKTOP = Caller(NS, "claude-code", source="cursor", device="desktop", team="auth")
BOB = Caller(NS, "gemini-cli", source="gemini-cli", device="desktop")


async def test_handoff_events_create_and_version_a_memory_and_count_as_creations(
    log: NatsLog, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    plain = new_memory("The auth service signs tokens with RS256", "claude-code", T0)
    created = new_memory(
        "Review the token refresh flow", "claude-code", T0 + 1, memory_type="handoff",
        handoff=Handoff("gemini-cli", "pending", T0 + 1, T0 + 86400),
    )  # fmt: skip
    accepted = next_version(created, T0 + 2, handoff=Handoff("gemini-cli", "accepted", T0 + 2, T0 + 86400))
    completed = next_version(accepted, T0 + 3, handoff=Handoff("gemini-cli", "completed", T0 + 3, T0 + 86400))
    await append(log, MEMORY_SAVED, plain, ALICE)
    seqs = [
        await append(log, HANDOFF_CREATED, created, ALICE),
        await append(log, HANDOFF_ACCEPTED, accepted, BOB),
        await append(log, HANDOFF_COMPLETED, completed, BOB),
    ]
    running = await start(log, *edge_pair(tmp_path))
    try:
        (current,) = running.index.retrieve(NS, [created.id])
        earlier = sorted(running.versions.versions_of(NS, created.id), key=lambda p: p["version"])
        assert (current["version"], current["_event"], current["seq"]) == (3, HANDOFF_COMPLETED, seqs[2])
        assert (current[HANDOFF_TO], current[HANDOFF_STATUS]) == (["gemini-cli"], "completed")
        assert [(p["version"], p["_event"], p[HANDOFF_STATUS]) for p in earlier] == [
            (1, HANDOFF_CREATED, "pending"),
            (2, HANDOFF_ACCEPTED, "accepted"),
        ]
        assert running.index.point_count() == 2
    finally:
        await stop(running)
    again = await start(log, *edge_pair(tmp_path))  # verified against the log again: still no mismatch
    await stop(again)
    assert rebuilds(caplog) == []  # the log's creations (a save and a handoff) match the index


async def test_a_pending_handoff_is_due_at_its_deadline_and_filters_find_it(log: NatsLog, tmp_path: Path) -> None:
    now = time.time()

    def handoff(content: str, to: Handoff, **fields: Any) -> Memory:
        return new_memory(content, "claude-code", now - 100, memory_type="handoff", handoff=to, **fields)

    overdue = handoff("Pick up the flaky test hunt", Handoff("gemini-cli", "pending", now - 100, now - 10))
    expires_first = handoff(
        "Rotate the staging keys", Handoff("gemini-cli", "pending", now - 100, now + 1000), expires_at=now - 5
    )
    accepted = handoff("Ship the release notes", Handoff("gemini-cli", "accepted", now - 50, now - 10))
    waiting = handoff("Write the migration guide", Handoff("cursor", "pending", now - 100, now + 1000))
    plain = new_memory("The build takes four minutes", "claude-code", now - 100)
    for memory in (overdue, expires_first, accepted, waiting):
        await append(log, HANDOFF_CREATED, memory, ALICE)
    await append(log, MEMORY_SAVED, plain, ALICE)
    running = await start(log, *edge_pair(tmp_path))
    try:
        due = {p["id"]: p[EXPIRES_TS] for p in running.index.due(now, 10)}
        mine = running.index.recent(NS, SearchFilter(handoff_target="gemini-cli", handoff_statuses=["pending"]), 10)
        stored = {p["id"]: p[EXPIRES_TS] for p in running.index.retrieve(NS, [waiting.id, plain.id, accepted.id])}
    finally:
        await stop(running)
    assert due == {overdue.id: pytest.approx(now - 10), expires_first.id: pytest.approx(now - 5)}
    assert stored[waiting.id] == pytest.approx(now + 1000)  # pending, not yet due
    assert stored[plain.id] == stored[accepted.id] == 1e15  # no deadline: an accepted handoff keeps none
    assert {p["id"] for p in mine} == {overdue.id, expires_first.id}


async def write_team_story(log: NatsLog) -> int:
    """Two agents on two devices through three clients, in team "auth", plus readers; returns the last seq."""
    token = new_memory("Tokens expire after 15 minutes", "claude-code", T0 + 1, team="auth")
    await append(log, MEMORY_SAVED, token, ALICE)
    await append(log, MEMORY_SAVED, new_memory("The CI runner has 8 cores", "gemini-cli", T0 + 2), BOB)
    await append(log, MEMORY_UPDATED, next_version(token, T0 + 3, content="Tokens expire after 10 minutes"),
                 ALICE_ON_DESKTOP)  # fmt: skip
    handoff = new_memory("Review refresh tokens", "gemini-cli", T0 + 4, team="auth", memory_type="handoff",
                         handoff=Handoff("claude-code", "pending", T0 + 4, T0 + 86400))  # fmt: skip
    await append(log, HANDOFF_CREATED, handoff, BOB)
    accepted = next_version(handoff, T0 + 5, handoff=Handoff("claude-code", "accepted", T0 + 5, T0 + 86400))
    await append(log, HANDOFF_ACCEPTED, accepted, ALICE)
    readers = [
        # codex only reads, with a key bound to it; mallory named itself (a shared key) and is known from nowhere
        {"agent": "codex", "device": "ci", "source": "codex", "time": format_time(T0 + 6), "from_key": True},
        {"agent": "gemini-cli", "device": "phone", "source": "gemini-cli", "time": format_time(T0 + 7)},
        {"agent": "mallory", "device": "ci", "source": "curl", "time": format_time(T0 + 7)},
    ]
    body = {"schema": 1, "event": MEMORY_ACCESSED, "namespace": NS, "time": format_time(T0 + 8),
            "counts": {token.id: 2}, "readers": readers}  # fmt: skip
    await log.append(NS, MEMORY_ACCESSED, body, msg_id=f"accessed:{uuid7()}")
    elsewhere = Memory(id=uuid7(), namespace="other-ns", content="Not this namespace", owner_agent="claude-code",
                       created_at=T0 + 9, updated_at=T0 + 9)  # fmt: skip
    return await append(log, MEMORY_SAVED, elsewhere, Caller("other-ns", "claude-code", device="laptop"))


STORY_REGISTRY = {
    "claude-code": AgentRecord(T0 + 1, T0 + 5, 3, ("desktop", "laptop"), ("cursor", "claude-code"), ("auth",)),
    "gemini-cli": AgentRecord(T0 + 2, T0 + 7, 2, ("desktop", "phone"), ("gemini-cli",), ("auth",)),
    "codex": AgentRecord(T0 + 6, T0 + 6, 0, ("ci",), ("codex",), ()),
}


async def test_the_registry_is_derived_from_the_log_persisted_with_the_index_and_rebuilt_identically(
    log: NatsLog, tmp_path: Path
) -> None:
    last = await write_team_story(log)
    running = await start(log, *edge_pair(tmp_path / "live"))
    try:
        assert dict(running.indexer.registry.agents(NS)) == STORY_REGISTRY
        assert running.indexer.registry.agents("other-ns")["claude-code"].writes == 1
        assert running.index.retrieve(NS, [p["id"] for p in running.index.recent(NS, SearchFilter(), 10)])
        live = running.indexer.registry.to_json()
        no_quarantine = {"entries": [], "forgotten": 0}  # stored beside the registry (issue 33)
        assert running.index.indexer_state() == {
            "layout": LAYOUT, "agents": live, "agents_seq": last, "quarantine": no_quarantine,
        }  # fmt: skip
        assert running.indexer.applied_seq == last
    finally:
        await stop(running)

    restarted = await start(log, *edge_pair(tmp_path / "live"))  # resumes from the stored registry
    rebuilt = await start(log, *edge_pair(tmp_path / "fresh"))  # a new index: everything from the log
    try:
        assert restarted.indexer.registry.to_json() == live
        assert rebuilt.indexer.registry.to_json() == live
        later = new_memory("Refresh tokens rotate on use", "claude-code", T0 + 20, team="auth")
        seq = await append(log, MEMORY_SAVED, later, replace(ALICE, device="tablet"))
        for running in (restarted, rebuilt):
            await running.indexer.wait_for(seq, timeout=10)
            record = running.indexer.registry.agents(NS)["claude-code"]
            assert (record.writes, record.last_seen, record.devices) == (4, T0 + 20, ("desktop", "laptop", "tablet"))
    finally:
        await stop(restarted)
        await stop(rebuilt)


@dataclass
class Layout:
    """One adapter whose indexes a test reopens, as a restarted search service would."""

    name: str
    open: Callable[[], tuple[MemoryIndex, MemoryIndex]]
    close: bool  # Edge shards are closed before reopening; the local-mode client stands for a server


@pytest.fixture(params=["edge", "server"])
def layout(request: pytest.FixtureRequest, tmp_path: Path) -> Layout:
    if request.param == "edge":
        return Layout("edge", lambda: edge_pair(tmp_path), close=True)
    client = QdrantClient(location=":memory:")
    request.addfinalizer(client.close)
    return Layout(
        "server",
        lambda: (
            QdrantServerIndex(client, collection="memories", dim=DIM),
            QdrantServerIndex(client, collection="memories-versions", dim=DIM),
        ),
        close=False,
    )


async def test_an_index_of_an_earlier_layout_is_rebuilt_from_the_log(
    log: NatsLog, layout: Layout, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    last = await write_team_story(log)
    handoff_ids = [p["id"] for p in (await _payloads_after_start(log, layout)) if p["memory_type"] == "handoff"]
    index, versions = layout.open()
    # What an index written before issue 8 looks like: no handoff field, bookkeeping without layout or registry.
    index.set_fields(NS, {memory_id: {HANDOFF_TO: ""} for memory_id in handoff_ids})
    index.set_applied_seq(last, state={})
    if layout.close:
        index.close()
        versions.close()

    running = await start(log, *layout.open())
    try:
        assert [m for m in rebuilds(caplog) if f"earlier version (layout 1, now {LAYOUT})" in m], rebuilds(caplog)
        assert [p[HANDOFF_TO] for p in running.index.retrieve(NS, handoff_ids)] == [["claude-code"]]
        assert dict(running.indexer.registry.agents(NS)) == STORY_REGISTRY
        assert running.index.indexer_state()["layout"] == LAYOUT
    finally:
        await running.indexer.stop()
        if layout.close:
            running.index.close()
            running.versions.close()


async def test_an_edge_index_without_the_handoff_payload_indexes_is_rebuilt(
    log: NatsLog, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import qdrant_edge as qe

    caplog.set_level(logging.WARNING)
    await write_team_story(log)
    running = await start(log, *edge_pair(tmp_path))
    await running.indexer.stop()
    assert isinstance(running.index, EdgeIndex)
    for name in (HANDOFF_TO, HANDOFF_STATUS):  # as an index created before these fields existed
        running.index._shard.core._shard.update(qe.UpdateOperation.delete_field_index(name))  # type: ignore[union-attr]
    assert running.index.check() == f"payload indexes missing: {HANDOFF_TO}, {HANDOFF_STATUS}"
    running.index.close()
    running.versions.close()

    again = await start(log, *edge_pair(tmp_path))
    try:
        assert [m for m in rebuilds(caplog) if "payload indexes missing" in m], rebuilds(caplog)
        assert again.index.check() is None
        assert again.index.count(NS, SearchFilter(handoff_target="claude-code")) == 1
        assert dict(again.indexer.registry.agents(NS)) == STORY_REGISTRY
    finally:
        await stop(again)


async def _payloads_after_start(log: NatsLog, layout: Layout) -> list[dict[str, object]]:
    """Indexes the log with the current layout once; returns the namespace's current payloads."""
    running = await start(log, *layout.open())
    try:
        return running.index.recent(NS, SearchFilter(), 100)
    finally:
        await running.indexer.stop()
        if layout.close:
            running.index.close()
            running.versions.close()


async def test_a_registry_stored_behind_the_applied_sequence_is_caught_up_from_the_log_on_start(
    log: NatsLog, tmp_path: Path
) -> None:
    last = await write_team_story(log)
    running = await start(log, *edge_pair(tmp_path))
    live = running.indexer.registry.to_json()
    await stop(running)
    index, versions = edge_pair(tmp_path)
    # As after a crash between two saves of the registry (every few seconds): stored as of an earlier sequence.
    index.set_applied_seq(last, state={"layout": LAYOUT, "agents": [], "agents_seq": 0})
    index.close()
    versions.close()

    again = await start(log, *edge_pair(tmp_path))
    try:
        assert again.indexer.registry.to_json() == live
    finally:
        await stop(again)


async def test_between_saves_the_registry_is_stored_when_the_indexer_is_idle(
    log: NatsLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer_module, "REGISTRY_SAVE_SECONDS", 3600.0)  # only the first batch saves it
    running = await start(log, *edge_pair(tmp_path))
    try:
        first = await append(log, MEMORY_SAVED, new_memory("The first note", "claude-code", T0), ALICE)
        await running.indexer.wait_for(first, timeout=10)
        second = await append(log, MEMORY_SAVED, new_memory("The second note", "claude-code", T0 + 1), BOB)
        await running.indexer.wait_for(second, timeout=10)
        deadline = time.monotonic() + 10
        while running.index.indexer_state()["agents_seq"] != second:  # saved once idle for IDLE_SECONDS
            assert time.monotonic() < deadline, running.index.indexer_state()
            await asyncio.sleep(0.1)
        assert [a["agent"] for a in running.index.indexer_state()["agents"]] == ["claude-code", "gemini-cli"]
    finally:
        await stop(running)
