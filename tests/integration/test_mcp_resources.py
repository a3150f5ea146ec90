"""MCP resources, the template, the prompt and resource-updated notifications against a real secured node with the
real SDK client: each resource shows its caller's namespace only, and a subscribed session hears about another
client's save, over `subscriptions/listen` (2026-07-28) and over `resources/subscribe` (the initialize handshake)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import INVALID_PARAMS, Implementation, ResourceUpdatedNotification, TextResourceContents

from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, stdio_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

URIS = {"engram://profile", "engram://recent", "engram://projects"}
EVENT_SECONDS = 30.0
QUIET_SECONDS = 1.0


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def api(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


@pytest.fixture
def space(secured_node: NodeHandle) -> str:
    """A shared key (agents name themselves) for a namespace of this test alone."""
    return secured_node.create_key(unique("ns"), "")


def as_agent(key: str, agent: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "X-Engram-Agent-ID": agent, **headers}


def save(api: httpx.Client, headers: dict[str, str], content: str, **fields: Any) -> str:
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=headers)
    assert saved.status_code == 201, saved.text
    return str(saved.json()["id"])


async def read(client: Client, uri: str) -> str:
    result = await client.read_resource(uri)
    [contents] = result.contents
    assert isinstance(contents, TextResourceContents) and contents.mime_type == "text/markdown"
    return contents.text


async def next_event(subscription: Subscription) -> Any:
    with anyio.fail_after(EVENT_SECONDS):
        return await subscription.__anext__()


async def test_resources_the_template_and_the_prompt_are_listed(secured_node: NodeHandle, space: str) -> None:
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code@laptop", mode="legacy") as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
        prompt = await client.get_prompt("engram-system-prompt", {"project": "billing"})
        subscribe = client.server_capabilities.resources
    assert {str(r.uri) for r in resources} == URIS
    assert all(r.mime_type == "text/markdown" and r.description for r in resources)
    assert [t.uri_template for t in templates] == ["engram://memory/{id}"]
    [listed] = prompts
    assert listed.name == "engram-system-prompt" and listed.description
    assert [(a.name, a.required) for a in listed.arguments or []] == [("project", False)]
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    expected = ["session_context", "search_memory", "save_memory", "memory_type", "list_handoffs", "create_handoff",
                "update_memory", 'tags=["claude-code"]', 'project="billing"', "claude-code@laptop"]  # fmt: skip
    for phrase in expected:
        assert phrase in text, phrase
    assert subscribe is not None and subscribe.subscribe is True  # resources/subscribe is served


async def test_the_profile_shows_who_you_are_your_preferences_and_working_style(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    me = as_agent(space, "claude-code@laptop", **{"X-Engram-Team": "auth"})
    minor = save(api, me, "The user likes short commit messages.", memory_type="preference", importance="low")
    major = save(api, me, "The user wants every change covered by a test.", memory_type="preference", importance="high")
    style = save(api, me, "Work in small commits, one concern each.", tags=["working-style"])
    flow = save(api, me, "Open a draft PR early and ask for review.", tags=["workflow"])
    fact = save(api, me, "The API gateway runs on port 8443.", memory_type="fact")
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code@laptop",
                           headers={"X-Engram-Team": "auth"}) as client:  # fmt: skip
        profile = await read(client, "engram://profile")
    assert "**claude-code@laptop**" in profile and "team `auth`" in profile and "namespace `ns" in profile
    preferences, style_part = profile.split("## Preferences")[1].split("## Working style")
    assert preferences.index(major) < preferences.index(minor)
    assert style in style_part and flow in style_part
    assert fact not in profile


async def test_recent_shows_the_ten_most_recently_changed(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    me = as_agent(space, "claude-code")
    ids = [save(api, me, f"Observation {i}: queue depth peaked at {100 + i} messages.") for i in range(12)]
    updated = api.patch(f"/v1/memories/{ids[0]}", json={"importance": "high"}, headers=me)
    assert updated.status_code == 200, updated.text
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code") as client:
        recent = await read(client, "engram://recent")
    lines = [line for line in recent.splitlines() if line.startswith("- ")]
    assert len(lines) == 10
    assert ids[0] in lines[0] and ids[11] in lines[1]
    assert ids[1] not in recent and ids[2] not in recent


async def test_projects_show_counts_and_their_latest_decisions_and_facts(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    me = as_agent(space, "claude-code")
    old = save(api, me, "Payments use Stripe.", memory_type="decision", project="payments")
    decisions = [save(api, me, f"Payments decision {i}: retry webhooks {i + 2} times.", memory_type="decision",
                      project="payments") for i in range(3)]  # fmt: skip
    fact = save(api, me, "The payments API is versioned by date.", memory_type="fact", project="payments")
    save(api, me, "A finding about payments.", memory_type="finding", project="payments")
    search = save(api, me, "Search uses BM25 and dense vectors.", memory_type="fact", project="search")
    save(api, me, "No project here.")
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code") as client:
        projects = await read(client, "engram://projects")
    sections = {part.split("\n", 1)[0]: part for part in projects.split("\n## ")[1:]}
    assert list(sections) == ["search", "payments"]  # the most recently active first
    assert "6 memories." in sections["payments"] and "1 memory." in sections["search"]
    assert all(d in sections["payments"] for d in decisions) and fact in sections["payments"]
    assert old not in projects  # only the latest 3 decisions
    assert search in sections["search"] and "No project here" not in projects


async def test_the_memory_template_shows_one_memory_and_says_when_there_is_none(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    me = as_agent(space, "claude-code@laptop")
    memory_id = save(api, me, "Rotate the signing key every 90 days.\nThe old key stays valid for a week.",
                     summary="Signing key rotation", memory_type="decision", tags=["security"], project="auth",
                     metadata={"ticket": "SEC-12"})  # fmt: skip
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code@laptop") as client:
        text = await read(client, f"engram://memory/{memory_id}")
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"engram://memory/{uuid.uuid4()}")
    assert text.startswith("# Signing key rotation\n\nRotate the signing key every 90 days.\nThe old key stays")
    for line in (f"- **id**: `{memory_id}`", "- **type**: decision", "- **owner**: claude-code@laptop",
                 "- **tags**: security", "- **project**: auth", '- **metadata**: `{"ticket": "SEC-12"}`',
                 "- **version**: 1 (0 earlier"):  # fmt: skip
        assert line in text, line
    assert "No memory with id" in missing.value.error.message


async def test_a_malformed_memory_id_is_invalid_params_not_an_internal_error(
    secured_node: NodeHandle, space: str
) -> None:
    async with http_client(secured_node.mcp_url, key=space, agent="claude-code@laptop") as client:
        with pytest.raises(MCPError) as malformed:
            await client.read_resource("engram://memory/not-a-uuid")
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"engram://memory/{uuid.uuid4()}")
    assert malformed.value.error.code == INVALID_PARAMS and "is not a memory id" in malformed.value.error.message
    assert missing.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # the initialize handshake, and 2026-07-28
async def test_resources_show_the_callers_namespace_only(
    secured_node: NodeHandle, api: httpx.Client, space: str, mode: str
) -> None:
    mine = save(api, as_agent(space, "claude-code"), "Our staging cluster is in eu-west-1.", memory_type="preference",
                project="infra", tags=["workflow"])  # fmt: skip
    other = secured_node.create_key(unique("ns"), "gemini-cli")
    async with http_client(secured_node.mcp_url, key=other, mode=mode) as client:
        texts = [await read(client, uri) for uri in sorted(URIS)]
        with pytest.raises(MCPError) as foreign:
            await client.read_resource(f"engram://memory/{mine}")
    assert all(mine not in text and "eu-west-1" not in text and "infra" not in text for text in texts)
    assert "No memory with id" in foreign.value.error.message


async def test_resources_and_session_context_over_stdio(secured_node: NodeHandle, api: httpx.Client) -> None:
    key = secured_node.create_key(unique("ns"), "")
    saved = save(api, as_agent(key, "claude-code"), "The user prefers dark mode.", memory_type="preference")
    assert api.get(f"/v1/memories/{saved}", headers=as_agent(key, "claude-code")).status_code == 200  # indexed now
    env = {"ENGRAM_LOG_LEVEL": "WARNING", "ENGRAM_API_KEY": key, "ENGRAM_AGENT_ID": "cursor", "ENGRAM_DEVICE": "desk"}
    async with stdio_client(secured_node.home, env) as client:
        profile = await read(client, "engram://profile")
        memory = await read(client, f"engram://memory/{saved}")
        context = await call(client, "session_context", token_budget=200)
    assert "**pytest-stdio@desk**" in profile and saved in profile  # clientInfo.name names the agent
    assert memory.startswith("# The user prefers dark mode.")
    assert [m["id"] for m in context["memories"]] == [saved] and context["tokens"] <= 200


@contextlib.asynccontextmanager
async def legacy_client(url: str, key: str, agent: str, on_update: Callable[[str], None]) -> AsyncIterator[Client]:
    """A client that speaks the initialize handshake, calling ``on_update`` with the URI of each resources/updated
    notification it receives."""

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            on_update(str(message.params.uri))

    async with (
        httpx2.AsyncClient(headers=as_agent(key, agent), timeout=httpx2.Timeout(60, read=300)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name="pytest-legacy", version="1.0"),
            mode="legacy",
            message_handler=on_message,
        ) as client,
    ):
        yield client


async def test_a_listening_session_hears_of_changes_in_its_namespace_only(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    writer = as_agent(space, "claude-code")
    outsider_key = secured_node.create_key(unique("ns"), "cursor")
    async with (
        http_client(secured_node.mcp_url, key=space, agent="gemini-cli") as watcher,
        http_client(secured_node.mcp_url, key=outsider_key) as outsider,
        watcher.listen(resource_subscriptions=["engram://recent", "engram://profile"]) as mine,
        outsider.listen(resource_subscriptions=["engram://recent", "engram://profile"]) as theirs,
    ):
        fact = save(api, writer, "The CI runners were moved to ARM64.", memory_type="fact")
        assert await next_event(mine) == ResourceUpdated(uri="engram://recent")
        save(api, writer, "The user prefers squash merges.", memory_type="preference")
        assert {await next_event(mine), await next_event(mine)} == {
            ResourceUpdated(uri="engram://recent"), ResourceUpdated(uri="engram://profile"),
        }  # fmt: skip
        with anyio.move_on_after(QUIET_SECONDS) as quiet:
            await theirs.__anext__()
        assert quiet.cancelled_caught, "a session of another namespace heard of this namespace's changes"
        async with watcher.listen(resource_subscriptions=[f"engram://memory/{fact}"]) as one:
            changed = api.patch(f"/v1/memories/{fact}", json={"importance": "high"}, headers=writer)
            assert changed.status_code == 200, changed.text
            assert await next_event(one) == ResourceUpdated(uri=f"engram://memory/{fact}")
            assert await read(watcher, f"engram://memory/{fact}") != ""


async def test_a_session_of_the_handshake_era_subscribes_and_is_notified(
    secured_node: NodeHandle, api: httpx.Client, space: str
) -> None:
    notes: list[str] = []
    arrived = anyio.Event()

    def on_update(uri: str) -> None:
        notes.append(uri)
        arrived.set()

    async with legacy_client(secured_node.mcp_url, space, "gemini-cli", on_update) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("engram://recent")
        with pytest.warns(MCPDeprecationWarning), pytest.raises(MCPError) as unknown:
            await client.subscribe_resource("engram://nothing")
        # The session's standalone stream (a GET) opens after the handshake: save until a notification arrives.
        with anyio.fail_after(EVENT_SECONDS):
            while not arrived.is_set():
                save(api, as_agent(space, "claude-code"), f"Build {unique()} passed on the first try.")
                with anyio.move_on_after(QUIET_SECONDS * 2):
                    await arrived.wait()
    assert "subscribe to engram://profile" in unknown.value.error.message
    assert set(notes) == {"engram://recent"}  # only what it subscribed to
