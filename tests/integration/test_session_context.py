"""Session context and pins against a real node, over MCP (the real SDK client) and REST: the Markdown stays within
its token budget counted with the embedder's tokenizer, pinned memories come first (at most 5 in detail), the
project and the query shape it, the configured weights change its order, and only a memory's owner pins it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import NodeHandle, start_node
from tests.helpers.mcp import call, http_client
from tests.helpers.tokens import tokens

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PROBLEM = "application/problem+json"


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def space(node: NodeHandle) -> str:
    """A shared key (no agent) for a namespace of this test alone."""
    return node.create_key(unique("ns"), "")


def as_agent(key: str, agent: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "X-Engram-Agent-ID": agent}


def save(api: httpx.Client, headers: dict[str, str], content: str, **fields: Any) -> str:
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=headers)
    assert saved.status_code == 201, saved.text
    return str(saved.json()["id"])


def session_context(api: httpx.Client, headers: dict[str, str], **params: Any) -> dict[str, Any]:
    response = api.get("/v1/session-context", params=params, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def fill(api: httpx.Client, headers: dict[str, str], count: int, **fields: Any) -> list[str]:
    """Saves ``count`` memories of varied lengths and importance (each call its own: a repeat would not be saved)."""
    levels = ("low", "normal", "high", "critical")
    repeated = "retries back off exponentially up to a minute. "
    batch = uuid.uuid4().hex[:6]
    ids = []
    for i in range(count):
        content = f"Finding {i}-{batch} about the payment service: " + repeated * (1 + i % 5)
        ids.append(save(api, headers, content, importance=levels[i % 4], memory_type="finding", **fields))
    return ids


@pytest.mark.parametrize("budget", [100, 300, 800])
async def test_session_context_stays_within_its_budget_in_the_embedders_tokens(
    node: NodeHandle, api: httpx.Client, space: str, budget: int
) -> None:
    headers = as_agent(space, "claude-code")
    fill(api, headers, 20)
    body = session_context(api, headers, token_budget=budget)
    assert body["tokens"] == tokens(body["markdown"]) <= budget
    assert body["token_budget"] == budget and body["candidates"] == 20
    assert body["memories"] and body["omitted"] == 20 - len(body["memories"])
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        result = await client.call_tool("session_context", {"token_budget": budget})
    assert not result.is_error
    assert result.structured_content is not None
    markdown = result.content[0].text  # type: ignore[union-attr]
    assert markdown == result.structured_content["markdown"]
    assert tokens(markdown) == result.structured_content["tokens"] <= budget


async def test_a_larger_budget_shows_more_the_top_three_in_detail_and_the_rest_as_titles(
    api: httpx.Client, space: str
) -> None:
    headers = as_agent(space, "claude-code")
    fill(api, headers, 12)
    small, large = (session_context(api, headers, token_budget=b) for b in (300, 4000))
    assert len(large["memories"]) > len(small["memories"])
    assert [m["shown"] for m in large["memories"]] == ["detail"] * 3 + ["title"] * 9
    assert large["markdown"].startswith("# Engram session context")
    critical = [m for m in large["memories"] if m["shown"] == "detail"]
    assert all("Finding" in m["title"] for m in critical)


async def test_pinned_memories_come_first_in_detail_at_most_five(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    headers = as_agent(space, "claude-code")
    fill(api, headers, 4)  # critical and high memories that would otherwise lead
    pinned = [save(api, headers, f"Standing rule {i}: the release branch is cut on Tuesdays.", importance="low")
              for i in range(7)]  # fmt: skip
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        for memory_id in pinned:
            answer = await call(client, "pin_memory", id=memory_id)
            assert answer["pinned"] and answer["changed"] and "pinned" in answer["memory"]["tags"]
        out = await call(client, "session_context", token_budget=8000)
    shown = out["memories"]
    assert [(m["pinned"], m["shown"]) for m in shown[:5]] == [(True, "detail")] * 5
    assert {m["id"] for m in shown[:5]} <= set(pinned)
    assert [(m["pinned"], m["shown"]) for m in shown[5:8]] == [(False, "detail")] * 3
    assert {m["id"] for m in shown if m["pinned"]} == set(pinned)  # the last two pinned ones as titles
    assert out["markdown"].index("## Pinned") < out["markdown"].index("## Most useful now")


async def test_a_project_keeps_to_its_memories_and_a_query_brings_its_hits_forward(
    api: httpx.Client, space: str
) -> None:
    headers = as_agent(space, "claude-code")
    alpha = fill(api, headers, 3, project="alpha")
    fill(api, headers, 3, project="beta")
    needle = save(
        api, headers, "The TLS certificates of the ingress controller are rotated by cert-manager every 60 days.",
        importance="low", project="beta",
    )  # fmt: skip
    fill(api, headers, 4, project="beta")
    only_alpha = session_context(api, headers, project="alpha", token_budget=4000)
    assert {m["id"] for m in only_alpha["memories"]} == set(alpha)
    plain = session_context(api, headers, project="beta", token_budget=4000)
    asked = session_context(api, headers, project="beta", query="when are the ingress TLS certificates rotated?")
    assert needle not in [m["id"] for m in plain["memories"][:3]]
    assert asked["memories"][0]["id"] == needle and asked["memories"][0]["shown"] == "detail"
    assert "cert-manager every 60 days" in asked["markdown"]


async def test_pin_and_unpin_are_the_owners_and_change_a_memory_once(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    mine = save(api, as_agent(space, "claude-code"), "The staging database is reset every night at 03:00 UTC.")
    async with http_client(node.mcp_url, key=space, agent="gemini-cli") as other:
        refused = await other.call_tool("pin_memory", {"id": mine})
    assert refused.is_error
    assert "owned by 'claude-code', you are 'gemini-cli'" in refused.content[0].text  # type: ignore[union-attr]
    rest_refused = api.post(f"/v1/memories/{mine}/pin", headers=as_agent(space, "gemini-cli"))
    assert rest_refused.status_code == 403 and rest_refused.headers["content-type"].startswith(PROBLEM)

    async with http_client(node.mcp_url, key=space, agent="claude-code") as owner:
        pinned = await call(owner, "pin_memory", id=mine)
        again = await call(owner, "pin_memory", id=mine)
    assert (pinned["changed"], pinned["version"], pinned["seq"] is not None) == (True, 2, True)
    assert (again["changed"], again["version"], again.get("seq")) == (False, 2, None)
    unpinned = api.delete(f"/v1/memories/{mine}/pin", headers=as_agent(space, "claude-code"))
    assert unpinned.status_code == 200, unpinned.text
    assert unpinned.json()["pinned"] is False and "pinned" not in unpinned.json()["memory"]["tags"]
    repinned = api.post(f"/v1/memories/{mine}/pin", headers=as_agent(space, "claude-code"))
    assert repinned.status_code == 200 and repinned.json()["version"] == 4
    missing = api.post(f"/v1/memories/{uuid.uuid4()}/pin", headers=as_agent(space, "claude-code"))
    assert missing.status_code == 404


async def test_the_token_budget_is_validated(node: NodeHandle, api: httpx.Client, space: str) -> None:
    headers = as_agent(space, "claude-code")
    for budget in (10, 9000):
        response = api.get("/v1/session-context", params={"token_budget": budget}, headers=headers)
        assert response.status_code == 400 and "token_budget" in response.json()["detail"]
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        result = await client.call_tool("session_context", {"token_budget": 9000})
    assert result.is_error and "token_budget" in result.content[0].text  # type: ignore[union-attr]


def test_an_empty_namespace_answers_with_how_to_start(api: httpx.Client, space: str) -> None:
    body = session_context(api, as_agent(space, "claude-code"))
    assert body["memories"] == [] and "save_memory" in body["markdown"]


def test_the_weights_decide_between_important_and_recent(
    node: NodeHandle, tmp_path: Path, model_cache: Path, api: httpx.Client, space: str
) -> None:
    """The default weights (0.6 quality, 0.4 recency) put a critical memory first; a node that weighs recency
    only puts the newer, unimportant one first."""
    recency_only = start_node(
        tmp_path / "recency", model_cache, ENGRAM_SESSION_QUALITY_WEIGHT="0", ENGRAM_SESSION_RECENCY_WEIGHT="1"
    )
    try:
        key = recency_only.create_key(unique("ns"), "")
        for url, secret in ((node.http_url, space), (recency_only.http_url, key)):
            with httpx.Client(base_url=url, timeout=60) as client:
                headers = as_agent(secret, "claude-code")
                important = save(
                    client, headers, "Never run the migrations by hand in production.", importance="critical"
                )
                newer = save(client, headers, "The office plants are watered on Mondays.", importance="low")
                order = [m["id"] for m in session_context(client, headers)["memories"]]
                expected = [important, newer] if url == node.http_url else [newer, important]
                assert order == expected, url
    finally:
        assert recency_only.stop() == 0
