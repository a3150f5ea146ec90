"""Nothing acknowledged is ever lost: SIGKILL the node mid-stream, restart, find every acknowledged memory once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from pathlib import Path

import pytest

from tests.conftest import start_node
from tests.helpers.mcp import call, http_client
from tests.helpers.procs import wait_gone

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.anyio]

KILL_AFTER = 40


async def test_acknowledged_memories_survive_sigkill(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    node = start_node(home, model_cache)
    nats_pid = node.nats_pid
    acked: dict[str, str] = {}  # memory id -> unique token in its content
    killed = asyncio.Event()

    async def writer(name: str) -> None:
        async with http_client(node.mcp_url, name=name) as client:
            for i in range(10_000):
                token = f"tok{uuid.uuid4().hex[:12]}"
                try:
                    saved = await call(client, "save_memory", content=f"{name} item {i} carries {token}", tags=["s"])
                except Exception:
                    return  # the node died under us: this save was never acknowledged
                acked[saved["id"]] = token
                if len(acked) >= KILL_AFTER and not killed.is_set():
                    killed.set()
                    os.kill(node.pid, signal.SIGKILL)  # the other writers have saves in flight

    async def guarded(name: str) -> None:
        # Closing an MCP session to a dead node may fail; only the acknowledgements matter here.
        with contextlib.suppress(Exception):
            await writer(name)

    async with asyncio.timeout(120):
        await asyncio.gather(*(guarded(f"writer-{n}") for n in range(4)))
    assert killed.is_set() and len(acked) >= KILL_AFTER
    assert node.process.wait(10) == -signal.SIGKILL
    assert await asyncio.to_thread(wait_gone, nats_pid, 10), "the nats-server outlived the killed node"

    restarted = start_node(home, model_cache)
    try:
        async with http_client(restarted.mcp_url, name="checker") as client:
            listed = await call(client, "list_memories", limit=100, tags=["s"])
            ids = [m["id"] for m in listed["memories"]]
            assert len(ids) == len(set(ids))
            contents = [m["content"] for m in listed["memories"]]
            assert len(contents) == len(set(contents)), "a memory was stored twice"
            for memory_id, token in acked.items():
                got = await call(client, "get_memory", id=memory_id)
                assert token in got["content"]
                found = await call(client, "search_memory", query=token, limit=5, tags=["s"])
                matching = [h for h in found["hits"] if token in h["content"]]
                assert [h["id"] for h in matching] == [memory_id]
    finally:
        assert restarted.stop() == 0
