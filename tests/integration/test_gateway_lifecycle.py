"""The memory lifecycle through the gateway against a real node: update, delete, purge, supersede, history,
point-in-time reads, as_of search, stats and expiry durations, over REST, MCP (the real SDK client) and the CLI."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from engram import cli
from engram.model import parse_time
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, tool_error
from tests.helpers.rest import assert_problem

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

DAY = 86400.0


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def as_agent(agent: str) -> dict[str, str]:
    return {"X-Engram-Agent-ID": agent}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def now_rfc3339() -> str:
    """The client's clock (the node's: same machine), with microseconds so no rounding falls before a write."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@pytest.fixture
def secured(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


def save(api: httpx.Client, content: str, agent: str, **fields: Any) -> dict[str, Any]:
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=as_agent(agent))
    assert saved.status_code == 201, saved.text
    body: dict[str, Any] = saved.json()
    return body


# --- update and history -------------------------------------------------------------------------------------


async def test_update_makes_version_2_and_history_keeps_version_1_with_its_agent_and_source(
    node: NodeHandle, api: httpx.Client
) -> None:
    tag = unique()
    saved = save(api, f"The deploy target is Heroku {tag}", "writer@laptop", tags=[tag], metadata={"n": 1})
    async with http_client(node.mcp_url, agent="writer@laptop", name="cursor") as client:
        updated = await call(client, "update_memory", id=saved["id"], content=f"The deploy target is Fly.io {tag}")
        got = await call(client, "get_memory", id=saved["id"])
    assert (updated["id"], updated["version"]) == (saved["id"], 2)
    assert updated["memory"]["content"] == f"The deploy target is Fly.io {tag}"
    memory = got  # every field (an update answers the compact memory)
    assert (memory["tags"], memory["metadata"]) == ([tag], {"n": 1}), "fields not given keep their value"
    assert (memory["updated_by"], memory["source"]) == ("writer", "cursor")  # "@laptop" is the device
    assert got["version"] == 2
    [earlier] = got["history"]
    assert (earlier["version"], earlier["content"]) == (1, f"The deploy target is Heroku {tag}")
    assert (earlier["agent_id"], earlier["source"]) == ("writer", "rest")

    history = api.get(f"/v1/memories/{saved['id']}/history")
    assert history.status_code == 200, history.text
    versions = history.json()["versions"]
    assert [(v["version"], v["event"], v["source"], v["agent_id"]) for v in versions] == [
        (1, "memory_saved", "rest", "writer"),
        (2, "memory_updated", "cursor", "writer"),
    ]
    assert versions[-1]["content"] == memory["content"], "the last version is the current one"


def test_update_changes_only_the_fields_given_and_maps_metadata(api: httpx.Client) -> None:
    tag = unique()
    saved = save(api, f"Releases ship on Fridays {tag}", "owner", tags=[tag], importance="high", summary="ship day")
    patched = api.patch(
        f"/v1/memories/{saved['id']}",
        json={"metadata": {"ticket": "ENG-7"}, "tags": [tag, "release"], "summary": None},
        headers=as_agent("owner"),
    )
    assert patched.status_code == 200, patched.text
    memory = patched.json()["memory"]
    assert memory["metadata"] == {"ticket": "ENG-7"} and memory["tags"] == [tag, "release"]
    assert (memory["content"], memory["importance"]) == (saved["memory"]["content"], "high")
    assert memory["summary"] == "ship day", "null means unchanged"


@pytest.mark.parametrize("body", [{}, {"expected_version": 1}, {"summary": None, "tags": None}])
def test_an_update_without_a_field_to_change_is_a_400_saying_so(api: httpx.Client, body: dict[str, Any]) -> None:
    saved = save(api, f"x {unique()}", "owner")
    problem = assert_problem(api.patch(f"/v1/memories/{saved['id']}", json=body, headers=as_agent("owner")), 400)
    assert "give at least one field to change" in problem["detail"]


