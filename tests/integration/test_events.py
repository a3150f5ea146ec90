"""Every mutation is published on engram.events.<namespace>.<event>; a plain nats-py client receives it."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def test_plain_nats_subscriber_receives_memory_saved(node) -> None:  # type: ignore[no-untyped-def]
    nc = await nats.connect(node.nats_url)
    received: asyncio.Queue[nats.aio.msg.Msg] = asyncio.Queue()
    await nc.subscribe("engram.events.default.>", cb=received.put)
    try:
        async with http_client(node.mcp_url, agent="event-agent@box", name="events-test") as client:
            saved = await call(
                client, "save_memory", content="Events reach plain subscribers", topics=["nats"], importance="high"
            )
        async with asyncio.timeout(10):
            while True:
                msg = await received.get()
                body = json.loads(msg.data)
                if body["memory_id"] == saved["id"]:
                    break
    finally:
        await nc.close()
    assert msg.subject == "engram.events.default.memory_saved"
    assert body["event"] == "memory_saved"
    assert body["seq"] == saved["seq"]
    assert body["agent"] == "event-agent"  # "@box" is the device
    assert body["topics"] == ["nats"] and body["importance"] == "high"
    assert body["memory"]["content"] == "Events reach plain subscribers"
