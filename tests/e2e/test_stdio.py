"""`engram mcp`: several stdio clients share one node, and nothing is left running after they exit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engram.services.node.node import DEFAULT_IDLE_GRACE as IDLE_GRACE
from tests.conftest import engram_env
from tests.helpers.mcp import call, stdio_client
from tests.helpers.procs import wait_gone

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_concurrent_stdio_clients_share_one_node_and_leave_nothing_running(
    tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in engram_env(model_cache).items() if k.startswith("ENGRAM_")}
    env["ENGRAM_AGENT_ID"] = "stdio-agent@laptop"
    saved_by_first = asyncio.Event()
    all_done = asyncio.Event()
    seen_pids: list[int] = []
    results: dict[str, dict] = {}

    async def client(name: str) -> None:
        async with stdio_client(home, env, name=name) as session:
            seen_pids.append(json.loads((home / "node.json").read_text())["pid"])
            if name == "writer":
                results["saved"] = await call(session, "save_memory", content="Staging deploys need a VPN", tags=["t1"])
                saved_by_first.set()
            else:
                await saved_by_first.wait()
                results[name] = await call(session, "search_memory", query="what do staging deploys need?")
            await all_done.wait()

    tasks = [asyncio.create_task(client(name)) for name in ("writer", "reader-1", "reader-2")]
    while len(results) < 3:
        await asyncio.sleep(0.05)
        for task in tasks:
            if task.done():
                task.result()
    node_pid = seen_pids[0]
    nats_pid = int((home / "run" / "nats.pid").read_text())
    all_done.set()
    await asyncio.gather(*tasks)

    assert len(set(seen_pids)) == 1, "every stdio client must use the same node"
    memory_id = results["saved"]["id"]
    assert results["saved"]["memory"]["owner_agent"] == "writer"  # clientInfo.name comes before ENGRAM_AGENT_ID
    for reader in ("reader-1", "reader-2"):
        assert results[reader]["hits"][0]["id"] == memory_id
    assert await asyncio.to_thread(wait_gone, node_pid, 30), "the node outlived its last stdio client"
    assert await asyncio.to_thread(wait_gone, nats_pid, 10), "the nats-server outlived the node"


async def test_a_relaying_stdio_client_keeps_the_node_it_did_not_start(tmp_path: Path, model_cache: Path) -> None:
    # The first `engram mcp` starts a node that stops when its last stdio client leaves; the second finds it running
    # and relays to its /mcp, counted through the attach socket: the node outlives the first while the second runs.
    home = tmp_path / "home"
    env = {k: v for k, v in engram_env(model_cache).items() if k.startswith("ENGRAM_")}
    env["ENGRAM_LOG_LEVEL"] = "INFO"  # the node's log names each client that attaches
    node_up, relayed_in, starter_gone = asyncio.Event(), asyncio.Event(), asyncio.Event()
    answers: dict[str, dict] = {}

    async def starter() -> None:
        async with stdio_client(home, env, name="starter") as client:
            answers["starter"] = await call(client, "ping")
            node_up.set()
            await relayed_in.wait()
        starter_gone.set()

    async def relayed() -> None:
        await node_up.wait()
        async with stdio_client(home, env, name="relayed") as client:
            relayed_in.set()
            await starter_gone.wait()
            await asyncio.sleep(IDLE_GRACE + 2)  # the node would have stopped by now, had it no client left
            answers["relayed"] = await call(client, "ping")

    first = asyncio.create_task(starter())
    await node_up.wait()
    node_pid = json.loads((home / "node.json").read_text())["pid"]
    await asyncio.gather(first, relayed())
    assert answers["relayed"]["agent"] == "relayed"
    assert "client attached: engram mcp relay" in (home / "logs" / "node.log").read_text()
    assert await asyncio.to_thread(wait_gone, node_pid, 30), "the node outlived its last (relaying) stdio client"
