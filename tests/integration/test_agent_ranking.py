"""Agent-grade ranking on a real node (issue 24): unrelated saves of one session never steal each other's lookups,
identifiers lean on exact matching and questions on meaning, the newer version of a fact ranks first, unrelated
questions find nothing above the relevance floor, and explain says why."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client
from tests.helpers.rest import unique

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SESSION = [  # the reproduction: unrelated facts saved one after another through one MCP session
    "Prefers FastAPI over Flask for Python web services",
    "The staging database password was rotated on 2026-03-02",
    "JIRA-4821 tracks the flaky login test on the payments page",
    "Switched from Cursor to Claude Code in January",
]


def _ids(answer: dict[str, Any]) -> list[str]:
    """Hit ids of a search answer (REST nests each memory; MCP's compact hits are the memory)."""
    return [str((hit.get("memory") or hit)["id"]) for hit in answer.get("hits", [])]


def _search(node: NodeHandle, query: str, tag: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(
        f"{node.http_url}/v1/memories:search", json={"query": query, "filters": {"tags": [tag]}} | body, timeout=30
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_unrelated_saves_of_one_session_keep_their_own_lookups(node: NodeHandle) -> None:
    tag = unique("session")
    async with http_client(node.mcp_url, agent="claude-code", mode="legacy") as session:
        saved = [await call(session, "save_memory", content=text, tags=[tag]) for text in SESSION]
        ids = [s["id"] for s in saved]
        ticket = await call(session, "search_memory", query="JIRA-4821", tags=[tag], min_seq=saved[-1]["seq"])
        tools = await call(session, "search_memory", query="what coding tools do I use", tags=[tag])
    assert _ids(ticket)[0] == ids[2], "the ticket, not the memory saved after it"
    assert _ids(tools)[0] == ids[3]
    rest = _search(node, "JIRA-4821", tag, explain=True)
    assert _ids(rest)[0] == ids[2]
    assert "identifier" in rest["explain_note"]


async def test_a_question_is_led_by_meaning_not_by_one_shared_common_word(node: NodeHandle) -> None:
    tag = unique("meaning")
    async with http_client(node.mcp_url, agent="home-assistant") as client:
        study = await call(client, "save_memory", content="Keep the study at 19 degrees in winter", tags=[tag])
        await call(client, "save_memory", content="CSRF token missing error on the settings page", tags=[tag])
        await call(client, "save_memory", content="The study desk lamp needs a new bulb", tags=[tag])
    answer = _search(node, "what temperature should the heating be set to in the study", tag, explain=True,
                     min_seq=study["seq"])  # fmt: skip
    assert _ids(answer)[0] == study["id"]
    assert "meaning (dense) leads" in answer["explain_note"]
    first = answer["hits"][0]["explain"]
    assert first["fused"]["rank"] == 1 and first["floor"]["rank"] == 1


async def test_the_newer_version_of_a_fact_from_another_agent_ranks_first(node: NodeHandle) -> None:
    tag = unique("versions")
    async with http_client(node.mcp_url, agent="codex") as codex:
        old = await call(codex, "save_memory", content="Prod cluster runs Kubernetes 1.28", tags=[tag])
    async with http_client(node.mcp_url, agent="gemini-cli") as gemini:
        new = await call(gemini, "save_memory", content="Prod cluster is on Kubernetes 1.30 now", tags=[tag])
    answer = _search(node, "which Kubernetes version is the prod cluster on?", tag, explain=True, min_seq=new["seq"])
    assert _ids(answer)[:2] == [new["id"], old["id"]]
    assert answer["hits"][0]["score"] >= answer["hits"][1]["score"], "scores stay in rank order"


async def test_the_newest_statement_of_a_subject_ranks_first_however_it_is_worded(node: NodeHandle) -> None:
    """Issue 36: an update worded unlike the question, saved plainly by another agent, with a topical neighbour
    between the two statements."""
    tag = unique("subject")
    async with http_client(node.mcp_url, agent="codex") as codex:
        old = await call(codex, "save_memory", content="design-system unit tests run on Jest", tags=[tag])
        await call(codex, "save_memory", content="design-system publishes its packages to the npm registry", tags=[tag])
    async with http_client(node.mcp_url, agent="cursor") as cursor:
        new = await call(cursor, "save_memory", content="design-system moved its unit tests from Jest to Vitest",
                         tags=[tag])  # fmt: skip
    answer = _search(node, "which unit test runner does the design system use?", tag, explain=True,
                     min_seq=new["seq"])  # fmt: skip
    ids = _ids(answer)
    assert ids[0] == new["id"] and ids.index(old["id"]) > 0
    assert "subject" in answer["hits"][0]["explain"] or "newer" in answer["hits"][0]["explain"]


async def test_an_unrelated_question_finds_nothing_above_the_floor_unless_asked(node: NodeHandle) -> None:
    tag = unique("floor")
    async with http_client(node.mcp_url, agent="cursor") as client:  # another agent: the same texts are new memories
        saved = [await call(client, "save_memory", content=text, tags=[tag]) for text in SESSION]
        nothing = await call(client, "search_memory", query="how do volcanoes form under the ocean?", tags=[tag],
                             min_seq=saved[-1]["seq"])  # fmt: skip
        everything = await call(client, "search_memory", query="how do volcanoes form under the ocean?", tags=[tag],
                                min_relevance=0)  # fmt: skip
    assert not nothing.get("hits"), "a compact answer leaves an empty list out"
    assert len(everything.get("hits", [])) == len(SESSION)
    strict = _search(node, "JIRA-4821", tag, min_relevance=0.99, explain=True)
    assert _ids(strict) == [saved[2]["id"]], "a strong exact match passes any floor"
    assert strict["hits"][0]["explain"]["floor"]["rank"] == 2
    refused = httpx.post(f"{node.http_url}/v1/memories:search", json={"query": "x", "min_relevance": 2})
    assert refused.status_code == 400 and "min_relevance" in refused.text


def test_explain_note_is_only_in_an_explained_answer(node: NodeHandle) -> None:
    tag = unique("note")
    assert "explain_note" not in _search(node, "anything", tag)