async def test_a_stale_expected_version_is_a_409_naming_the_current_version(
    node: NodeHandle, api: httpx.Client
) -> None:
    saved = save(api, f"The API port is 8080 {unique()}", "owner")
    path = f"/v1/memories/{saved['id']}"
    first = api.patch(path, json={"content": "The API port is 8081", "expected_version": 1}, headers=as_agent("owner"))
    assert first.status_code == 200 and first.json()["version"] == 2, first.text
    stale = api.patch(path, json={"content": "The API port is 9000", "expected_version": 1}, headers=as_agent("owner"))
    problem = assert_problem(stale, 409)
    assert "version 2" in problem["detail"] and problem["code"] == "failed_precondition"
    assert (problem["expected_version"], problem["current_version"]) == (1, 2)
    assert api.get(path).json()["content"] == "The API port is 8081", "a refused change writes nothing"
    async with http_client(node.mcp_url, agent="owner") as client:
        text = await tool_error(client, "update_memory", id=saved["id"], content="port 1", expected_version=1)
    assert "version 2" in text


async def test_update_by_non_owner_is_rejected_with_owner_named(node: NodeHandle, api: httpx.Client) -> None:
    saved = save(api, f"The staging DB is Postgres 16 {unique()}", "owner-agent")
    expected = (
        "Memory owned by 'owner-agent', you are 'intruder'. Use search_memory to read it, or save your own version."
    )
    path = f"/v1/memories/{saved['id']}"
    refused = api.patch(path, json={"content": "The staging DB is MySQL"}, params={"agent_id": "intruder"})
    assert assert_problem(refused, 403)["detail"] == expected
    assert assert_problem(api.delete(path, headers=as_agent("intruder")), 403)["detail"] == expected
    async with http_client(node.mcp_url, agent="intruder") as client:
        assert expected in await tool_error(client, "update_memory", id=saved["id"], tags=["mine"])
        assert expected in await tool_error(client, "delete_memory", id=saved["id"])
        got = await call(client, "get_memory", id=saved["id"])  # read all
    assert (got["version"], got["status"]) == (1, "active")


# --- delete and purge ---------------------------------------------------------------------------------------


async def test_delete_archives_hidden_from_search_and_list_but_kept_in_get_and_history(
    node: NodeHandle, api: httpx.Client
) -> None:
    tag = unique()
    saved = save(api, f"The office wifi is called Nimbus {tag}", "owner", tags=[tag])
    deleted = api.delete(f"/v1/memories/{saved['id']}", headers=as_agent("owner"))
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert (body["id"], body["purged"], body["memory"]["status"], body["memory"]["version"]) == (
        saved["id"], False, "archived", 2,
    )  # fmt: skip

    search = {"query": "office wifi name", "filters": {"tags": [tag]}}
    assert api.post("/v1/memories:search", json=search).json()["hits"] == []
    assert api.get("/v1/memories", params={"tags": tag}).json()["memories"] == []
    with_archived = {**search, "filters": {"tags": [tag], "include_archived": True}}
    assert [h["memory"]["id"] for h in api.post("/v1/memories:search", json=with_archived).json()["hits"]] == [
        saved["id"]
    ]
    for params in ({"include_archived": "true"}, {"status": "archived"}):
        listed = api.get("/v1/memories", params={"tags": tag, **params}).json()["memories"]
        assert [m["id"] for m in listed] == [saved["id"]], params
    assert api.get(f"/v1/memories/{saved['id']}").json()["status"] == "archived"
    events = [v["event"] for v in api.get(f"/v1/memories/{saved['id']}/history").json()["versions"]]
    assert events == ["memory_saved", "memory_deleted"]

    async with http_client(node.mcp_url, agent="owner") as client:
        other = await call(client, "save_memory", content=f"The guest wifi is Cirrus {tag}", tags=[tag])
        archived = await call(client, "delete_memory", id=other["id"], expected_version=1)
        listed = await call(client, "list_memories", tags=[tag], include_archived=True)
        active = await call(client, "list_memories", tags=[tag])
    assert archived["memory"]["status"] == "archived" and archived["purged"] is False
    assert {m["id"] for m in listed["memories"]} == {saved["id"], other["id"]}
    assert active["memories"] == []


def test_purge_without_an_admin_key_is_refused(api: httpx.Client) -> None:
    saved = save(api, f"Keep me {unique()}", "owner")
    refused = api.delete(f"/v1/memories/{saved['id']}", params={"purge": "true"}, headers=as_agent("owner"))
    problem = assert_problem(refused, 403)
    assert "'admin' scope" in problem["detail"] and "--scopes read,write,admin" in problem["detail"]
    assert api.get(f"/v1/memories/{saved['id']}").json()["status"] == "active"


