"""Tool profiles (issues 24 and 34): a connection lists the core tools (under 20 KB) unless it asks for the full
profile (?tools=full, X-Engram-Tools, or `engram mcp --tools full`), which lists every tool. A real node, the
real SDK client over streamable HTTP and stdio."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation, ListToolsResult

from engram.services.gateway.mcp.profiles import CORE_TOOLS
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, stdio_client
from tests.helpers.rest import assert_problem

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

# What a small-context client pays before its first call: the core tools with their descriptions and schemas.
MAX_CORE_TOOLS_LIST_BYTES = 20 * 1024  # the default profile; the full one: about 40 KB
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}},
}  # fmt: skip
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def size(listed: ListToolsResult) -> int:
    return len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())


def assert_core(listed: ListToolsResult) -> None:
    assert {tool.name for tool in listed.tools} == CORE_TOOLS
    assert size(listed) <= MAX_CORE_TOOLS_LIST_BYTES, size(listed)
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object" and "properties" in tool.input_schema, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name


async def listed_and_pong(client: Client) -> tuple[ListToolsResult, dict[str, object]]:
    return await client.list_tools(), await call(client, "ping")


async def test_the_core_profile_of_the_mcp_url_lists_the_everyday_tools_in_under_20_kb(node: NodeHandle) -> None:
    async with http_client(f"{node.mcp_url}?tools=core") as client:
        listed, pong = await listed_and_pong(client)
        found = await call(client, "search_memory", query="anything at all")
        instructions = client.instructions or ""
    assert_core(listed)
    assert pong["ok"] is True and "hits" in found
    assert "update_memory" in instructions  # the server's instructions name every tool, then say which are here
    assert instructions.endswith("ask the user to connect with it if you need one.")
    assert "This connection lists the core tools: create_handoff, delete_memory," in instructions


async def test_the_core_profile_header_lists_the_same_tools_as_the_query_parameter(node: NodeHandle) -> None:
    async with http_client(node.mcp_url, headers={"X-Engram-Tools": "core"}) as client:
        by_header = await client.list_tools()
    async with http_client(f"{node.mcp_url}?tools=core", headers={"X-Engram-Tools": "full"}) as client:
        query_wins = await client.list_tools()
    assert_core(by_header)
    assert_core(query_wins)


async def test_the_core_profile_is_the_default_and_the_full_one_lists_every_tool(node: NodeHandle) -> None:
    async with http_client(node.mcp_url, tools=None) as client:
        default = await client.list_tools()
        assert "This connection lists the core tools" in (client.instructions or "")
    async with http_client(f"{node.mcp_url}?tools=full") as client:
        full = await client.list_tools()
        assert "This connection lists" not in (client.instructions or "")
    assert_core(default)
    names = {tool.name for tool in full.tools}
    assert names > CORE_TOOLS and {"update_memory", "memory_history", "pin_memory", "load_engram"} <= names


async def test_a_tool_outside_the_core_profile_is_refused_with_the_full_profile_named(node: NodeHandle) -> None:
    async with http_client(f"{node.mcp_url}?tools=core") as client:
        saved = await call(client, "save_memory", content="Profiles keep tools/list small for small contexts.")
        with pytest.raises(MCPError) as refused:
            await client.call_tool("update_memory", {"id": saved["id"], "tags": ["mcp"]})
    message = str(refused.value)
    assert "'update_memory' is not among this connection's tools (the core tool profile)" in message
    assert "/mcp?tools=full" in message and "engram mcp --tools full" in message


@pytest.mark.parametrize(
    ("url_tail", "headers", "named"),
    [("?tools=everything", {}, "?tools"), ("", {"X-Engram-Tools": "minimal"}, "X-Engram-Tools")],
)
def test_an_unknown_profile_is_a_400_naming_the_profiles(
    node: NodeHandle, url_tail: str, headers: dict[str, str], named: str
) -> None:
    answer = httpx.post(f"{node.mcp_url}{url_tail}", json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)
    problem = assert_problem(answer, 400)
    assert problem["code"] == "invalid_argument"
    assert problem["detail"].startswith(f"{named}: ") and "full (every tool) or core" in problem["detail"]


async def test_engram_mcp_tools_core_lists_the_core_profile_over_stdio(node: NodeHandle) -> None:
    env = {"ENGRAM_LOG_LEVEL": "WARNING"}
    async with stdio_client(node.home, env, name="small-model", args=["--tools", "core"]) as client:
        listed, pong = await listed_and_pong(client)
        with pytest.raises(MCPError, match="engram mcp --tools full"):
            await client.call_tool("memory_history", {"id": "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"})
        instructions = client.instructions or ""
    assert_core(listed)
    assert pong["agent"] == "small-model"
    assert "This connection lists the core tools" in instructions


# --- a session keeps its profile (issue 33) ----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def session_whose_requests_change(url: str, rewrite: dict[str, str | None]) -> AsyncIterator[Client]:
    """The real SDK client over streamable HTTP (initialize handshake: a session), whose requests after the handshake
    have their ?tools= parameter replaced (None: dropped) once ``rewrite["tools"]`` is set."""

    async def tamper(request: httpx2.Request) -> None:
        if "tools" not in rewrite:
            return
        url = request.url.copy_remove_param("tools")
        request.url = url if rewrite["tools"] is None else url.copy_add_param("tools", rewrite["tools"])

    async with (
        httpx2.AsyncClient(timeout=60, event_hooks={"request": [tamper]}) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name="pytest", version="1.0"),
            mode="legacy",
        ) as client,
    ):
        yield client


async def test_a_core_session_keeps_its_tools_when_a_later_request_drops_the_profile(node: NodeHandle) -> None:
    rewrite: dict[str, str | None] = {}
    async with session_whose_requests_change(f"{node.mcp_url}?tools=core", rewrite) as client:
        saved = await call(client, "save_memory", content="A session's tools are fixed when it starts.")
        rewrite["tools"] = None  # every later request of the session without ?tools=core
        listed = await client.list_tools()
        with pytest.raises(MCPError) as refused:
            await client.call_tool("update_memory", {"id": saved["id"], "tags": ["mcp"]})
        pong = await call(client, "ping")
    assert_core(listed)
    assert "'update_memory' is not among this connection's tools (the core tool profile)" in str(refused.value)
    assert pong["ok"] is True


@pytest.mark.parametrize(("opened", "asked"), [("core", "full"), ("full", "core")])
async def test_a_request_naming_another_profile_than_its_sessions_is_refused(
    node: NodeHandle, opened: str, asked: str
) -> None:
    rewrite: dict[str, str | None] = {}
    async with session_whose_requests_change(f"{node.mcp_url}?tools={opened}", rewrite) as client:
        rewrite["tools"] = asked
        with pytest.raises(MCPError) as refused:
            await client.list_tools()
        rewrite.pop("tools")
        still = await client.list_tools()
    message = str(refused.value)
    assert f"This session has the {opened} tool profile, chosen when it was initialized" in message
    assert f"start a new session with /mcp?tools={asked}" in message
    assert ({tool.name for tool in still.tools} == CORE_TOOLS) is (opened == "core")
