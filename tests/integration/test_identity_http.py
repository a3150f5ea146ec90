"""Who is calling, against a real secured node: over HTTP agent@device, X-Engram-Device and X-Engram-Team, keys
that fix a device and a team, shared keys and the refusal of a caller that names nobody; over stdio (`engram mcp`)
ENGRAM_DEVICE and the Claude Code agent team the process runs in."""

from __future__ import annotations

import json
import os
import re
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.keys import KeyStore
from engram.names import RESERVED_SOURCES, SOURCE_PATTERN
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, stdio_client, tool_error

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def api(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


def key(node: NodeHandle, **fields: str) -> str:
    """A key in a namespace of its own; without ``agent`` it is shared."""
    _, secret = KeyStore(node.settings.keys_path).create(namespace=unique("ns"), **fields)
    return secret


def save(api: httpx.Client, secret: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Saves through REST with ``headers`` and reads the memory back as the same caller."""
    headers = {"Authorization": f"Bearer {secret}", **(headers or {})}
    saved = api.post(
        "/v1/memories", json={"content": f"The session cookie is rotated hourly {unique()}"}, headers=headers
    )
    assert saved.status_code == 201, saved.text
    got = api.get(f"/v1/memories/{saved.json()['id']}", headers=headers)
    assert got.status_code == 200, got.text
    memory: dict[str, Any] = got.json()
    return memory


def test_rest_headers_name_the_agent_its_device_and_team(secured_node: NodeHandle, api: httpx.Client) -> None:
    shared = key(secured_node)
    memory = save(
        api, shared, {"X-Engram-Agent-ID": "claude-code", "X-Engram-Device": "laptop", "X-Engram-Team": "auth"}
    )
    assert memory["owner_agent"] == "claude-code"
    assert memory["origin"]["device"] == "laptop"
    assert memory["team"] == "auth"


def test_rest_agent_at_device_owns_as_the_agent_and_records_the_device(
    secured_node: NodeHandle, api: httpx.Client
) -> None:
    memory = save(api, key(secured_node), {"X-Engram-Agent-ID": "gemini-cli@desktop"})
    assert (memory["owner_agent"], memory["origin"]["device"]) == ("gemini-cli", "desktop")


def test_a_keys_agent_device_and_team_apply_when_the_request_names_none(
    secured_node: NodeHandle, api: httpx.Client
) -> None:
    memory = save(api, key(secured_node, agent="robot@jetson-7", team="robots"))
    assert (memory["owner_agent"], memory["origin"]["device"], memory["team"]) == ("robot", "jetson-7", "robots")
    fixed = key(secured_node, agent="robot@jetson-7", device="jetson-8", team="robots")
    memory = save(api, fixed, {"X-Engram-Device": "bench", "X-Engram-Team": "perf"})
    assert (memory["owner_agent"], memory["origin"]["device"], memory["team"]) == ("robot", "bench", "perf")


async def test_a_caller_on_the_nodes_machine_gets_its_host_name_as_device(
    secured_node: NodeHandle, api: httpx.Client
) -> None:
    # ping shows the gateway's resolution itself (a memory's origin could also come from ingest's own default).
    async with http_client(secured_node.mcp_url, key=key(secured_node, agent="claude-code")) as client:
        pong = await call(client, "ping")
    assert pong["identity"] == f"claude-code@{socket.gethostname()}"
    memory = save(api, key(secured_node, agent="claude-code"))
    assert memory["origin"]["device"] == socket.gethostname()


def test_a_shared_key_caller_that_names_nobody_is_refused_with_how_to_name_itself(
    secured_node: NodeHandle, api: httpx.Client
) -> None:
    refused = api.post(
        "/v1/memories", json={"content": "nobody wrote this"}, headers={"Authorization": f"Bearer {key(secured_node)}"}
    )
    assert refused.status_code == 400, refused.text
    detail = refused.json()["detail"]
    for how in ("X-Engram-Agent-ID", "?agent_id=", "clientInfo.name", "--agent"):
        assert how in detail


@pytest.mark.parametrize(("header", "value"), [("X-Engram-Device", "my laptop"), ("X-Engram-Team", "auth.v2")])
def test_a_bad_device_or_team_header_is_refused_naming_it(
    secured_node: NodeHandle, api: httpx.Client, header: str, value: str
) -> None:
    refused = api.post(
        "/v1/memories",
        json={"content": "x"},
        headers={"Authorization": f"Bearer {key(secured_node, agent='alice')}", header: value},
    )
    assert refused.status_code == 400, refused.text
    assert header in refused.json()["detail"]


async def test_mcp_headers_reach_the_caller_and_the_saved_memory(secured_node: NodeHandle) -> None:
    headers = {"X-Engram-Device": "laptop", "X-Engram-Team": "auth"}
    async with http_client(secured_node.mcp_url, key=key(secured_node), name="claude-code", headers=headers) as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"Tokens are signed with ES256 {unique()}")
        got = await call(client, "get_memory", id=saved["id"])
    assert (pong["agent"], pong["device"], pong["team"], pong["identity"]) == (
        "claude-code", "laptop", "auth", "claude-code@laptop"
    )  # fmt: skip
    assert pong["source"] == "claude-code"
    assert (got["owner_agent"], got["origin"]["device"], got["team"]) == ("claude-code", "laptop", "auth")


async def test_stdio_caller_is_on_engram_device_in_the_claude_code_team(
    secured_node: NodeHandle, tmp_path: Path
) -> None:
    teams = tmp_path / "claude" / "teams"
    for age, team in enumerate(("auth", "finished")):  # the newest, "finished", has every member stopped
        config = teams / team / "config.json"
        config.parent.mkdir(parents=True)
        members = [{"agentId": f"team-lead@{team}", "name": "team-lead", "isActive": team == "auth"}]
        config.write_text(json.dumps({"name": team, "members": members}))
        os.utime(config, (1_700_000_000 + age, 1_700_000_000 + age))
    env = {
        "ENGRAM_LOG_LEVEL": "WARNING",
        "ENGRAM_API_KEY": key(secured_node),
        "ENGRAM_DEVICE": "jetson-7",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    async with stdio_client(secured_node.home, env, name="claude-code") as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"The robot arm calibrates at boot {unique()}")
        got = await call(client, "get_memory", id=saved["id"])
    assert (pong["identity"], pong["team"], pong["source"]) == ("claude-code@jetson-7", "auth", "claude-code")
    assert (got["owner_agent"], got["origin"]["device"], got["team"]) == ("claude-code", "jetson-7", "auth")


# --- a memory's source: one rule for every edge (issue 33) -------------------------------------------------------

HOSTILE_CLIENT_NAMES = {  # clientInfo.name -> the source stored
    "long": ("Claude Code " + "x" * 100_000, "claude-code-" + "x" * 20),
    "markup": ('<img src=x onerror="alert(1)">\r\nX-Injected: yes', "img-src-x-onerror-alert-1-x-inje"),
    "bidi": ("good\u202egnp.exe", "good-gnp.exe"),
    "reserved": ("Sync", "mcp"),  # the transport's name: a client cannot pass for Engram's own sync
}


@pytest.mark.parametrize(("name", "source"), list(HOSTILE_CLIENT_NAMES.values()), ids=list(HOSTILE_CLIENT_NAMES))
async def test_a_hostile_mcp_client_name_is_stored_as_a_safe_source_or_the_transports(
    secured_node: NodeHandle, name: str, source: str
) -> None:
    async with http_client(secured_node.mcp_url, key=key(secured_node, agent="alice"), name=name) as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"Client names are the client's word {unique()}")
        got = await call(client, "get_memory", id=saved["id"])
    assert pong["source"] == got["source"] == source
    assert re.fullmatch(SOURCE_PATTERN, source) and source not in RESERVED_SOURCES
    assert got["owner_agent"] == "alice"  # the key names the agent; the client's name is never a claim


async def test_a_hostile_stdio_client_name_is_normalised_and_never_names_the_agent(
    secured_node: NodeHandle,
) -> None:
    env = {"ENGRAM_LOG_LEVEL": "WARNING", "ENGRAM_API_KEY": key(secured_node), "ENGRAM_AGENT_ID": "robot-7"}
    async with stdio_client(secured_node.home, env, name="Console\u202e") as client:
        reserved = await call(client, "ping")
    async with stdio_client(secured_node.home, env, name="Gemini CLI") as client:
        spaced = await call(client, "ping")
    # "console" is reserved: the transport's name; the unusable agent id is skipped for ENGRAM_AGENT_ID.
    assert (reserved["source"], reserved["agent"]) == ("mcp", "robot-7")
    assert (spaced["source"], spaced["agent"]) == ("gemini-cli", "Gemini-CLI")


@pytest.mark.parametrize("value", ["sync", "console", "admin", "enrichment", "Hook", "x" * 33, "ho ok"])
def test_an_x_engram_source_header_naming_a_reserved_or_unsafe_source_is_a_400(
    secured_node: NodeHandle, api: httpx.Client, value: str
) -> None:
    refused = api.post(
        "/v1/memories",
        json={"content": f"not stored {unique()}"},
        headers={"Authorization": f"Bearer {key(secured_node, agent='alice')}", "X-Engram-Source": value},
    )
    assert refused.status_code == 400, refused.text
    detail = refused.json()["detail"]
    assert detail.startswith("X-Engram-Source: ")
    assert ("reserved" in detail) if value in RESERVED_SOURCES else ("such as 'hook'" in detail)


# --- a key bound to an agent always acts as that agent ------------------------------------------------------


def keys_of(node: NodeHandle, *agents: str) -> list[str]:
    """One key per agent, all in one new namespace."""
    store, namespace = KeyStore(node.settings.keys_path), unique("ns")
    return [store.create(namespace=namespace, agent=agent)[1] for agent in agents]


SPOOFED = "This key acts as 'alice'; it cannot speak for 'bob'."


@pytest.mark.parametrize(
    ("claim", "how"),
    [
        ({"headers": {"X-Engram-Agent-ID": "bob"}}, "X-Engram-Agent-ID header"),
        ({"params": {"agent_id": "bob"}}, "?agent_id= parameter"),
    ],
    ids=["header", "query"],
)
def test_a_key_bound_to_alice_cannot_edit_bobs_memory_by_claiming_to_be_bob_over_rest(
    secured_node: NodeHandle, api: httpx.Client, claim: dict[str, dict[str, str]], how: str
) -> None:
    alice, bob = keys_of(secured_node, "alice", "bob")
    bobs = api.post("/v1/memories", json={"content": f"Deploys need two approvals {unique()}"},
                    headers={"Authorization": f"Bearer {bob}"})  # fmt: skip
    assert bobs.status_code == 201, bobs.text
    memory_id = bobs.json()["id"]
    as_alice = {"Authorization": f"Bearer {alice}", **claim.get("headers", {})}
    params = claim.get("params", {})

    for method, path, body in (
        ("PATCH", f"/v1/memories/{memory_id}", {"content": "Deploys need no approval"}),
        ("DELETE", f"/v1/memories/{memory_id}", None),
        ("POST", "/v1/memories", {"content": "bob said so"}),
        ("GET", f"/v1/memories/{memory_id}", None),
    ):
        refused = api.request(method, path, json=body, headers=as_alice, params=params)
        assert refused.status_code == 403, refused.text
        detail = refused.json()["detail"]
        assert SPOOFED in detail
        assert how in detail and "use bob's key" in detail

    unchanged = api.get(f"/v1/memories/{memory_id}", headers={"Authorization": f"Bearer {bob}"}).json()
    assert unchanged["content"].startswith("Deploys need two approvals")
    assert unchanged["version"] == 1


def test_a_bound_key_may_name_its_own_agent_and_a_device(secured_node: NodeHandle, api: httpx.Client) -> None:
    (alice,) = keys_of(secured_node, "alice")
    memory = save(api, alice, {"X-Engram-Agent-ID": "alice@phone"})
    assert (memory["owner_agent"], memory["origin"]["device"]) == ("alice", "phone")
    memory = save(api, alice, {"X-Engram-Agent-ID": "alice"})
    assert memory["owner_agent"] == "alice"


async def test_a_key_bound_to_alice_cannot_claim_bob_over_mcp(secured_node: NodeHandle) -> None:
    alice, bob = keys_of(secured_node, "alice", "bob")
    async with http_client(secured_node.mcp_url, key=bob) as client:
        bobs = await call(client, "save_memory", content=f"Releases are cut on Thursdays {unique()}")

    async with http_client(secured_node.mcp_url, key=alice, agent="bob") as client:
        for tool, arguments in (
            ("update_memory", {"id": bobs["id"], "content": "Releases are cut daily"}),
            ("delete_memory", {"id": bobs["id"]}),
            ("ping", {}),
        ):
            message = await tool_error(client, tool, **arguments)
            assert SPOOFED in message and "X-Engram-Agent-ID" in message

    # The client's name is its product, not a claim: a bound key ignores it and acts as its agent.
    async with http_client(secured_node.mcp_url, key=alice, name="bob") as client:
        pong = await call(client, "ping")
        assert pong["agent"] == "alice"
        refused = await tool_error(client, "update_memory", id=bobs["id"], content="Releases are cut daily")
        assert "owned by 'bob'" in refused

    async with http_client(secured_node.mcp_url, key=bob) as client:
        got = await call(client, "get_memory", id=bobs["id"])
    assert (got["version"], got["content"].startswith("Releases are cut on Thursdays")) == (1, True)