def test_purge_with_an_admin_key_erases_the_memory(secured_node: NodeHandle, secured: httpx.Client) -> None:
    ns = unique("ns")
    writer = bearer(secured_node.create_key(ns, "writer"))
    admin = bearer(secured_node.create_key(ns, "ops", scopes=("read", "write", "admin")))
    saved = secured.post("/v1/memories", json={"content": f"Erase me {unique()}"}, headers=writer).json()
    secured.patch(f"/v1/memories/{saved['id']}", json={"tags": ["x"]}, headers=writer)
    purged = secured.delete(f"/v1/memories/{saved['id']}", params={"purge": "true"}, headers=admin)
    assert purged.status_code == 200, purged.text
    body = purged.json()
    assert (body["id"], body["purged"], body["memory"]) == (saved["id"], True, None)
    assert body["erased"] >= 2
    assert_problem(secured.get(f"/v1/memories/{saved['id']}", headers=writer), 404)


# --- supersede ----------------------------------------------------------------------------------------------


async def test_supersede_returns_the_new_memory_and_the_old_one_names_it(node: NodeHandle, api: httpx.Client) -> None:
    tag = unique()
    old = save(api, f"We use REST for the public API {tag}", "architect", tags=[tag], memory_type="decision")
    replaced = api.post(
        f"/v1/memories/{old['id']}:supersede",
        json={"content": f"We use gRPC for the public API {tag}", "tags": [tag], "memory_type": "decision"},
        headers=as_agent("architect"),
    )
    assert replaced.status_code == 200, replaced.text
    body = replaced.json()
    assert body["memory"]["content"] == f"We use gRPC for the public API {tag}" and body["id"] == body["memory"]["id"]
    assert (body["superseded"]["id"], body["superseded"]["status"]) == (old["id"], "superseded")
    got = api.get(f"/v1/memories/{old['id']}").json()
    assert (got["status"], got["superseded_by"]) == ("superseded", body["id"])
    hits = api.post("/v1/memories:search", json={"query": "public API protocol", "filters": {"tags": [tag]}})
    assert [h["memory"]["id"] for h in hits.json()["hits"]] == [body["id"]], "superseded memories leave search"

    async with http_client(node.mcp_url, agent="architect") as client:
        third = await call(client, "save_memory", content=f"We use GraphQL for the public API {tag}", tags=[tag])
        # Superseding the old memory again replaces the head of its chain (the gRPC one).
        chained = await call(client, "supersede_memory", old_id=old["id"], new_id=third["id"])
        both = await tool_error(client, "supersede_memory", old_id=third["id"], content="x", new_id=old["id"])
    assert (chained["id"], chained["superseded"]["id"]) == (third["id"], body["id"])
    assert "not both" in both


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": "a", "new_id": str(uuid.uuid4())}, "new_id"),
        ({"new_id": "x", "tags": ["t"]}, "tags"),
    ],
)
def test_supersede_needs_exactly_one_of_content_and_new_id(api: httpx.Client, body: dict[str, Any], field: str) -> None:
    saved = save(api, f"x {unique()}", "owner")
    response = api.post(f"/v1/memories/{saved['id']}:supersede", json=body, headers=as_agent("owner"))
    assert assert_problem(response, 400)["detail"].startswith(f"{field}:")


# --- point in time ------------------------------------------------------------------------------------------


