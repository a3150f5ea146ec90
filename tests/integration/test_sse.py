"""Live events over SSE (GET /events/stream) against a real node: fields, filters, namespaces, resuming with
Last-Event-ID, heartbeats, the bounded queue of a client that stops reading, and stopping with streams open."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.config import Settings
from engram.keys import KeyStore
from engram.log.nats import NatsLog
from engram.process.ports import listen_socket
from engram.services.gateway.app import build_app
from engram.services.gateway.backend import Backend
from engram.services.gateway.server import start_http, stop_http
from engram.services.gateway.sse.routes import STREAM_PATH
from engram.services.gateway.sse.streams import EventStreams, ServerSentEvent
from tests.conftest import NodeHandle, start_node
from tests.helpers.sse import SMALL_BUFFER, StalledClient, event_stream

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

QUEUE = 8  # ENGRAM_SSE_QUEUE_EVENTS of the test node: small, so a stalled client overflows it quickly
HEARTBEAT = 0.5


@pytest.fixture(scope="module")
def events_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A dev-mode node with a small SSE queue, quick heartbeats and quick access-count flushes."""
    handle = start_node(
        tmp_path_factory.mktemp("sse"),
        model_cache,
        ENGRAM_SSE_QUEUE_EVENTS=str(QUEUE),
        ENGRAM_SSE_HEARTBEAT_SECONDS=str(HEARTBEAT),
        ENGRAM_ACCESS_FLUSH_SECONDS="0.5",
    )
    yield handle
    assert handle.stop() == 0


def api(url: str, *, agent: str | None = None, key: str | None = None, device: str | None = None) -> httpx.AsyncClient:
    headers = {"X-Engram-Agent-ID": agent, "Authorization": f"Bearer {key}" if key else None, "X-Engram-Device": device}
    return httpx.AsyncClient(
        base_url=url, headers={k: v for k, v in headers.items() if v}, timeout=httpx.Timeout(30, read=60)
    )


async def save(client: httpx.AsyncClient, content: str, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/memories", json={"content": content, **fields})
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def summary(events: list[ServerSentEvent]) -> list[tuple[str, str]]:
    return [(e.event, e.json()["memory_id"]) for e in events]


async def test_saves_updates_and_deletes_arrive_with_their_fields_and_no_vectors(events_node: NodeHandle) -> None:
    async with api(events_node.http_url, agent="writer@laptop") as client, event_stream(client) as stream:
        headers = stream.response.headers
        assert headers["content-type"].startswith("text/event-stream")
        assert headers["cache-control"] == "no-cache" and headers["x-accel-buffering"] == "no"
        saved = await save(client, "SSE carries saves", topics=["sse-fields"], importance="high")
        updated = await client.patch(f"/v1/memories/{saved['id']}", json={"content": "SSE carries updates"})
        deleted = await client.delete(f"/v1/memories/{saved['id']}")
        events = await stream.take(3)
    assert [e.event for e in events] == ["memory_saved", "memory_updated", "memory_deleted"]
    assert [int(e.id or 0) for e in events] == [saved["seq"], updated.json()["seq"], deleted.json()["seq"]]
    bodies = [e.json() for e in events]
    for event, body in zip(events, bodies, strict=True):
        assert body["seq"] == int(event.id or 0) and body["event"] == event.event
        assert body["memory_id"] == saved["id"] and body["namespace"] == "default"
        assert (body["agent"], body["device"]) == ("writer", "laptop")
        assert body["topics"] == ["sse-fields"] and body["importance"] == "high"
        assert "vectors" not in body
    assert [b["version"] for b in bodies] == [1, 2, 3]
    assert bodies[1]["memory"]["content"] == "SSE carries updates"
    assert bodies[2]["memory"]["status"] == "archived"


async def test_each_filter_keeps_only_the_events_it_asks_for(events_node: NodeHandle) -> None:
    url = events_node.http_url
    async with api(url, agent="alice") as alice, api(url, agent="bob", device="desktop") as bob:
        a1 = await save(alice, "Alpha, not important", topics=["sse-alpha"], importance="low")
        a2 = await save(alice, "Beta, important", topics=["sse-beta"], importance="high")
        b1 = await save(bob, "Alpha and more, critical", topics=["sse-alpha", "sse-more"], importance="critical")
        assert (await bob.patch(f"/v1/memories/{b1['id']}", json={"content": "Alpha, revised"})).status_code == 200
        # The last event passes every filter below, so each stream is read up to it.
        marker = (await bob.delete(f"/v1/memories/{b1['id']}")).json()
        before = a1["seq"] - 1
        saved_a1, saved_a2, saved_b1 = (("memory_saved", m["id"]) for m in (a1, a2, b1))
        updated_b1, deleted_b1 = ("memory_updated", b1["id"]), ("memory_deleted", b1["id"])
        expected: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
            ({"topics": "sse-alpha"}, [saved_a1, saved_b1, updated_b1, deleted_b1]),
            ({"topics": "sse-gamma,sse-alpha"}, [saved_a1, saved_b1, updated_b1, deleted_b1]),
            ({"topics": ["sse-gamma", "sse-alpha"]}, [saved_a1, saved_b1, updated_b1, deleted_b1]),
            ({"importance": "high"}, [saved_a2, saved_b1, updated_b1, deleted_b1]),
            ({"events": "memory_updated,memory_deleted"}, [updated_b1, deleted_b1]),
            ({"agent": "bob"}, [saved_b1, updated_b1, deleted_b1]),
            ({"agent": "bob@desktop"}, [saved_b1, updated_b1, deleted_b1]),
            ({"topics": "sse-alpha", "agent": "alice"}, [saved_a1]),
        ]
        for params, wanted in expected:
            until = marker["seq"] if wanted[-1] == deleted_b1 else a1["seq"]
            async with event_stream(alice, last_event_id=before, **params) as stream:
                events = await stream.until_id(until)
            assert summary(events) == wanted, params


