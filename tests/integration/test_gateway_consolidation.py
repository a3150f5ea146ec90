"""Keeping the shared memory tidy through the gateway against a real node: maintenance jobs, a summary that replaces
memories, and contradictions listed for agents and resolved by the user, over MCP (the real SDK client), REST and the
CLI."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from engram import cli
from engram.cli import coordination
from engram.config import Settings
from engram.grpc import clients
from engram.keys import KeyStore
from engram.services.gateway.app import build_app
from engram.services.gateway.backend import Backend
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client, tool_error
from tests.helpers.rest import assert_problem, bearer, unique

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PORT_8080 = "The API runs on port 8080"
PORT_9090 = "The API runs on port 9090"


def save(api: httpx.Client, headers: dict[str, str], content: str, **fields: Any) -> dict[str, Any]:
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=headers)
    assert saved.status_code == 201, saved.text
    body: dict[str, Any] = saved.json()
    return body


def memory(api: httpx.Client, headers: dict[str, str], memory_id: str) -> dict[str, Any]:
    got = api.get(f"/v1/memories/{memory_id}", headers=headers)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def flag_ports(api: httpx.Client, headers: dict[str, str]) -> tuple[str, str]:
    """Saves the two port memories (older 8080, newer 9090; two agents, one topic) and runs the contradictions job;
    returns their ids, older first."""
    older = save(api, {**headers, "X-Engram-Agent-ID": "claude-code"}, PORT_8080, topics=["api"])["id"]
    newer = save(api, {**headers, "X-Engram-Agent-ID": "gemini-cli"}, PORT_9090, topics=["api"])["id"]
    job = api.post("/v1/consolidation/jobs", json={"kind": "contradictions"}, headers=headers)
    assert job.status_code == 200, job.text
    assert (job.json()["state"], job.json()["result"]["flagged"]) == ("succeeded", 1)
    return older, newer


@pytest.fixture
def namespace() -> str:
    return unique("ns")


@pytest.fixture
def space(node: NodeHandle, namespace: str) -> str:
    """A shared key (read, write; no agent) for a namespace of this test alone."""
    return node.create_key(namespace, "")


# --- jobs ----------------------------------------------------------------------------------------------------


async def test_consolidate_memory_with_a_kind_runs_that_job_and_answers_it_succeeded(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    save(api, bearer(space, "claude-code"), "Deploys happen from the main branch only")
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        answer = await call(client, "consolidate_memory", kind="dedupe")
    job = answer["job"]
    assert (job["kind"], job["state"]) == ("dedupe", "succeeded")
    assert job["summary"].startswith("Merged 0 near-duplicate memories") and "pairs_checked" in job["result"]
    assert job["started_at"].endswith("Z") and job["finished_at"].endswith("Z")
    assert "survivor" not in answer and "merged_ids" not in answer  # none

    again = api.get(f"/v1/consolidation/jobs/{job['id']}", headers=bearer(space))
    assert again.status_code == 200, again.text
    assert (again.json()["id"], again.json()["state"], again.json()["result"]) == (
        job["id"],
        "succeeded",
        job["result"],
    )


def test_a_job_over_rest_refuses_an_unknown_kind_or_option_and_an_unknown_job_id(api: httpx.Client, space: str) -> None:
    problem = assert_problem(api.post("/v1/consolidation/jobs", json={"kind": "tidy"}, headers=bearer(space)), 400)
    assert problem["detail"].startswith("kind:") and "dedupe" in problem["detail"]
    body = {"kind": "decay", "options": {"topics": "api"}}
    problem = assert_problem(api.post("/v1/consolidation/jobs", json=body, headers=bearer(space)), 400)
    assert "unknown option(s) topics" in problem["detail"]
    problem = assert_problem(api.get(f"/v1/consolidation/jobs/{uuid.uuid4()}", headers=bearer(space)), 404)
    assert "run the job again" in problem["detail"]


async def test_consolidate_memory_says_what_to_pass_when_its_arguments_do_not_fit(node: NodeHandle, space: str) -> None:
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        neither = await tool_error(client, "consolidate_memory")
        both = await tool_error(client, "consolidate_memory", kind="dedupe", consolidated_content="Summary")
        no_selection = await tool_error(client, "consolidate_memory", consolidated_content="Summary")
        nothing_matched = await tool_error(
            client, "consolidate_memory", consolidated_content="Summary", tag=unique("none")
        )
        stray = await tool_error(client, "consolidate_memory", kind="decay", tag="api")
        topic_elsewhere = await tool_error(client, "consolidate_memory", kind="dedupe", topic="api")
    assert "give either kind" in neither and "consolidated_content" in neither
    assert "not both" in both
    assert "memory_ids" in no_selection and "memory_type, tag or topic" in no_selection
    assert "no active memory matches tag" in nothing_matched and "list_memories" in nothing_matched
    assert "tag: only goes with consolidated_content" in stray
    assert "the dedupe job takes no topic" in topic_elsewhere


# --- a summary that replaces memories ------------------------------------------------------------------------


async def test_consolidated_content_archives_the_named_memories_merged_into_a_searchable_summary(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    tag = unique("prefs")
    texts = ("The user wants answers in English", "The user likes short answers", "The user wants Python samples")
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        ids = [
            (await call(client, "save_memory", content=text, memory_type="preference", tags=[tag]))["id"]
            for text in texts
        ]
        summary = "The user prefers short English answers with Python code samples"
        answer = await call(client, "consolidate_memory", consolidated_content=summary, memory_ids=ids)
        found = await call(client, "search_memory", query="How should answers to the user look?", tags=[tag])
        survivor = await call(client, "get_memory", id=answer["survivor"]["id"])  # every field

    assert survivor["content"] == summary and survivor["memory_type"] == "general"
    assert tag in survivor["tags"] and survivor["metadata"]["merged_from"] == ids
    assert sorted(answer["merged_ids"]) == sorted(ids) and answer["seq"] > 0
    for memory_id in ids:
        original = memory(api, bearer(space), memory_id)
        assert original["status"] == "archived"
        merged_into = {"kind": "merged-into", "memory_id": survivor["id"], "note": "consolidated by claude-code"}
        assert merged_into in original["relations"]
    assert [hit["id"] for hit in found["hits"]] == [survivor["id"]], "the originals left search"


def test_consolidate_over_rest_replaces_the_selected_category_with_a_summary_of_its_type_and_tag(
    api: httpx.Client, space: str
) -> None:
    tag, me = unique("deploy"), bearer(space, "claude-code")
    decisions = [save(api, me, text, memory_type="decision", tags=[tag])["id"]
                 for text in ("Deploys go out on Tuesdays", "Deploys need a green canary first")]  # fmt: skip
    other_type = save(api, me, "Deploys once broke the cache", memory_type="finding", tags=[tag])["id"]
    body = {"consolidated_content": "Deploys go out on Tuesdays after a green canary", "memory_type": "decision",
            "tag": tag}  # fmt: skip

    done = api.post("/v1/consolidate", json=body, headers=me)
    assert done.status_code == 201, done.text
    answer = done.json()
    survivor = answer["survivor"]
    assert done.headers["Location"] == f"/v1/memories/{survivor['id']}"
    assert sorted(answer["merged_ids"]) == sorted(decisions) and "job" not in answer
    assert (survivor["memory_type"], survivor["tags"]) == ("decision", [tag])
    assert memory(api, me, other_type)["status"] == "active", "another type is not selected"

    problem = assert_problem(api.post("/v1/consolidate", json={"consolidated_content": "x"}, headers=me), 400)
    assert "memory_ids" in problem["detail"]


def test_consolidating_another_agents_memories_needs_an_admins_force(api: httpx.Client, space: str) -> None:
    mine = save(api, bearer(space, "claude-code"), "The staging cluster has three nodes")["id"]
    theirs = save(api, bearer(space, "gemini-cli"), "The staging cluster runs Kubernetes 1.30")["id"]
    body = {"consolidated_content": "Staging: three Kubernetes 1.30 nodes", "memory_ids": [mine, theirs]}
    problem = assert_problem(api.post("/v1/consolidate", json=body, headers=bearer(space, "claude-code")), 403)
    assert "different agents" in problem["detail"] and "force" in problem["detail"]
    forced = api.post("/v1/consolidate", json={**body, "force": True}, headers=bearer(space, "claude-code"))
    assert_problem(forced, 403)


# --- contradictions ------------------------------------------------------------------------------------------


async def test_detect_contradictions_lists_a_pair_flagged_by_the_contradictions_job(
    node: NodeHandle, api: httpx.Client, space: str
) -> None:
    async with http_client(node.mcp_url, key=space, agent="claude-code") as client:
        older = (await call(client, "save_memory", content=PORT_8080, topics=["api"]))["id"]
        newer = (await call(client, "save_memory", content=PORT_9090, topics=["api"]))["id"]
        job = (await call(client, "consolidate_memory", kind="contradictions", topic="api"))["job"]
        listed = await call(client, "detect_contradictions")
        elsewhere = await call(client, "detect_contradictions", topics=[unique("topic")])
        tools = {t.name: t for t in (await client.list_tools()).tools}

    assert (job["state"], job["result"]["flagged"]) == ("succeeded", 1)
    [pair] = listed["contradictions"]
    assert (pair["memory"]["id"], pair["other"]["id"]) == (newer, older)
    assert (pair["memory"]["content"], pair["other"]["content"]) == (PORT_9090, PORT_8080)
    assert pair["score"] >= 0.5 and pair["why"]
    assert elsewhere["contradictions"] == []
    description = tools["detect_contradictions"].description or ""
    assert "only the user resolves" in description and "admin key" in description
    assert tools["detect_contradictions"].annotations is not None
    assert tools["detect_contradictions"].annotations.read_only_hint

    rest = api.get("/v1/contradictions", params={"topics": "api,other", "limit": 5}, headers=bearer(space))
    assert rest.status_code == 200, rest.text
    ids = [(pair["memory"]["id"], pair["other"]["id"]) for pair in rest.json()["contradictions"]]
    assert ids == [(pair["memory"]["id"], pair["other"]["id"]) for pair in listed["contradictions"]]


def test_resolving_needs_an_admin_key_and_keep_newer_archives_the_older(
    node: NodeHandle, api: httpx.Client, space: str, namespace: str
) -> None:
    older, newer = flag_ports(api, bearer(space))
    body = {"id": newer, "other_id": older, "resolution": "keep_newer"}

    problem = assert_problem(api.post("/v1/contradictions/resolve", json=body, headers=bearer(space)), 403)
    assert "Only an admin may resolve contradictions" in problem["detail"]
    assert memory(api, bearer(space), older)["status"] == "active"

    admin = node.create_key(namespace, "user", scopes=("read", "write", "admin"))
    resolved = api.post("/v1/contradictions/resolve", json=body, headers=bearer(admin))
    assert resolved.status_code == 200, resolved.text
    assert f"Kept the newer memory {newer}" in resolved.json()["summary"]
    archived = memory(api, bearer(space), older)
    assert archived["status"] == "archived"
    assert any(r["kind"] == "merged-into" and r["memory_id"] == newer for r in archived["relations"])
    assert memory(api, bearer(space), newer)["status"] == "active"
    assert api.get("/v1/contradictions", headers=bearer(space)).json()["contradictions"] == []


def test_resolve_refuses_an_unknown_resolution(api: httpx.Client, space: str) -> None:
    body = {"id": str(uuid.uuid4()), "other_id": str(uuid.uuid4()), "resolution": "ignore"}
    problem = assert_problem(api.post("/v1/contradictions/resolve", json=body, headers=bearer(space)), 400)
    assert "resolution" in problem["detail"]


async def test_a_gateway_without_consolidation_answers_503_for_contradictions(node: NodeHandle) -> None:
    settings = Settings.from_env({}, home=node.home)
    backend = Backend(ingest_addr=node.grpc_address, search_addr=node.grpc_address)  # no consolidation_addr
    try:
        app = build_app(settings, backend, KeyStore(settings.keys_path))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            listed = await client.get("/v1/contradictions")
            job = await client.get(f"/v1/consolidation/jobs/{uuid.uuid4()}")
    finally:
        await backend.close()
    for response in (listed, job):
        assert "ENGRAM_CONSOLIDATION_ADDR" in assert_problem(response, 503)["detail"]


def test_openapi_documents_the_consolidation_routes(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert "post" in paths["/v1/consolidation/jobs"] and "get" in paths["/v1/consolidation/jobs/{job_id}"]
    assert "post" in paths["/v1/consolidate"] and "get" in paths["/v1/contradictions"]
    assert "post" in paths["/v1/contradictions/resolve"]


# --- the CLI -------------------------------------------------------------------------------------------------


def engram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_knows_the_job_kinds_and_resolutions_of_the_service() -> None:
    assert coordination.JOB_KINDS == clients.JOB_KINDS
    assert tuple(coordination.RESOLUTION_NEEDS) == clients.RESOLUTIONS


def test_cli_runs_jobs_lists_contradictions_and_resolves_them_with_an_admin_key(
    node: NodeHandle,
    api: httpx.Client,
    space: str,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGRAM_API_KEY", space)
    url = ("--url", node.http_url)
    older = save(api, bearer(space, "claude-code"), PORT_8080, topics=["api"])["id"]
    newer = save(api, bearer(space, "gemini-cli"), PORT_9090, topics=["api"])["id"]

    code, out, err = engram(capsys, "consolidate", "contradictions", "--option", "topics=api", *url)
    assert code == 0, err
    assert out.startswith("Job ") and " contradictions succeeded: Flagged 1 possible contradictions" in out
    assert "progress: 1 of 1 (contradictions)" in out and "flagged 1" in out
    job_id = out.split()[1]
    code, out, _ = engram(capsys, "consolidate", "--job", job_id, *url)
    assert code == 0 and out.startswith(f"Job {job_id} contradictions succeeded")

    code, out, err = engram(capsys, "contradictions", *url)
    assert (code, err) == (0, "")
    assert out.startswith("1 open contradiction, most likely first")
    assert f"{newer}  {older}  contradiction  rule " in out and "  score " in out
    assert PORT_8080 in out and PORT_9090 in out and "engram contradictions resolve" in out
    code, out, _ = engram(capsys, "contradictions", "list", "--topic", unique("topic"), *url)
    assert code == 0 and out.startswith("No open contradictions")

    code, _, err = engram(capsys, "contradictions", "resolve", newer, older, "--keep-newer", *url)
    assert code == 1 and "(HTTP 403)" in err and "Set ENGRAM_API_KEY to a key with the admin scope" in err
    code, _, err = engram(capsys, "contradictions", "resolve", newer, older, "--merge", *url)
    assert code == 2 and "--merge needs --content" in err
    code, _, err = engram(capsys, "contradictions", "resolve", newer, older, "--keep-newer", "--winner", newer, *url)
    assert code == 2 and "--winner does not go with --keep-newer" in err

    monkeypatch.setenv("ENGRAM_API_KEY", node.create_key(namespace, "user", scopes=("read", "write", "admin")))
    code, out, err = engram(capsys, "contradictions", "resolve", newer, older, "--keep-both", "--context",
                            "in production", "--other-context", "in local development", *url)  # fmt: skip
    assert code == 0, err
    assert out.startswith("Kept both; each holds in its context")
    code, out, _ = engram(capsys, "contradictions", *url)
    assert code == 0 and out.startswith("No open contradictions")


def test_cli_consolidate_says_what_to_name_and_keeps_team_summaries(
    node: NodeHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ("--url", node.http_url)
    for argv in (("consolidate",), ("consolidate", "dedupe", "--team", "auth")):
        with pytest.raises(SystemExit) as exited:
            cli.main([*argv, *url])
        assert exited.value.code == 2
        assert "KIND" in capsys.readouterr().err
    code, _, err = engram(capsys, "consolidate", "--team", "auth", "--option", "topics=api", *url)
    assert code == 2 and "--option goes with a job KIND" in err
    code, _, err = engram(capsys, "consolidate", "--team", unique("empty"), "--agent", "lead", *url)
    assert code == 1 and "has no active memories to summarise" in err and "(HTTP 409)" in err