async def test_memory_at_and_search_as_of_show_the_content_of_their_time(node: NodeHandle, api: httpx.Client) -> None:
    tag = unique()
    saved = save(api, f"The deploy target is Heroku {tag}", "owner", tags=[tag])
    between = now_rfc3339()
    updated = api.patch(
        f"/v1/memories/{saved['id']}", json={"content": f"The deploy target is Fly.io {tag}"}, headers=as_agent("owner")
    )
    assert updated.status_code == 200, updated.text

    then = api.get(f"/v1/memories/{saved['id']}/at", params={"time": between})
    assert then.status_code == 200, then.text
    assert (then.json()["version"], then.json()["content"]) == (1, f"The deploy target is Heroku {tag}")
    query = {"query": "where do we deploy?", "filters": {"tags": [tag]}}
    [old_hit] = api.post("/v1/memories:search", json={**query, "as_of": between}).json()["hits"]
    [new_hit] = api.post("/v1/memories:search", json=query).json()["hits"]
    assert old_hit["memory"]["content"] == f"The deploy target is Heroku {tag}"
    assert new_hit["memory"]["content"] == f"The deploy target is Fly.io {tag}"

    async with http_client(node.mcp_url) as client:
        at = await call(client, "memory_at", id=saved["id"], time=between)
        found = await call(client, "search_memory", query="where do we deploy?", tags=[tag], as_of=between)
        before = await tool_error(client, "memory_at", id=saved["id"], time="2001-01-01T00:00:00Z")
    assert at["content"] == f"The deploy target is Heroku {tag}"
    assert [h["content"] for h in found["hits"]] == [f"The deploy target is Heroku {tag}"]
    assert "did not exist yet" in before


def test_point_in_time_needs_an_rfc3339_time(api: httpx.Client) -> None:
    saved = save(api, f"x {unique()}", "owner")
    assert (
        "time" in assert_problem(api.get(f"/v1/memories/{saved['id']}/at", params={"time": "yesterday"}), 400)["detail"]
    )
    assert_problem(api.get(f"/v1/memories/{saved['id']}/at"), 400)
    search = api.post("/v1/memories:search", json={"query": "x", "as_of": "last week"})
    assert "as_of" in assert_problem(search, 400)["detail"]


# --- times outside what can be stored --------------------------------------------------------------------------

# Year 0000 (1 BC), and times whose offset moves them across either end of the years 0001-9999.
OUT_OF_RANGE = ["0000-06-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"]
REFUSED_TIME = "is outside the times Engram stores"


@pytest.mark.parametrize("value", OUT_OF_RANGE)
async def test_a_time_outside_the_years_0001_to_9999_is_refused_on_every_path(
    node: NodeHandle, api: httpx.Client, value: str
) -> None:
    tag = unique("year")
    for field in ("valid_at", "invalid_at", "expires_at"):
        body = {"content": f"The office opened {tag}", "tags": [tag], field: value}
        detail = assert_problem(api.post("/v1/memories", json=body, headers=as_agent("historian")), 400)["detail"]
        assert field in detail and REFUSED_TIME in detail and "0001-01-01T00:00:00Z" in detail
    saved = save(api, f"The office moved {tag}", "historian", tags=[tag])
    path = f"/v1/memories/{saved['id']}"
    for method, url, request in (
        ("PATCH", path, {"json": {"valid_at": value}}),
        ("GET", f"{path}/at", {"params": {"time": value}}),
        ("GET", "/v1/memories", {"params": {"created_after": value}}),
        ("POST", "/v1/memories:search", {"json": {"query": "office", "as_of": value}}),
    ):
        answer = api.request(method, url, headers=as_agent("historian"), **request)
        assert REFUSED_TIME in assert_problem(answer, 400)["detail"], (method, url)

    line = {"content": f"Imported with a year zero {tag}", "valid_at": value, "tags": [tag]}
    imported = api.post("/v1/memories:import", content=json.dumps(line) + "\n", headers=as_agent("historian"))
    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"] == 0 and REFUSED_TIME in imported.text

    async with http_client(node.mcp_url, agent="historian") as client:
        refused = await tool_error(client, "save_memory", content=f"The office closed {tag}", valid_at=value)
        assert "valid_at" in refused and REFUSED_TIME in refused
    listed = api.get("/v1/memories", params={"tags": tag, "min_seq": saved["seq"]}).json()["memories"]
    assert [m["id"] for m in listed] == [saved["id"]]


async def test_the_first_and_last_moments_that_can_be_stored_are_kept_as_given(
    node: NodeHandle, api: httpx.Client
) -> None:
    first, last = "0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.000Z"
    saved = save(api, f"Always true {unique()}", "historian", valid_at=first, invalid_at=last)
    assert (saved["memory"]["valid_at"], saved["memory"]["invalid_at"]) == (first, last)


# --- stats and expiry ---------------------------------------------------------------------------------------