async def test_memory_accessed_is_sent_only_when_asked_for(events_node: NodeHandle) -> None:
    async with api(events_node.http_url, agent="reader") as client:
        memory = await save(client, "Read counts are bookkeeping", topics=["sse-accessed"])
        async with event_stream(client, events="memory_accessed") as accessed:
            assert (await client.get(f"/v1/memories/{memory['id']}")).status_code == 200
            event = (await accessed.until(lambda e: memory["id"] in e.json().get("counts", {})))[-1]
        assert event.event == "memory_accessed"
        async with event_stream(client, last_event_id=memory["seq"]) as everything:
            marker = await save(client, "After the read count")
            [first] = await everything.take(1)
    assert int(event.id or 0) > memory["seq"]
    assert summary([first]) == [("memory_saved", marker["id"])]


async def test_exclude_self_skips_only_the_callers_own_events(events_node: NodeHandle) -> None:
    url = events_node.http_url
    async with (
        api(url, agent="alice", device="laptop") as laptop,
        api(url, agent="alice", device="desktop") as desktop,
        api(url, agent="bob", device="laptop") as bob,
        event_stream(laptop, exclude_self="true") as stream,
    ):
        await save(laptop, "Mine, from here: not sent back to me")
        elsewhere = await save(desktop, "Mine, from another device")
        theirs = await save(bob, "Bob's")
        events = await stream.take(2)
    assert summary(events) == [("memory_saved", elsewhere["id"]), ("memory_saved", theirs["id"])]


async def test_streams_are_scoped_to_the_namespace_of_the_key(secured_node: NodeHandle) -> None:
    key_a = secured_node.create_key("sse-a", "ann")
    key_b = secured_node.create_key("sse-b", "ben")
    write_only = secured_node.create_key("sse-a", "wo", scopes=("write",))
    url = secured_node.http_url
    async with api(url) as anonymous, api(url, key=write_only) as no_read:
        assert (await anonymous.get(STREAM_PATH)).status_code == 401
        assert (await anonymous.get(STREAM_PATH, params={"key": key_a, "api_key": key_a})).status_code == 401
        refused = await no_read.get(STREAM_PATH)
        assert refused.status_code == 403 and "read" in refused.json()["detail"]
    async with api(url, key=key_a) as ann, api(url, key=key_b) as ben:
        async with event_stream(ann) as live:
            await save(ben, "In namespace b")
            mine = await save(ann, "In namespace a")
            [first] = await live.take(1)
        # A replay from the very start of the log holds only this namespace's events too.
        async with event_stream(ann, last_event_id=0) as replay:
            history = await replay.until(lambda e: e.json()["memory_id"] == mine["id"])
    assert summary([first]) == [("memory_saved", mine["id"])]
    assert {e.json()["namespace"] for e in history} == {"sse-a"}


