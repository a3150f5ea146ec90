"""`engram mcp` with the node running: stdio relayed to the node's /mcp with the standard library alone (no MCP
SDK, pydantic, httpx or gateway in the process), the same answers and identity as the in-process server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import Implementation, ResourceUpdatedNotification

from tests.conftest import NodeHandle
from tests.helpers.mcp import call, stdio_client, tool_error

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

EVENT_SECONDS = 30.0
# What an MCP server in-process needs and a relay must not load (each costs a share of the second it took to start).
HEAVY = (
    "mcp", "mcp_types", "pydantic", "pydantic_core", "httpx", "httpx2", "fastapi", "starlette", "grpc", "anyio",
    "asyncio", "ssl",
)  # fmt: skip
# Runs `engram mcp` as its entry point does, then says on stderr which of HEAVY it loaded.
PROBE = f"""
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})),
                              file=sys.stderr))
from engram.cli import main
sys.exit(main(["mcp", "--home", sys.argv[1]]))
"""


HOSTILE = {"name": "Console\u202e", "version": "1"}  # a reserved name, and no usable agent id


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def stdio_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    return {**env, "ENGRAM_LOG_LEVEL": "WARNING", **extra}


def rpc(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any] | None:
    """Writes one message; reads the answer when it is a request."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline()) if "id" in message else None


def test_engram_mcp_relays_to_the_running_node_without_loading_the_sdk(node: NodeHandle) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(node.home)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=stdio_env(ENGRAM_AGENT_ID="robot-7", ENGRAM_DEVICE="desk"),
    )  # fmt: skip
    try:
        hello = rpc(process, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": HOSTILE},
        })  # fmt: skip
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        pong = rpc(
            process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}
        )
        assert rpc(process, {"jsonrpc": "2.0", "id": 3, "method": "no/such-method"})["error"]  # type: ignore[index]
        _, stderr = process.communicate(timeout=60)  # stdin closes: the relay deletes the session and exits
    finally:
        if process.poll() is None:
            process.kill()
    assert hello is not None and hello["result"]["serverInfo"]["name"] == "engram"
    assert pong is not None
    answer = pong["result"]["structuredContent"]
    # An unusable client name is skipped for ENGRAM_AGENT_ID (after clientInfo.name), the device is ENGRAM_DEVICE.
    assert (answer["agent"], answer["device"], answer["source"]) == ("robot-7", "desk", "mcp")
    assert process.returncode == 0, stderr.decode()
    assert json.loads(stderr.decode().strip().splitlines()[-1]) == []


async def test_a_relayed_session_saves_searches_lists_and_hears_of_changes(node: NodeHandle) -> None:
    tag = unique()
    env = stdio_env(ENGRAM_AGENT_ID="robot-7", ENGRAM_TEAM="fleet")
    async with stdio_client(node.home, env, name="cursor") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"The relay keeps answers one per line {tag}", tags=[tag])
        found = await call(client, "search_memory", query="relay answers one per line", tags=[tag])
        async with client.listen(resource_subscriptions=["engram://recent"]) as updates:
            await call(client, "save_memory", content=f"The relay forwards listen streams too {tag}", tags=[tag])
            with anyio.fail_after(EVENT_SECONDS):
                update = await updates.__anext__()
    assert {"save_memory", "search_memory", "memory_history"} <= listed  # stdio_client asks for the full profile
    assert (pong["agent"], pong["team"], pong["source"]) == ("cursor", "fleet", "cursor")
    assert [h["id"] for h in found["hits"]] == [saved["id"]]
    assert saved["memory"]["owner_agent"] == "cursor"
    assert update.uri == "engram://recent"


async def test_a_relayed_handshake_session_hears_resource_updates_on_its_get_stream(node: NodeHandle) -> None:
    notes: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            notes.append(str(message.params.uri))
            arrived.set()

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram.services.node", "mcp", "--home", str(node.home)], env=stdio_env()
    )
    client_info = Implementation(name="legacy-agent", version="1")
    async with Client(params, client_info=client_info, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("engram://recent")
        with anyio.fail_after(EVENT_SECONDS):
            while not arrived.is_set():  # the GET stream opens after the handshake: save until one arrives
                await call(client, "save_memory", content=f"Build {unique()} passed on the first try.")
                with anyio.move_on_after(2.0):
                    await arrived.wait()
    assert set(notes) == {"engram://recent"}


async def test_a_session_the_node_refuses_is_served_in_process_and_explains_engram_api_key(
    secured_node: NodeHandle,
) -> None:
    # The node answers the relayed first request with a 401; the in-process server takes the session over from that
    # request on and says at each tool call what to fix, as it did before the relay.
    env = stdio_env(ENGRAM_LOG_LEVEL="ERROR", ENGRAM_API_KEY="engram_not-a-real-key")
    async with stdio_client(secured_node.home, env) as client:
        message = await tool_error(client, "ping")
    assert "ENGRAM_API_KEY is not valid" in message and "engram keys create" in message
