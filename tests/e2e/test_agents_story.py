"""The story of issue 8, end to end on a real node in production mode (keys required), with real MCP clients:
agent A (claude-code@laptop, team "auth") saves findings; agent B (gemini-cli@desktop) is told over SSE, reads
them, cannot edit them, saves its own; A hands work over to B, B accepts and completes it; consolidate_team
summarises the team; a third client starting fresh reads its profile resource and a session context within
budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.types import TextResourceContents
from tokenizers import Tokenizer

from engram.embed.embedder import package_model_dir
from engram.keys import KeyStore
from tests.conftest import NodeHandle, start_node
from tests.helpers.mcp import call, http_client, tool_error
from tests.helpers.sse import event_stream

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

NAMESPACE = "acme"


@pytest.fixture(scope="module")
def story_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("story"), model_cache, ENGRAM_DEV_MODE="false")
    yield handle
    assert handle.stop() == 0


def key(node: NodeHandle, agent: str, device: str, team: str = "") -> str:
    _, secret = KeyStore(node.settings.keys_path).create(namespace=NAMESPACE, agent=agent, device=device, team=team)
    return secret


async def test_two_agents_share_findings_hand_work_over_and_a_third_starts_with_context(
    story_node: NodeHandle,
) -> None:
    key_a = key(story_node, "claude-code", "laptop", team="auth")
    key_b = key(story_node, "gemini-cli", "desktop")
    key_c = key(story_node, "cursor", "tablet")
    sse_a, sse_b = (
        httpx.AsyncClient(
            base_url=story_node.http_url, headers={"Authorization": f"Bearer {k}"}, timeout=httpx.Timeout(30, read=60)
        )
        for k in (key_a, key_b)
    )
    async with (
        sse_a,
        sse_b,
        event_stream(sse_a, exclude_self="true") as feed_a,
        event_stream(sse_b, exclude_self="true") as feed_b,
        http_client(story_node.mcp_url, key=key_a, name="claude-code") as a,
        http_client(story_node.mcp_url, key=key_b, name="gemini-cli") as b,
    ):
        # A saves two findings in team auth; B hears of both over SSE, with who wrote them and from where.
        jwks = "The auth service caches JWKS keys for 24 hours, so a rotated signing key is rejected until then."
        bcrypt = "Login latency spikes come from bcrypt cost 14 on the 2-core pods; cost 12 halves it."
        f1 = await call(a, "save_memory", content=jwks, memory_type="finding", topics=["auth"])
        f2 = await call(a, "save_memory", content=bcrypt, memory_type="finding", topics=["auth", "performance"])
        heard = await feed_b.until_id(f2["seq"])
        saved = [e.json() for e in heard if e.event == "memory_saved"]
        assert [e["memory_id"] for e in saved] == [f1["id"], f2["id"]]
        assert {(e["agent"], e["device"], e["team"]) for e in saved} == {("claude-code", "laptop", "auth")}
        assert "team:auth" in f1["memory"]["tags"]

        # B reads them (search and get), cannot edit them, and saves its own finding.
        hits = (await call(b, "search_memory", query="why is a rotated JWT signing key rejected?"))["hits"]
        assert hits[0]["id"] == f1["id"]
        assert (await call(b, "get_memory", id=f2["id"]))["owner_agent"] == "claude-code"
        refusal = await tool_error(b, "update_memory", id=f1["id"], content="The cache is 1 hour.")
        assert "owned by 'claude-code'" in refusal
        own = await call(b, "save_memory", content="The staging IdP sends tokens without a kid header.",
                         memory_type="finding", team="auth")  # fmt: skip
        assert own["memory"]["owner_agent"] == "gemini-cli"

        # A hands its work over to B; B hears of it and finds it pending, accepts it and completes it; A hears that.
        handoff = await call(
            a, "create_handoff", target_agent="gemini-cli", active_files=["auth/jwks.py"],
            context="Rotate the JWKS cache TTL down to 1 hour and verify login still works.",
            next_steps=["lower the TTL", "run the login e2e suite"],
        )  # fmt: skip
        created = (await feed_b.until_id(handoff["seq"]))[-1]
        assert created.event == "handoff_created"
        assert created.json()["memory"]["handoff"]["target_agent"] == "gemini-cli"
        pending = (await call(b, "list_handoffs"))["memories"]
        assert [m["id"] for m in pending] == [handoff["id"]]
        await call(b, "accept_handoff", id=handoff["id"])
        done = await call(b, "complete_handoff", id=handoff["id"], note="TTL is 1 hour; login e2e green.")
        assert done["memory"]["handoff"]["status"] == "completed"
        assert done["memory"]["owner_agent"] == "claude-code"  # moving a handoff on does not take it over
        steps = await feed_a.until_id(done["seq"])  # A's feed: B's events only (exclude_self)
        assert [(e.event, e.json()["memory_id"]) for e in steps] == [
            ("memory_saved", own["id"]), ("handoff_accepted", handoff["id"]), ("handoff_completed", handoff["id"]),
        ]  # fmt: skip
        assert (await call(b, "list_handoffs"))["memories"] == []

        # The team summary groups the team's findings, and is searchable; a second run supersedes the first.
        first = await call(a, "consolidate_team")
        summary = first["summary"]
        assert first["team"] == "auth" and summary["memory_type"] == "team-summary"
        assert "## Findings (3)" in summary["content"] and "## Other" in summary["content"]
        second = await call(b, "consolidate_team", team="auth")
        assert second["job"]["result"]["superseded_id"] == summary["id"]
        teams = (await call(a, "list_teams"))["teams"]
        assert [(t["team"], t["summary_id"]) for t in teams] == [("auth", second["summary"]["id"])]
        old = await call(a, "get_memory", id=summary["id"])
        assert old["status"] == "superseded" and old["superseded_by"] == second["summary"]["id"]

        agents = {agent["agent_id"]: agent for agent in (await call(b, "list_agents"))["agents"]}
        assert agents["claude-code"]["devices"] == ["laptop"] and agents["gemini-cli"]["devices"] == ["desktop"]
        assert agents["claude-code"]["memories"] >= 3

    # A third client starts fresh: its profile resource names it, its session context fits the budget.
    async with http_client(story_node.mcp_url, key=key_c, name="cursor") as c:
        profile = await c.read_resource("engram://profile")
        text = profile.contents[0]
        assert isinstance(text, TextResourceContents)
        assert "cursor@tablet" in text.text and NAMESPACE in text.text
        context = await call(c, "session_context", token_budget=300)
        assert 0 < context["tokens"] <= 300
        shown = {m["id"] for m in context["memories"]}
        assert f1["id"] in shown or f2["id"] in shown or second["summary"]["id"] in shown
        assert _token_count(context["markdown"], story_node.model_cache) <= 300


def _token_count(text: str, model_cache: Path) -> int:
    """Tokens of ``text`` by the embedder's own tokenizer, loaded here independently of the gateway."""
    tokenizer = Tokenizer.from_file(str(package_model_dir(model_cache) / "tokenizer.json"))
    return len(tokenizer.encode(text, add_special_tokens=False).ids)
