"""The MCP surface of the gateway against a real node: streamable HTTP (both protocol eras) and stdio."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, stdio_client, tool_error

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MODES = ["legacy", "auto"]  # legacy = initialize handshake (Claude Code, Cursor...); auto = 2026-07-28
READ_TOOLS = {
    "search_memory", "get_memory", "list_memories", "memory_history", "memory_at", "get_memory_stats", "ping",
    "list_agents", "list_teams", "list_handoffs", "session_context", "detect_contradictions",
    "list_engrams", "get_engram_info", "load_engram", "read_engram_file", "search_engram_knowledge",
}  # fmt: skip
WRITE_TOOLS = {"save_memory", "update_memory", "delete_memory", "supersede_memory", "unsupersede_memory",
               "consolidate_team",
               "create_handoff", "accept_handoff", "complete_handoff", "pin_memory", "unpin_memory",
               "consolidate_memory", "write_engram_file", "capture_memory", "correct_memory", "add_knowledge",
               "install_engram"}  # fmt: skip
METADATA = {"n": 5, "nested": {"a": [1, 2]}, "ratio": 0.5, "flag": True, "none": None}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


# --- dev-mode node ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_tools_are_listed_with_when_to_use_descriptions_and_annotations(node: NodeHandle, mode: str) -> None:
    async with http_client(node.mcp_url, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 80, tool.name
        assert tool.output_schema is None, tool.name  # answers are compact JSON (tests/integration/test_mcp_compact.py)
        assert tool.annotations is not None
        assert bool(tool.annotations.read_only_hint) is (tool.name in READ_TOOLS), tool.name
    assert "start of every task" in (tools["search_memory"].description or "")
    assert "worth keeping" in (tools["save_memory"].description or "")
    assert instructions and "search_memory" in instructions and "save_memory" in instructions
    schema = tools["save_memory"].input_schema
    assert schema["required"] == ["content"]
    assert "ctx" not in schema["properties"]


@pytest.mark.parametrize("mode", MODES)
async def test_save_then_search_returns_structured_hit_with_metadata_exactly_as_given(
    node: NodeHandle, mode: str
) -> None:
    tag = unique()
    async with http_client(node.mcp_url, mode=mode, name="claude-code") as client:
        saved = await call(
            client,
            "save_memory",
            content=f"The billing service retries webhooks three times ({tag}).",
            tags=[tag, "billing"],
            topics=["webhooks"],
            memory_type="decision",
            importance="high",
            metadata=METADATA,
            valid_at="2026-01-31T12:00:00Z",
        )
        # No min_seq and no wait: the gateway's cursor makes the search wait for its own acknowledged write.
        query = "How often are billing webhooks retried?"
        found = await call(client, "search_memory", query=query, tags=[tag], detail="full")
        compact = await call(client, "search_memory", query=query, tags=[tag])
    assert saved["id"] == saved["memory"]["id"] and saved["version"] == 1 and saved["seq"] > 0
    assert "redactions" not in saved  # none
    assert [hit["id"] for hit in compact["hits"]] == [saved["id"]] and "metadata" not in compact["hits"][0]
    assert found["applied_seq"] >= saved["seq"]
    assert isinstance(found["reranked"], bool)
    [hit] = found["hits"]
    assert isinstance(hit["score"], float)
    assert "explain" not in hit
    memory = hit["memory"]
    assert memory["id"] == saved["id"]
    assert memory["content"] == f"The billing service retries webhooks three times ({tag})."
    assert memory["metadata"] == METADATA
    assert memory["tags"] == [tag, "billing"]
    assert memory["topics"] == ["webhooks"]
    assert (memory["memory_type"], memory["importance"]) == ("decision", "high")
    assert memory["valid_at"] == "2026-01-31T12:00:00.000Z"
    assert memory["namespace"] == "default"
    assert memory["source"] == "claude-code"


async def test_search_without_filters_finds_a_memory_saved_just_before(node: NodeHandle) -> None:
    word = unique("quokka")
    async with http_client(node.mcp_url) as client:
        saved = await call(client, "save_memory", content=f"The staging cluster is named {word}.")
        found = await call(client, "search_memory", query=f"staging cluster {word}", limit=10)
    assert saved["id"] in [h["id"] for h in found["hits"]]


async def test_another_agent_sees_a_save_through_the_same_gateway_immediately(node: NodeHandle) -> None:
    tag = unique()
    async with (
        http_client(node.mcp_url, agent="writer", name="claude-code") as writer,
        http_client(node.mcp_url, agent="reader", name="cursor", mode="legacy") as reader,
    ):
        saved = await call(writer, "save_memory", content=f"The release is frozen until Monday {tag}", tags=[tag])
        found = await call(reader, "search_memory", query="is the release frozen?", tags=[tag])
        got = await call(reader, "get_memory", id=saved["id"])
    assert [h["id"] for h in found["hits"]] == [saved["id"]]
    assert got["owner_agent"] == "writer"


async def test_explain_adds_per_stage_ranks(node: NodeHandle) -> None:
    tag = unique()
    async with http_client(node.mcp_url) as client:
        await call(client, "save_memory", content=f"Deploys happen on Tuesdays {tag}", tags=[tag])
        found = await call(client, "search_memory", query="when do deploys happen", tags=[tag], explain=True)
    [hit] = found["hits"]
    assert hit["explain"], hit
    for stage in hit["explain"].values():
        assert set(stage) == {"rank", "score"}


async def test_get_returns_the_memory_and_list_is_most_recent_first(node: NodeHandle) -> None:
    tag = unique()
    async with http_client(node.mcp_url) as client:
        ids = [(await call(client, "save_memory", content=f"step {i} of {tag}", tags=[tag]))["id"] for i in range(3)]
        got = await call(client, "get_memory", id=ids[1])
        listed = await call(client, "list_memories", tags=[tag])
        first_page = await call(client, "list_memories", tags=[tag], limit=2)
    assert got["id"] == ids[1] and got["content"] == f"step 1 of {tag}"
    assert [m["id"] for m in listed["memories"]] == ids[::-1]
    assert "next_page_token" not in listed  # the last page
    assert [m["id"] for m in first_page["memories"]] == ids[:0:-1]


async def test_list_pages_through_all_memories_with_the_token(node: NodeHandle) -> None:
    tag = unique()
    async with http_client(node.mcp_url) as client:
        ids = [(await call(client, "save_memory", content=f"page item {i} {tag}", tags=[tag]))["id"] for i in range(3)]
        first = await call(client, "list_memories", tags=[tag], limit=2)
        assert first["next_page_token"]
        second = await call(client, "list_memories", tags=[tag], limit=2, page_token=first["next_page_token"])
    assert [m["id"] for m in first["memories"] + second["memories"]] == ids[::-1]


async def test_list_pages_memories_sharing_a_timestamp_each_exactly_once(node: NodeHandle) -> None:
    tag = unique()
    lines = "\n".join(json.dumps({"content": f"tied {i} {tag}", "tags": [tag]}) for i in range(120))
    imported = httpx.post(
        f"{node.http_url}/v1/memories:import", content=lines, headers={"Content-Type": "application/x-ndjson"},
        timeout=60,
    ).json()  # fmt: skip
    listed: list[str] = []
    async with http_client(node.mcp_url) as client:
        # No min_seq: the gateway's cursor makes the list wait for the import it acknowledged.
        page = await call(client, "list_memories", tags=[tag], limit=7)
        listed += [m["id"] for m in page["memories"]]
        while page.get("next_page_token"):  # absent on the last page
            page = await call(client, "list_memories", tags=[tag], limit=7, page_token=page["next_page_token"])
            listed += [m["id"] for m in page["memories"]]
        message = await tool_error(client, "list_memories", page_token="1e999")

    assert len(listed) == len(set(listed)) == 120
    assert set(listed) == {item["id"] for item in imported["items"]}
    assert "page_token" in message and "omit it to start over" in message


@pytest.mark.parametrize("mode", MODES)
async def test_ping_says_who_the_caller_is(node: NodeHandle, mode: str) -> None:
    async with http_client(node.mcp_url, agent="claude@laptop", name="claude-code", mode=mode) as client:
        pong = await call(client, "ping")
    assert pong["ok"] is True
    assert (pong["agent"], pong["namespace"], pong["source"]) == ("claude", "default", "claude-code")  # @laptop: device
    assert pong["version"]


@pytest.mark.parametrize("mode", MODES)
async def test_agent_id_header_becomes_owner_agent(node: NodeHandle, mode: str) -> None:
    async with http_client(node.mcp_url, agent="gemini-cli@box", name="gemini", mode=mode) as client:
        saved = await call(client, "save_memory", content=f"Owner comes from the header {unique()}")
        got = await call(client, "get_memory", id=saved["id"])
    assert saved["memory"]["owner_agent"] == got["owner_agent"] == "gemini-cli"  # "@box" is the device
    assert got["source"] == "gemini"


async def test_without_agent_header_the_client_name_is_the_agent(node: NodeHandle) -> None:
    async with http_client(node.mcp_url, name="cursor") as client:
        saved = await call(client, "save_memory", content=f"Anonymous dev caller {unique()}")
    assert saved["memory"]["owner_agent"] == "cursor"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"content": "x", "importance": "urgent"}, "importance"),
        ({"content": "x", "memory_type": "rumour"}, "memory_type"),
        ({"content": "x", "valid_at": "yesterday"}, "valid_at"),
        ({"content": "x", "metadata": [1, 2]}, "metadata"),
        ({"content": "   "}, "content"),
        ({}, "content"),
    ],
)
async def test_invalid_save_arguments_are_tool_errors_naming_the_field(
    node: NodeHandle, arguments: dict[str, Any], field: str
) -> None:
    async with http_client(node.mcp_url) as client:
        message = await tool_error(client, "save_memory", **arguments)
    assert field in message


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"query": "q", "limit": 1000}, "limit"),
        ({"query": "q", "created_after": "last week"}, "created_after"),
    ],
)
async def test_invalid_search_arguments_are_tool_errors_naming_the_field(
    node: NodeHandle, arguments: dict[str, Any], field: str
) -> None:
    async with http_client(node.mcp_url) as client:
        message = await tool_error(client, "search_memory", **arguments)
    assert field in message


async def test_unknown_id_is_a_tool_error_saying_what_to_do(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        message = await tool_error(client, "get_memory", id=str(uuid.uuid4()))
    assert "search_memory" in message


async def test_bad_agent_id_header_is_a_tool_error_naming_the_header(node: NodeHandle) -> None:
    async with http_client(node.mcp_url, agent="no spaces allowed") as client:
        message = await tool_error(client, "ping")
    assert "X-Engram-Agent-ID" in message


async def test_secrets_in_content_are_redacted_and_listed(node: NodeHandle) -> None:
    secret = "sk-proj-" + "a1B2c3D4e5" * 4
    tag = unique()
    async with http_client(node.mcp_url) as client:
        saved = await call(
            client, "save_memory", content=f"Use OPENAI_API_KEY={secret} for the eval runs {tag}", tags=[tag]
        )
        found = await call(client, "search_memory", query="eval runs key", tags=[tag])
    assert secret not in saved["memory"]["content"]
    assert "[REDACTED:api_key]" in saved["memory"]["content"]
    assert saved["redactions"] == [{"kind": "api_key", "count": 1}]
    assert secret not in found["hits"][0]["content"]


async def test_memory_type_filter_accepts_one_or_several_types(node: NodeHandle) -> None:
    tag = unique()
    async with http_client(node.mcp_url) as client:
        fact = await call(client, "save_memory", content=f"Fact {tag}", tags=[tag], memory_type="fact")
        pref = await call(client, "save_memory", content=f"Preference {tag}", tags=[tag], memory_type="preference")
        only_facts = await call(client, "search_memory", query=tag, tags=[tag], memory_type="fact")
        both = await call(client, "list_memories", tags=[tag], memory_type=["fact", "preference"])
    assert [h["id"] for h in only_facts["hits"]] == [fact["id"]]
    assert {m["id"] for m in both["memories"]} == {fact["id"], pref["id"]}


async def test_stdio_server_saves_and_searches_with_client_name_as_agent(node: NodeHandle) -> None:
    tag = unique()
    env = {"ENGRAM_LOG_LEVEL": "WARNING", "ENGRAM_AGENT_ID": "robot-7"}
    async with stdio_client(node.home, env, name="cursor") as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"Saved over stdio {tag}", tags=[tag])
        found = await call(client, "search_memory", query="saved over stdio", tags=[tag])
    assert (pong["agent"], pong["namespace"], pong["source"]) == ("cursor", "default", "cursor")
    assert [h["id"] for h in found["hits"]] == [saved["id"]]
    assert saved["memory"]["owner_agent"] == "cursor"
    # Another gateway (HTTP) sees it too once it asks for the write's sequence.
    async with http_client(node.mcp_url) as client:
        seen = await call(client, "search_memory", query="saved over stdio", tags=[tag], min_seq=saved["seq"])
    assert [h["id"] for h in seen["hits"]] == [saved["id"]]


def test_a_session_s_tool_call_is_answered_with_one_json_body_not_an_event_stream(node: NodeHandle) -> None:
    # A stream per POST cost more than the call (docs/benchmarks.md); no tool sends anything while it runs.
    with httpx.Client(headers=MCP_HEADERS) as http:
        opened = http.post(node.mcp_url, json=INITIALIZE)
        assert opened.headers["content-type"].startswith("application/json")
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(node.mcp_url, json=initialized, headers=session).status_code == 202
        arguments = {"query": "anything at all", "limit": 1}
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "search_memory", "arguments": arguments}}  # fmt: skip
        answered = http.post(node.mcp_url, json=request, headers=session)
        http.delete(node.mcp_url, headers=session)
    assert answered.headers["content-type"].startswith("application/json")
    reply = answered.json()
    assert reply["id"] == 2 and not reply["result"].get("isError")
    assert "hits" in reply["result"]["structuredContent"]


def test_dev_mode_still_refuses_a_wrong_key_on_mcp(node: NodeHandle) -> None:
    headers = {**MCP_HEADERS, "Authorization": "Bearer engram_00000000_" + "A" * 43}
    response = httpx.post(node.mcp_url, json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    assert "not valid" in response.json()["detail"]


# --- secured node (dev mode off) ----------------------------------------------------------------------------


def test_mcp_without_a_key_is_refused_with_401_before_the_mcp_layer(secured_node: NodeHandle) -> None:
    response = httpx.post(secured_node.mcp_url, json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "engram keys create" in response.json()["detail"]


def test_mcp_with_a_wrong_key_is_refused_with_401(secured_node: NodeHandle) -> None:
    headers = {**MCP_HEADERS, "Authorization": "Bearer engram_00000000_" + "A" * 43}
    assert httpx.post(secured_node.mcp_url, json=INITIALIZE, headers=headers).status_code == 401


def test_mcp_with_a_key_but_a_foreign_host_is_refused(secured_node: NodeHandle) -> None:
    key = secured_node.create_key("host-ns", "alice")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    foreign_host = httpx.post(secured_node.mcp_url, json=INITIALIZE, headers={**headers, "Host": "evil.example"})
    foreign_origin = httpx.post(
        secured_node.mcp_url, json=INITIALIZE, headers={**headers, "Origin": "http://evil.example"}
    )
    allowed = httpx.post(secured_node.mcp_url, json=INITIALIZE, headers=headers)
    assert foreign_host.status_code == 421
    assert foreign_origin.status_code == 403
    assert allowed.status_code == 200


async def test_keys_keep_namespaces_apart_over_mcp(secured_node: NodeHandle) -> None:
    ns_a, ns_b, tag = unique("a"), unique("b"), unique()
    key_a = secured_node.create_key(ns_a, "alice")
    key_b = secured_node.create_key(ns_b, "bob")
    async with http_client(secured_node.mcp_url, key=key_a) as alice:
        saved_a = await call(alice, "save_memory", content=f"Alice's plan {tag}", tags=[tag])
        pong = await call(alice, "ping")
        got_a = await call(alice, "get_memory", id=saved_a["id"])
    async with http_client(secured_node.mcp_url, key=key_b) as bob:
        found = await call(bob, "search_memory", query=f"plan {tag}", tags=[tag], min_seq=saved_a["seq"])
        listed = await call(bob, "list_memories", tags=[tag])
        not_found = await tool_error(bob, "get_memory", id=saved_a["id"])
        saved_b = await call(bob, "save_memory", content=f"Bob's plan {tag}", tags=[tag])
        got_b = await call(bob, "get_memory", id=saved_b["id"])
    async with http_client(secured_node.mcp_url, key=key_a) as alice:
        alice_sees = await call(alice, "search_memory", query=f"plan {tag}", tags=[tag], min_seq=saved_b["seq"])
    assert (pong["namespace"], pong["agent"]) == (ns_a, "alice")
    assert got_a["namespace"] == ns_a and saved_a["memory"]["owner_agent"] == "alice"
    assert found["hits"] == [] and listed["memories"] == []
    assert "No memory with id" in not_found
    assert got_b["namespace"] == ns_b
    assert [h["id"] for h in alice_sees["hits"]] == [saved_a["id"]]


async def test_read_only_key_cannot_save(secured_node: NodeHandle) -> None:
    key = secured_node.create_key(unique("ro"), "reader", scopes=("read",))
    async with http_client(secured_node.mcp_url, key=key) as client:
        message = await tool_error(client, "save_memory", content="should not be stored")
        listed = await call(client, "list_memories")
    assert "'write' scope" in message
    assert listed["memories"] == []


async def test_stdio_acts_with_engram_api_key_on_a_secured_node(secured_node: NodeHandle) -> None:
    namespace = unique("stdio")
    key = secured_node.create_key(namespace, "ci-bot")
    env = {"ENGRAM_LOG_LEVEL": "WARNING", "ENGRAM_API_KEY": key, "ENGRAM_DEV_MODE": "false"}
    async with stdio_client(secured_node.home, env, name="codex") as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"From the CI bot {unique()}")
        got = await call(client, "get_memory", id=saved["id"])
    assert (pong["namespace"], pong["agent"], pong["source"]) == (namespace, "ci-bot", "codex")
    assert got["namespace"] == namespace


async def test_stdio_without_a_key_on_a_secured_setup_explains_engram_api_key(
    secured_node: NodeHandle,
) -> None:
    env = {"ENGRAM_LOG_LEVEL": "ERROR", "ENGRAM_DEV_MODE": "false"}
    async with stdio_client(secured_node.home, env) as client:
        message = await tool_error(client, "ping")
    assert "ENGRAM_API_KEY" in message and "engram keys create" in message