async def test_stats_count_by_agent_type_and_status(secured_node: NodeHandle, secured: httpx.Client) -> None:
    ns = unique("ns")
    key = secured_node.create_key(ns, "")  # shared: a key bound to alice could not also act as bob
    alice, bob = {**bearer(key), **as_agent("alice")}, {**bearer(key), **as_agent("bob")}
    for content, who, kind in (("a1", alice, "fact"), ("a2", alice, "fact"), ("b1", bob, "decision")):
        assert secured.post("/v1/memories", json={"content": content, "memory_type": kind}, headers=who).is_success
    last = secured.post("/v1/memories", json={"content": "b2", "team": "infra"}, headers=bob).json()
    assert secured.delete(f"/v1/memories/{last['id']}", headers=bob).status_code == 200
    # GetStats takes no min_seq: a list (which waits for the gateway's cursor) makes the index catch up first.
    assert len(secured.get("/v1/memories", headers=alice).json()["memories"]) == 3

    stats = secured.get("/v1/stats", headers=alice)
    assert stats.status_code == 200, stats.text
    body = stats.json()
    assert (body["namespace"], body["memories"], body["total"]) == (ns, 3, 4)
    assert body["by_agent"] == {"alice": 2, "bob": 2}
    assert body["by_type"] == {"fact": 2, "decision": 1, "general": 1}
    assert body["by_status"] == {"active": 3, "archived": 1}
    assert body["by_team"] == {"infra": 1}
    async with http_client(secured_node.mcp_url, key=key, agent="alice") as client:
        assert await call(client, "get_memory_stats") == {k: v for k, v in body.items() if k != "applied_seq"}


async def test_expires_at_takes_a_duration_and_shows_a_time(node: NodeHandle, api: httpx.Client) -> None:
    before = time.time()
    saved = save(api, f"The on-call is Dana this month {unique()}", "owner", expires_at="30d")
    expires = parse_time(saved["memory"]["expires_at"])
    assert expires is not None and before + 30 * DAY - 1 <= expires <= time.time() + 30 * DAY
    patched = api.patch(f"/v1/memories/{saved['id']}", json={"expires_at": "12h"}, headers=as_agent("owner"))
    assert patched.status_code == 200, patched.text
    expires = parse_time(patched.json()["memory"]["expires_at"])
    assert expires is not None and abs(expires - (time.time() + 12 * 3600)) < 60
    fixed = api.patch(
        f"/v1/memories/{saved['id']}", json={"expires_at": "2031-01-31T12:00:00Z"}, headers=as_agent("owner")
    )
    assert fixed.json()["memory"]["expires_at"] == "2031-01-31T12:00:00.000Z"
    async with http_client(node.mcp_url, agent="owner") as client:
        await call(client, "update_memory", id=saved["id"], expires_at="2w")
        mcp = await call(client, "get_memory", id=saved["id"])
        refused = await tool_error(client, "update_memory", id=saved["id"], expires_at="two weeks")
    expires = parse_time(mcp["expires_at"])
    assert expires is not None and abs(expires - (time.time() + 14 * DAY)) < 60
    assert refused.startswith("expires_at:") or "expires_at: 'two weeks' is neither" in refused
    bad = api.post("/v1/memories", json={"content": "x", "expires_at": "30 days"})
    assert "expires_at" in assert_problem(bad, 400)["detail"]


# --- the HTTP edge and the published documents --------------------------------------------------------------


def test_new_json_routes_need_json_and_a_shallow_body(api: httpx.Client) -> None:
    saved = save(api, f"x {unique()}", "owner")
    for method, path in (("PATCH", f"/v1/memories/{saved['id']}"), ("POST", f"/v1/memories/{saved['id']}:supersede")):
        plain = api.request(method, path, content=b'{"content": "y"}', headers={"Content-Type": "text/plain"})
        assert_problem(plain, 415)
        nested: Any = 1
        for _ in range(40):
            nested = [nested]
        deep = api.request(method, path, json={"metadata": {"a": nested}})
        assert "nested" in assert_problem(deep, 400)["detail"]


