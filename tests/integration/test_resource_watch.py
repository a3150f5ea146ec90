"""Resource-updated notifications against a real NATS log, in process: a namespace is followed from its first
watcher to its last, its events become resource-updated events for its watchers only, and a session of the
handshake era (resources/subscribe) is notified until it closes, when its namespace stops being followed."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import ResourceUpdatedNotification

from engram.log.nats import NatsLog
from engram.model import Caller
from engram.process.natsd import NatsServer
from engram.services.gateway.mcp.subscriptions import ResourceWatch, Subscriptions, _serve_subscriptions

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

EVENT_SECONDS = 10.0


@pytest.fixture
async def log(nats_server: NatsServer) -> AsyncIterator[NatsLog]:
    connected = await NatsLog.connect(nats_server.url)
    yield connected
    await connected.close()


async def append(log: NatsLog, namespace: str, event: str = "memory_saved", **memory: Any) -> str:
    memory_id = str(uuid.uuid4())
    body = {"event": event, "namespace": namespace, "memory_id": memory_id,
            "memory": {"id": memory_id, "memory_type": "fact", "tags": [], "project": "", **memory}}  # fmt: skip
    await log.append(namespace, event, body, msg_id=memory_id)
    return memory_id


async def test_a_namespace_is_followed_from_its_first_watcher_to_its_last(log: NatsLog) -> None:
    watch = ResourceWatch(log)
    first, second = await watch.attach("ns-a"), await watch.attach("ns-a")
    assert first is second and watch.namespaces == {"ns-a"}
    heard: list[ServerEvent] = []
    got_two = anyio.Event()

    def listener(event: ServerEvent) -> None:
        heard.append(event)
        if len(heard) >= 2:
            got_two.set()

    first.bus.subscribe(listener)
    await append(log, "ns-b")  # not watched: never heard
    memory_id = await append(log, "ns-a")
    with anyio.fail_after(EVENT_SECONDS):
        await got_two.wait()
    assert heard == [ResourceUpdated(uri="engram://recent"), ResourceUpdated(uri=f"engram://memory/{memory_id}")]
    await watch.detach(first)
    assert watch.namespaces == {"ns-a"}
    await watch.detach(second)
    assert watch.namespaces == frozenset() and first.subscription is None


async def test_a_handshake_era_session_is_notified_until_it_closes(log: NatsLog) -> None:
    server = MCPServer("watch-test")
    watch = ResourceWatch(log)

    def caller(ctx: Context) -> Caller:
        return Caller(namespace="ns-c", agent_id="gemini-cli")

    _serve_subscriptions(server, Subscriptions(watch, server, caller))
    notes: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            notes.append(str(message.params.uri))
            arrived.set()

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe is True
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("engram://profile")
        assert watch.namespaces == {"ns-c"}
        await append(log, "ns-c")  # a fact: the profile does not change
        await append(log, "ns-c", memory_type="preference")
        with anyio.fail_after(EVENT_SECONDS):
            await arrived.wait()
        assert notes == ["engram://profile"]
    assert watch.namespaces == frozenset()  # the session's teardown ran as its connection closed


async def test_unsubscribing_from_everything_stops_watching(log: NatsLog) -> None:
    server = MCPServer("watch-test")
    watch = ResourceWatch(log)
    _serve_subscriptions(server, Subscriptions(watch, server, lambda ctx: Caller(namespace="ns-d", agent_id="a")))
    async with Client(server, mode="legacy") as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("engram://recent")
            await client.subscribe_resource("engram://projects")
            await client.unsubscribe_resource("engram://recent")
        assert watch.namespaces == {"ns-d"}
        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource("engram://projects")
        assert watch.namespaces == frozenset()