async def test_reconnecting_with_last_event_id_gets_exactly_the_missed_events_once(events_node: NodeHandle) -> None:
    async with api(events_node.http_url, agent="resumer") as client:
        async with event_stream(client, agent="resumer") as first:
            await save(client, "Before the disconnection")
            [seen] = await first.take(1)
        missed = [await save(client, f"Missed while away {i}") for i in range(5)]
        for attempt, (headers, params) in enumerate(
            (({"Last-Event-ID": seen.id or ""}, {}), (None, {"last_event_id": seen.id}))
        ):
            async with event_stream(client, headers=headers, agent="resumer", **params) as again:
                replayed = await again.take(len(missed))
                marker = await save(client, f"After reconnection {attempt}")  # a repeat would be no new memory
                [after] = await again.take(1)
            assert summary(replayed) == [("memory_saved", m["id"]) for m in missed]
            assert summary([after]) == [("memory_saved", marker["id"])]  # nothing twice in between
            missed.append(marker)


async def test_heartbeats_keep_an_idle_stream_alive(events_node: NodeHandle) -> None:
    async with api(events_node.http_url) as client, event_stream(client, topics="sse-nothing-happens") as stream:
        began = time.monotonic()
        await stream.heartbeat(timeout=10 * HEARTBEAT)
        await stream.heartbeat(timeout=10 * HEARTBEAT)
    assert time.monotonic() - began >= HEARTBEAT


async def test_invalid_stream_requests_are_refused_with_what_to_do(events_node: NodeHandle) -> None:
    async with api(events_node.http_url) as client:
        unknown = await client.get(STREAM_PATH, params={"events": "memory_saved,memory_exploded"})
        bad_id = await client.get(STREAM_PATH, headers={"Last-Event-ID": "abc"})
        future = await client.get(STREAM_PATH, headers={"Last-Event-ID": str(2**40)})
        importance = await client.get(STREAM_PATH, params={"importance": "urgent"})
        doc = (await client.get("/openapi.json")).json()["paths"][STREAM_PATH]["get"]
    assert unknown.status_code == 400
    assert "memory_exploded" in unknown.json()["detail"] and "handoff_created" in unknown.json()["detail"]
    assert bad_id.status_code == 400 and "Last-Event-ID" in bad_id.json()["detail"]
    assert future.status_code == 400 and "Reconnect without it" in future.json()["detail"]
    assert importance.status_code == 400
    names = {p["name"] for p in doc["parameters"]}
    assert {"topics", "importance", "events", "agent", "exclude_self", "last_event_id", "Last-Event-ID"} <= names
    assert "text/event-stream" in doc["responses"]["200"]["content"]
    assert "Last-Event-ID" in doc["description"] and "gap" in doc["description"]


async def test_a_gateway_without_a_log_says_to_set_the_nats_url(events_node: NodeHandle) -> None:
    backend = Backend(ingest_addr=events_node.grpc_address, search_addr=events_node.grpc_address)
    app = build_app(Settings(home=events_node.home), backend, KeyStore(events_node.settings.keys_path))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get(STREAM_PATH)
    finally:
        await backend.close()
    assert response.status_code == 503 and "ENGRAM_NATS_URL" in response.json()["detail"]


@dataclass
class LocalGateway:
    """The gateway app in this process, in front of a node's services and log, so its streams can be inspected."""

    url: str
    streams: EventStreams
    stop: Callable[..., Any]


