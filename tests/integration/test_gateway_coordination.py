"""Agents working together through the gateway against a real node: identity in ping, the agent registry, teams
and their summaries, handoffs, the similar-finding warning, context only in conversations, over MCP (the SDK client),
REST and the CLI."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import numpy as np
import pytest

from engram import cli
from engram.config import Settings
from engram.embed import OnnxEmbedder
from engram.keys import KeyStore
from engram.model import parse_time
from engram.services.gateway.app import build_app
from engram.services.gateway.backend import Backend
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, stdio_client, tool_error
from tests.helpers.rest import assert_problem

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

FINDING = "The login endpoint leaks whether an email address is registered through its error message"
NEAR_FINDING = "The login endpoint leaks whether an email address is registered through its error messages"
OTHER_FINDING = "Nightly builds on the ARM runners take twice as long since the cache was moved to S3"


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def who(agent: str, *, device: str | None = None, team: str | None = None, key: str | None = None) -> dict[str, str]:
    """The headers of a caller: agent (agent@device), device and team, and its key."""
    headers = {"X-Engram-Agent-ID": agent}
    if device:
        headers["X-Engram-Device"] = device
    if team:
        headers["X-Engram-Team"] = team
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


@pytest.fixture
def space(node: NodeHandle) -> str:
    """A shared key (no agent) for a namespace of this test alone, so registries and teams hold only its writes."""
    return node.create_key(unique("ns"), "")


def save(api: httpx.Client, headers: dict[str, str], content: str, **fields: Any) -> dict[str, Any]:
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=headers)
    assert saved.status_code == 201, saved.text
    body: dict[str, Any] = saved.json()
    return body


# --- identity ----------------------------------------------------------------------------------------------


async def test_ping_shows_agent_device_team_and_identity(node: NodeHandle) -> None:
    headers = {"X-Engram-Device": "laptop", "X-Engram-Team": "auth"}
    async with http_client(node.mcp_url, agent="claude-code", headers=headers) as client:
        pong = await call(client, "ping")
    assert (pong["agent"], pong["device"], pong["team"]) == ("claude-code", "laptop", "auth")
    assert pong["identity"] == "claude-code@laptop"


async def test_an_agent_id_with_a_device_names_both_and_saves_show_the_writers_device(
    node: NodeHandle, api: httpx.Client
) -> None:
    async with http_client(node.mcp_url, agent="gemini-cli@desktop", name="gemini-cli") as client:
        pong = await call(client, "ping")
        saved = await call(client, "save_memory", content=f"The desktop GPU is an RTX 4090 {unique()}")
    assert (pong["agent"], pong["device"], pong["identity"]) == ("gemini-cli", "desktop", "gemini-cli@desktop")
    memory = api.get(f"/v1/memories/{saved['id']}").json()
    assert (memory["owner_agent"], memory["origin"]["device"]) == ("gemini-cli", "desktop")


# --- the agent registry ------------------------------------------------------------------------------------


async def test_list_agents_shows_each_agent_with_its_devices_clients_teams_and_memories(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    team = unique("team")
    save(api, who("claude-code", device="laptop", team=team, key=space), f"Sessions live 12h {unique()}")
    save(api, who("claude-code", device="laptop", team=team, key=space), f"Tokens rotate daily {unique()}")
    async with http_client(node.mcp_url, key=space, agent="gemini-cli@desktop", name="gemini-cli") as client:
        await call(client, "save_memory", content=f"The CI runs on ARM {unique()}")
        listed = await call(client, "list_agents")

    agents = {agent["agent_id"]: agent for agent in listed["agents"]}
    assert set(agents) == {"claude-code", "gemini-cli"}
    claude, gemini = agents["claude-code"], agents["gemini-cli"]
    assert (claude["memories"], claude["devices"], claude["teams"], claude["clients"]) == (
        2,
        ["laptop"],
        [team],
        ["rest"],
    )
    assert claude["writes"] == 2
    assert (gemini["memories"], gemini["devices"], gemini["clients"]) == (1, ["desktop"], ["gemini-cli"])
    assert listed["agents"][0]["agent_id"] == "gemini-cli", "most recently seen first"
    for agent in agents.values():
        first, last = parse_time(agent["first_seen"]), parse_time(agent["last_seen"])
        assert first is not None and last is not None and first <= last
        assert agent["last_seen"].endswith("Z")

    rest = api.get("/v1/agents", headers={"Authorization": f"Bearer {space}"})
    assert rest.status_code == 200, rest.text
    # MCP answers leave out the empty fields REST shows.
    assert [{k: v for k, v in agent.items() if v not in ("", [], None)} for agent in rest.json()["agents"]] == (
        listed["agents"]
    )


# --- teams ---------------------------------------------------------------------------------------------------


async def test_teams_are_listed_with_counts_and_consolidate_writes_a_searchable_summary(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    team = unique("auth")
    alice = who("claude-code", device="laptop", team=team, key=space)
    save(api, alice, "Refresh tokens are stored hashed in Postgres", memory_type="finding")
    save(api, alice, "We use PASETO instead of JWT because of algorithm confusion", memory_type="decision")
    save(api, who("gemini-cli", device="desktop", team=team, key=space), "Rate limits block SSO", memory_type="blocker")

    teams = api.get("/v1/teams", headers=alice)
    assert teams.status_code == 200, teams.text
    [listed] = teams.json()["teams"]
    assert (listed["team"], listed["memories"], sorted(listed["agents"])) == (team, 3, ["claude-code", "gemini-cli"])
    assert listed["summary_id"] == "" and "summaries" not in teams.json()

    consolidated = api.post(f"/v1/teams/{team}/consolidate", headers=alice)
    assert consolidated.status_code == 200, consolidated.text
    body = consolidated.json()
    assert body["team"] == team and body["job"]["kind"] == "team_summary" and body["job"]["state"] == "succeeded"
    summary = body["summary"]
    assert summary["memory_type"] == "team-summary"
    assert "team-summary" in summary["tags"] and f"team:{team}" in summary["tags"]
    assert "PASETO" in summary["content"] and "Refresh tokens" in summary["content"]

    async with http_client(node.mcp_url, key=space, agent="claude-code", headers={"X-Engram-Team": team}) as client:
        again = await call(client, "consolidate_team")  # the caller's own team
        found = await call(client, "list_teams", search="which token format did the team choose")
    assert again["team"] == team and again["summary"]["id"] != summary["id"]
    assert api.get(f"/v1/memories/{summary['id']}", headers=alice).json()["superseded_by"] == again["summary"]["id"]
    [listed] = found["teams"]
    assert listed["summary_id"] == again["summary"]["id"]
    assert [hit["id"] for hit in found["summaries"]] == [again["summary"]["id"]], "one current summary"

    searched = api.get("/v1/teams", params={"search": "token format"}, headers=alice)
    assert [hit["memory"]["id"] for hit in searched.json()["summaries"]] == [again["summary"]["id"]]


async def test_consolidate_without_a_team_says_how_to_name_or_join_one(node: NodeHandle, api: httpx.Client) -> None:
    problem = assert_problem(api.post("/v1/teams:consolidate", headers=who("loner")), 400)
    assert problem["detail"] == "team: name a team, or join one: X-Engram-Team header / ENGRAM_TEAM."
    async with http_client(node.mcp_url, agent="loner") as client:
        text = await tool_error(client, "consolidate_team")
    assert "name a team, or join one" in text


def test_consolidating_a_team_without_memories_says_to_save_some_first(api: httpx.Client, space: str) -> None:
    team = unique("empty")
    problem = assert_problem(api.post(f"/v1/teams/{team}/consolidate", headers=who("lead", key=space)), 409)
    assert f"Team '{team}' has no active memories to summarise" in problem["detail"]
    assert "(job " in problem["detail"]


def test_consolidate_needs_the_write_scope(node: NodeHandle, api: httpx.Client) -> None:
    reader = node.create_key(unique("ns"), "reader", scopes=("read",))
    problem = assert_problem(api.post("/v1/teams/auth/consolidate", headers={"Authorization": f"Bearer {reader}"}), 403)
    assert "write" in problem["detail"]


async def test_a_gateway_without_consolidation_answers_503_naming_the_setting(node: NodeHandle) -> None:
    settings = Settings.from_env({}, home=node.home)
    backend = Backend(ingest_addr=node.grpc_address, search_addr=node.grpc_address)  # no consolidation_addr
    try:
        app = build_app(settings, backend, KeyStore(settings.keys_path))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            response = await client.post("/v1/teams/auth/consolidate", headers=who("lead"))
    finally:
        await backend.close()
    problem = assert_problem(response, 503)
    assert "ENGRAM_CONSOLIDATION_ADDR" in problem["detail"]


# --- handoffs ------------------------------------------------------------------------------------------------


async def test_a_handoff_to_agent_at_device_is_listed_for_that_device_only(node: NodeHandle, space: str) -> None:
    async with (
        http_client(node.mcp_url, key=space, agent="claude-code@laptop", name="claude-code") as alice,
        http_client(node.mcp_url, key=space, agent="gemini-cli@desktop", name="gemini-cli") as on_desktop,
        http_client(node.mcp_url, key=space, agent="gemini-cli@laptop", name="gemini-cli") as on_laptop,
    ):
        created = await call(alice, "create_handoff", target_agent="gemini-cli@desktop", context="Finish the port.")
        assert [m["id"] for m in (await call(on_desktop, "list_handoffs"))["memories"]] == [created["id"]]
        assert (await call(on_laptop, "list_handoffs"))["memories"] == []
        await call(on_desktop, "accept_handoff", id=created["id"])


async def test_a_handoff_is_created_found_by_its_target_accepted_and_completed(node: NodeHandle, space: str) -> None:
    async with (
        http_client(node.mcp_url, key=space, agent="claude-code@laptop", name="claude-code") as alice,
        http_client(node.mcp_url, key=space, agent="gemini-cli@desktop", name="gemini-cli") as bob,
        http_client(node.mcp_url, key=space, agent="cursor") as carol,
    ):
        created = await call(
            alice, "create_handoff", target_agent="gemini-cli",
            context="Session refresh is half done.\nThe middleware is written, the tests are not.",
            active_files=["src/auth/session.py", "tests/test_session.py"],
            decisions_made=["Sliding expiry of 12h, because users complained about daily logins"],
            next_steps=["Write the expiry tests", "Remove the old cookie"], tags=["auth"],
        )  # fmt: skip
        assert created["memory"]["handoff"]["status"] == "pending"  # the compact answer shows it
        memory = await call(alice, "get_memory", id=created["id"])  # every field
        assert memory["memory_type"] == "handoff" and memory["tags"] == ["auth"]
        assert memory["summary"] == "Handoff to gemini-cli: Session refresh is half done."
        assert memory["content"] == (
            "Session refresh is half done.\nThe middleware is written, the tests are not.\n\n"
            "## Active files\n- src/auth/session.py\n- tests/test_session.py\n\n"
            "## Decisions made\n- Sliding expiry of 12h, because users complained about daily logins\n\n"
            "## Next steps\n- Write the expiry tests\n- Remove the old cookie"
        )
        assert memory["metadata"] == {
            "active_files": ["src/auth/session.py", "tests/test_session.py"],
            "decisions_made": ["Sliding expiry of 12h, because users complained about daily logins"],
            "next_steps": ["Write the expiry tests", "Remove the old cookie"],
        }
        handoff = memory["handoff"]
        assert (handoff["target_agent"], handoff["status"]) == ("gemini-cli", "pending")
        expires = parse_time(handoff["expires_at"])
        created_at = parse_time(memory["created_at"])
        assert expires is not None and created_at is not None and abs(expires - created_at - 86400) < 5

        mine = await call(bob, "list_handoffs")
        assert [m["id"] for m in mine["memories"]] == [created["id"]]
        assert (await call(carol, "list_handoffs"))["memories"] == [], "not addressed to carol"
        sent = await call(alice, "list_handoffs", role="from_me", status="all")
        assert [m["id"] for m in sent["memories"]] == [created["id"]]

        refused = await tool_error(carol, "accept_handoff", id=created["id"])
        assert "gemini-cli" in refused
        accepted = await call(bob, "accept_handoff", id=created["id"], note="On it")
        assert accepted["memory"]["handoff"]["status"] == "accepted"
        assert accepted["version"] == memory["version"] + 1
        assert (await call(bob, "list_handoffs"))["memories"] == [], "no longer pending"
        taken = await call(bob, "list_handoffs", status="accepted")
        assert [m["id"] for m in taken["memories"]] == [created["id"]]

        completed = await call(bob, "complete_handoff", id=created["id"], note="Tests written, cookie removed")
        assert completed["memory"]["handoff"]["status"] == "completed"
        done = await call(alice, "list_handoffs", role="from_me", status="completed")
        assert [m["id"] for m in done["memories"]] == [created["id"]]
        everyone = await call(carol, "list_handoffs", role="all", status="all")
        assert [m["id"] for m in everyone["memories"]] == [created["id"]]

        unknown = str(uuid.uuid4())
        assert f"No memory with id '{unknown}'" in await tool_error(bob, "accept_handoff", id=unknown)
        assert "target_agent" in await tool_error(alice, "create_handoff", target_agent="not an agent", context="x")


def test_handoffs_over_rest_with_problems_for_wrong_agent_and_unknown_id(api: httpx.Client, space: str) -> None:
    alice, bob = who("claude-code", key=space), who("gemini-cli", key=space)
    created = api.post(
        "/v1/handoffs",
        headers=alice,
        json={"target_agent": "gemini-cli", "context": "Finish the migration", "next_steps": ["Run it on staging"]},
    )
    assert created.status_code == 201, created.text
    handoff_id = created.json()["id"]
    assert created.headers["location"] == f"/v1/memories/{handoff_id}"
    assert created.json()["memory"]["content"] == "Finish the migration\n\n## Next steps\n- Run it on staging"

    listed = api.get("/v1/handoffs", headers=bob)
    assert [m["id"] for m in listed.json()["memories"]] == [handoff_id]
    assert api.get("/v1/handoffs", params={"role": "from_me"}, headers=bob).json()["memories"] == []
    assert_problem(api.get("/v1/handoffs", params={"status": "lost"}, headers=bob), 400)

    problem = assert_problem(api.post(f"/v1/handoffs/{handoff_id}/accept", headers=alice, json={}), 403)
    assert "gemini-cli" in problem["detail"]
    accepted = api.post(f"/v1/handoffs/{handoff_id}/accept", headers={**bob, "Content-Type": "application/json"})
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["memory"]["handoff"]["status"] == "accepted"
    stale = api.post(f"/v1/handoffs/{handoff_id}/complete", headers=bob, json={"expected_version": 1})
    assert assert_problem(stale, 409)["current_version"] == 2
    completed = api.post(
        f"/v1/handoffs/{handoff_id}/complete", headers=bob, json={"note": "Migrated", "expected_version": 2}
    )
    assert completed.status_code == 200, completed.text
    assert completed.json()["memory"]["handoff"]["status"] == "completed"

    assert_problem(api.post(f"/v1/handoffs/{uuid.uuid4()}/complete", headers=bob, json={}), 404)
    assert_problem(api.post("/v1/handoffs", headers=alice, json={"target_agent": "gemini-cli"}), 400)
    assert_problem(
        api.post("/v1/handoffs", headers=alice, json={"target_agent": "x", "context": "y", "colour": 1}), 400
    )


# --- the similar-finding warning -----------------------------------------------------------------------------


def test_the_dense_stage_score_is_the_cosine_similarity_of_the_two_texts(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    """The warning's similarity is the search's dense stage score: measured here against the embedder itself."""
    saved = save(api, who("claude-code", key=space), FINDING, memory_type="finding")
    hits = api.post(
        "/v1/memories:search", headers=who("claude-code", key=space),
        json={"query": NEAR_FINDING, "sources": ["dense"], "rerank": False, "explain": True, "min_seq": saved["seq"]},
    ).json()["hits"]  # fmt: skip
    [hit] = [h for h in hits if h["memory"]["id"] == saved["id"]]
    embedder = OnnxEmbedder.from_package(node.model_cache, precision=Settings().embed_precision)
    a, b = embedder.embed([FINDING, NEAR_FINDING])
    cosine = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert hit["explain"]["dense"]["score"] == pytest.approx(cosine, abs=1e-3)
    assert cosine > 0.95


def test_a_finding_like_another_agents_warns_without_blocking_and_not_for_own_or_different_text(
    api: httpx.Client, space: str
) -> None:
    alice, bob = who("claude-code", key=space), who("gemini-cli", key=space)
    original = save(api, alice, FINDING, memory_type="finding")
    assert original["warnings"] == [], "nothing like it yet"

    mine_again = save(api, alice, NEAR_FINDING, memory_type="finding")
    assert mine_again["warnings"] == [], "an agent is not warned about its own findings"

    near = save(api, bob, NEAR_FINDING, memory_type="finding")
    assert near["memory"]["memory_type"] == "finding", "saved all the same"
    [warning] = near["warnings"]
    assert warning["kind"] == "similar_finding"
    assert "claude-code" in warning["message"] and "supersede" in warning["message"]
    assert "reconcile" in warning["message"]
    assert {m["id"] for m in warning["memories"]} == {original["id"], mine_again["id"]}
    for similar in warning["memories"]:
        assert similar["owner_agent"] == "claude-code" and 0.85 <= similar["similarity"] <= 1.0
        assert similar["preview"].startswith("The login endpoint leaks")

    assert save(api, bob, OTHER_FINDING, memory_type="finding")["warnings"] == [], "a different text"
    assert save(api, bob, FINDING, memory_type="fact")["warnings"] == [], "only findings are checked"


async def test_mcp_shows_the_similar_finding_warning(node: NodeHandle, api: httpx.Client, space: str) -> None:
    original = save(api, who("claude-code", key=space), FINDING, memory_type="finding")
    async with http_client(node.mcp_url, key=space, agent="gemini-cli") as client:
        saved = await call(client, "save_memory", content=NEAR_FINDING, memory_type="finding")
    [warning] = saved["warnings"]
    assert [m["id"] for m in warning["memories"]] == [original["id"]]


# --- context only where saves form a conversation -----------------------------------------------------------


async def test_unrelated_saves_of_one_mcp_session_get_no_derived_context(node: NodeHandle, space: str) -> None:
    """Agents save unrelated facts one after another: the previous one is no context of the next (it would steal
    its lookups). A conversation_id still derives, and an explicit context is kept."""
    conversation = unique("c")
    async with http_client(node.mcp_url, key=space, agent="claude-code", mode="legacy") as session:
        await call(session, "save_memory", content=f"Prefers FastAPI over Flask {unique()}")
        plain = await call(session, "save_memory", content=f"JIRA-4821 tracks the flaky login test {unique()}")
        given = await call(session, "save_memory", content=f"Deploys are Tuesdays {unique()}", context="Given")
        opening = await call(session, "save_memory", content=f"Q: which port? {unique()}",
                             conversation_id=conversation)  # fmt: skip
        reply = await call(session, "save_memory", content=f"A: 8443 {unique()}", conversation_id=conversation)
        plain, given, opening, reply = [
            await call(session, "get_memory", id=saved["id"]) for saved in (plain, given, opening, reply)
        ]
    assert plain["context"] == ""
    assert given["context"] == "Given"
    assert opening["context"] == "", "a conversation's first save has no previous memory"
    assert reply["context"] == opening["content"], "ingest derives a conversation's context"


async def test_a_stdio_servers_saves_get_no_derived_context(node: NodeHandle) -> None:
    env = {"ENGRAM_LOG_LEVEL": "WARNING", "ENGRAM_AGENT_ID": "robot-7", "ENGRAM_TEAM": "fleet"}
    async with stdio_client(node.home, env, name="robot-agent") as client:
        pong = await call(client, "ping")
        await call(client, "save_memory", content=f"Q: where do the nightly backups go? {unique()}")
        saved = await call(client, "save_memory", content=f"A: to the NAS in rack 2 {unique()}")
        answer = await call(client, "get_memory", id=saved["id"])
    assert (pong["team"], pong["identity"].split("@")[0]) == ("fleet", "robot-agent")
    assert answer["context"] == ""
    assert answer["team"] == "fleet" and "team:fleet" in answer["tags"]


# --- the published surfaces ----------------------------------------------------------------------------------


async def test_mcp_lists_the_coordination_tools_with_when_to_use_descriptions(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    for name in ("list_agents", "list_teams", "consolidate_team", "create_handoff", "list_handoffs",
                 "accept_handoff", "complete_handoff"):  # fmt: skip
        assert len(tools[name].description or "") > 100, name
    assert "start of a session" in (tools["list_handoffs"].description or "")
    assert "stop before the work is done" in (tools["create_handoff"].description or "")
    assert tools["create_handoff"].input_schema["required"] == ["target_agent", "context"]
    assert "create_handoff" in instructions and "list_handoffs" in instructions


def test_openapi_documents_the_coordination_routes(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert {"get"} <= set(paths["/v1/agents"]) and {"get"} <= set(paths["/v1/teams"])
    assert "post" in paths["/v1/teams/{team}/consolidate"] and "post" in paths["/v1/teams:consolidate"]
    assert {"get", "post"} <= set(paths["/v1/handoffs"])
    assert "post" in paths["/v1/handoffs/{memory_id}/accept"] and "post" in paths["/v1/handoffs/{memory_id}/complete"]
    headers = {p["name"] for p in paths["/v1/agents"]["get"]["parameters"] if p["in"] == "header"}
    assert {"X-Engram-Agent-ID", "X-Engram-Device", "X-Engram-Team"} <= headers


# --- the CLI -------------------------------------------------------------------------------------------------


def engram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_lists_agents_and_teams_consolidates_and_moves_handoffs(
    node: NodeHandle, api: httpx.Client, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    space = node.create_key(unique("ns"), "")
    monkeypatch.setenv("ENGRAM_API_KEY", space)
    team = unique("cli")
    save(api, who("claude-code", device="laptop", team=team, key=space), "The cache is Redis 7", memory_type="fact")
    url = ("--url", node.http_url)

    code, out, err = engram(capsys, "agents", *url)
    assert (code, err) == (0, "")
    assert "claude-code  1 memory" in out and "devices laptop" in out and f"teams {team}" in out
    code, out, _ = engram(capsys, "teams", *url)
    assert code == 0 and f"{team}  1 memory  agents claude-code" in out

    code, out, err = engram(capsys, "consolidate", "--team", team, "--agent", "claude-code", *url)
    assert code == 0, err
    assert out.startswith(f"Team {team}: job ") and "succeeded" in out and "Redis 7" in out
    code, out, _ = engram(capsys, "teams", "--search", "which cache", "--json", *url)
    assert code == 0 and '"summaries"' in out and '"team-summary"' in out

    code, out, err = engram(capsys, "handoffs", "create", "gemini-cli", "--context", "Upgrade Redis", "--file",
                            "infra/redis.tf", "--next", "Plan the window", "--agent", "claude-code", *url)  # fmt: skip
    assert code == 0, err
    assert out.startswith("Handed over to gemini-cli: ") and "pending; expires" in out
    handoff_id = out.split(": ", 1)[1].split(" ", 1)[0]
    code, out, _ = engram(capsys, "handoffs", "--agent", "gemini-cli", *url)
    assert code == 0 and out.startswith(f"{handoff_id}  pending  from claude-code to gemini-cli")
    assert "Handoff to gemini-cli: Upgrade Redis" in out
    code, out, _ = engram(capsys, "handoffs", "list", "--role", "from_me", "--agent", "claude-code", "--json", *url)
    assert code == 0 and handoff_id in out

    code, _, err = engram(capsys, "handoffs", "accept", handoff_id, "--agent", "cursor", *url)
    assert code == 1 and "(HTTP 403)" in err
    code, out, _ = engram(capsys, "handoffs", "accept", handoff_id, "--agent", "gemini-cli", *url)
    assert code == 0 and out.startswith(f"Handoff {handoff_id} accepted (version 2")
    code, out, _ = engram(capsys, "handoffs", "complete", handoff_id, "--note", "Done", "--agent", "gemini-cli", *url)
    assert code == 0 and out.startswith(f"Handoff {handoff_id} completed")
    code, _, err = engram(capsys, "handoffs", "complete", str(uuid.uuid4()), "--agent", "gemini-cli", *url)
    assert code == 1 and "No memory with id" in err and "(HTTP 404)" in err
    code, _, err = engram(capsys, "handoffs", "list", "--limit", "0", *url)
    assert code == 2 and "--limit" in err


def test_cli_pins_a_memory_and_shows_the_session_context_within_its_budget(
    node: NodeHandle, api: httpx.Client, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    space = node.create_key(unique("ns"), "")
    monkeypatch.setenv("ENGRAM_API_KEY", space)
    url, me = ("--url", node.http_url), ("--agent", "claude-code")
    pinned = save(api, who("claude-code", key=space), "Never deploy on Fridays", memory_type="preference")["id"]
    save(api, who("claude-code", key=space), "The staging database is Postgres 16", memory_type="fact")

    code, out, err = engram(capsys, "pin", pinned, *me, *url)
    assert (code, err) == (0, "")
    assert out.startswith(f"{pinned} is pinned now (version 2")
    code, out, _ = engram(capsys, "pin", pinned, *me, *url)
    assert code == 0 and "pinned already; nothing written" in out
    code, _, err = engram(capsys, "pin", pinned, "--agent", "cursor", *url)
    assert code == 1 and "(HTTP 403)" in err

    code, out, err = engram(capsys, "context", "--budget", "200", *me, *url)
    assert code == 0, err
    assert out.index("Never deploy on Fridays") < out.index("Postgres 16"), "pinned first"
    tokens, budget = out.rsplit("(", 1)[1].split(" in ", 1)[1].split(" tokens")[0].split(" of ")
    assert int(tokens) <= int(budget) == 200
    code, _, err = engram(capsys, "context", "--budget", "1", *url)
    assert code == 1 and "token_budget" in err

    code, out, _ = engram(capsys, "unpin", pinned, *me, *url)
    assert code == 0 and out.startswith(f"{pinned} is not pinned now (version 3")