def test_openapi_documents_the_lifecycle_routes_and_their_errors(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    memory = paths["/v1/memories/{memory_id}"]
    assert {"get", "patch", "delete"} <= set(memory)
    for operation in (memory["patch"], memory["delete"], paths["/v1/memories/{memory_id}:supersede"]["post"]):
        assert {"200", "400", "403", "404", "409"} <= set(operation["responses"])
    assert "get" in paths["/v1/memories/{memory_id}/history"]
    assert "get" in paths["/v1/memories/{memory_id}/at"]
    assert "get" in paths["/v1/stats"]


async def test_mcp_lists_the_lifecycle_tools_with_their_rules(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    annotations = tools["delete_memory"].annotations
    assert annotations is not None and annotations.destructive_hint is not False  # MCP assumes destructive
    assert "engram admin purge" in (tools["delete_memory"].description or "")
    assert "head of its chain" in (tools["supersede_memory"].description or "")
    assert "anyOf" in tools["update_memory"].input_schema and "anyOf" in tools["supersede_memory"].input_schema
    expires = tools["update_memory"].input_schema["properties"]["expires_at"]
    assert {"format": "date-time", "type": "string"} in expires["anyOf"]
    assert "purge" not in tools["delete_memory"].input_schema["properties"]


# --- the CLI ------------------------------------------------------------------------------------------------


def engram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_updates_shows_history_and_stats_and_explains_refusals(
    node: NodeHandle, api: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    tag = unique()
    saved = save(api, f"Standup is at 9:30 {tag}", "cli-owner", tags=[tag])
    url = ("--url", node.http_url)
    code, out, err = engram(capsys, "update", saved["id"], "--content", f"Standup is at 10:00 {tag}", "--tag", tag,
                            "--expires", "30d", "--agent", "cli-owner", *url)  # fmt: skip
    assert (code, err) == (0, ""), err
    assert out.startswith(f"Updated {saved['id']}: now version 2")
    code, out, _ = engram(capsys, "history", saved["id"], *url)
    assert code == 0 and "v1" in out and "v2" in out and "updated by cli-owner via rest" in out
    code, out, _ = engram(capsys, "at", saved["id"], now_rfc3339(), "--json", *url)
    assert code == 0 and '"version": 2' in out
    code, out, _ = engram(capsys, "stats", *url)
    assert code == 0 and out.startswith("Namespace default:")

    code, out, err = engram(capsys, "update", saved["id"], "--tag", "x", "--agent", "someone-else", *url)
    assert code == 1 and out == ""
    assert err.startswith("engram: Memory owned by 'cli-owner', you are 'someone-else'.") and err.count("\n") == 1
    code, _, err = engram(capsys, "update", saved["id"], "--expected-version", "1", "--tag", "y",
                          "--agent", "cli-owner", *url)  # fmt: skip
    assert code == 1 and "version 2" in err and "(HTTP 409)" in err
    code, _, err = engram(capsys, "admin", "purge", saved["id"], "--yes", *url)
    assert code == 1 and "admin" in err and "ENGRAM_API_KEY" in err
    code, _, err = engram(capsys, "admin", "purge", saved["id"], *url)  # no terminal: asks nobody, purges nothing
    assert code == 2 and "--yes" in err

    code, out, _ = engram(capsys, "delete", saved["id"], "--agent", "cli-owner", *url)
    assert code == 0 and out.startswith(f"Archived {saved['id']} (version 3)")
    # An archived memory is not superseded (issue 33: an undo would bring it back active); a new one is.
    code, out, err = engram(capsys, "supersede", saved["id"], "--content", "Standup moved to 11:00", "--agent",
                            "cli-owner", "--json", *url)  # fmt: skip
    assert code == 1 and out == "" and "is archived; only an active memory is superseded" in err
    fresh = save(api, f"Standup is at 10:30 {tag}", "cli-owner")
    code, out, _ = engram(capsys, "supersede", fresh["id"], "--content", "Standup moved to 11:00", "--agent",
                          "cli-owner", "--json", *url)  # fmt: skip
    assert code == 0 and '"superseded"' in out


def test_cli_says_what_to_do_when_no_node_answers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = engram(capsys, "stats", "--url", "http://127.0.0.1:9")
    assert code == 2 and out == "", err
    assert "no Engram node answers at http://127.0.0.1:9" in err and "engram serve" in err
    code, _, err = engram(capsys, "update", str(uuid.uuid4()), "--url", "http://127.0.0.1:9")
    assert code == 2 and "nothing to change" in err