@contextlib.asynccontextmanager
async def local_gateway(node: NodeHandle) -> AsyncIterator[LocalGateway]:
    """Its connections get small kernel send buffers (inherited from the listening socket), so a client that stops
    reading blocks the writer after a few events instead of after megabytes."""
    settings = Settings(home=node.home, sse_queue_events=QUEUE, sse_heartbeat_seconds=HEARTBEAT)
    event_log = await NatsLog.connect(node.nats_url, name="sse-test")
    backend = Backend(ingest_addr=node.grpc_address, search_addr=node.grpc_address)
    app = build_app(settings, backend, KeyStore(node.settings.keys_path), event_log=event_log)
    sock = listen_socket("127.0.0.1", 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
    server, task, url = await start_http(app, "127.0.0.1", 0, sock=sock)
    stopped = False

    async def stop(grace: float = 5.0) -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            app.state.event_streams.stop()
            await stop_http(server, task, grace=grace)

    try:
        yield LocalGateway(url, app.state.event_streams, stop)
    finally:
        await stop()
        await backend.close()
        await event_log.close()


async def wait_until(condition: Callable[[], bool], *, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_a_client_that_stops_reading_holds_at_most_the_queue_then_gets_a_gap(events_node: NodeHandle) -> None:
    count, filler = 100, "x" * 1000  # about 150 KB of events: far more than the small socket buffers hold
    async with local_gateway(events_node) as gateway, api(events_node.http_url, agent="sse-slow") as writer:
        slow = await StalledClient.open(gateway.url, agent="sse-slow")
        stalled = await StalledClient.open(gateway.url, agent="sse-slow")  # never reads again
        assert slow.status == stalled.status == 200
        lines = "".join(f'{{"content": "Slow client event {i}: {filler}"}}\n' for i in range(count))
        imported = await writer.post(
            "/v1/memories:import", content=lines.encode(), headers={"Content-Type": "application/x-ndjson"}
        )
        assert imported.status_code == 200, imported.text
        ids = [item["id"] for item in imported.json()["items"]]
        last_seq = imported.json()["last_seq"]
        await wait_until(lambda: all(s.newest >= last_seq for s in gateway.streams.stats()))
        # Both writers are blocked on their clients; each holds a full queue and no more.
        assert [(s.queued, s.dropped > 0) for s in gateway.streams.stats()] == [(QUEUE, True), (QUEUE, True)]

        events = await slow.until(lambda e: e.event != "gap" and e.json()["memory_id"] == ids[-1])
        at = [e.event for e in events].index("gap")
        before, gap, after = events[:at], events[at].json(), events[at + 1 :]
        got = len(before)  # what the socket buffers held, plus the event the writer was sending
        assert [e.json()["memory_id"] for e in before] == ids[:got]
        assert gap == {"resume_from": int(before[-1].id or 0), "dropped": count - got - QUEUE}
        assert [e.json()["memory_id"] for e in after] == ids[count - QUEUE :]  # the queue: the newest QUEUE
        slow.close()

        # Resuming from resume_from, with a client as slow as before: the missed events are read from the log at
        # the client's pace, so the server holds a full queue again but drops nothing this time.
        resume = {"Last-Event-ID": str(gap["resume_from"])}
        replaying = await StalledClient.open(gateway.url, headers=resume, agent="sse-slow")
        await wait_until(lambda: (QUEUE, 0) in [(s.queued, s.dropped) for s in gateway.streams.stats()])
        replayed = await replaying.until(lambda e: e.event == "gap" or e.json()["memory_id"] == ids[-1])
        assert [e.event for e in replayed] == ["memory_saved"] * (count - got)  # no gap this time
        assert [e.json()["memory_id"] for e in replayed] == ids[got:]  # the dropped ones, in order, once; then on
        replaying.close()

        began = time.monotonic()
        await gateway.stop(grace=1.0)  # the stalled client never lets its response end: its connection is dropped
        assert time.monotonic() - began < 5.0
        assert len(gateway.streams) == 0  # every stream released (unsubscribed from the log)
        stalled.close()


async def test_stopping_the_node_ends_open_streams_at_once(tmp_path: Path, model_cache: Path) -> None:
    node = start_node(tmp_path / "node", model_cache)
    try:
        async with api(node.http_url) as client, event_stream(client) as stream:
            began = time.monotonic()
            node.process.send_signal(signal.SIGTERM)
            with pytest.raises(EOFError):
                await stream.take(1, timeout=10)
            ended = time.monotonic() - began
        code = await asyncio.to_thread(node.process.wait, 30)
        stopped = time.monotonic() - began
    finally:
        node.stop()
    assert code == 0
    assert ended < 2.0 and stopped < 5.0, (ended, stopped)
