"""Saving what an agent already saved answers with the existing memory (duplicate_of) and writes nothing: over REST,
MCP and gRPC, for saves racing each other (one ingest or two), and for an import run again."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.config import Settings
from engram.grpc.clients import IngestClient
from engram.log import subject
from engram.log.events import MEMORY_SAVED
from engram.log.nats import NatsLog
from engram.model import Caller, MemoryInput
from engram.process.runtime import Resources
from engram.results import Page
from engram.services.ingest.server import IngestService, build_service
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def as_agent(agent: str) -> dict[str, str]:
    return {"X-Engram-Agent-ID": agent}


async def saved_entries(node: NodeHandle, namespace: str, marker: str, *, after: int) -> list[str]:
    """The ids of the memory_saved log entries after ``after`` in ``namespace`` whose content holds ``marker``."""
    event_log = await NatsLog.connect(node.nats_url)
    try:
        entries, _ = await event_log.read_after(after, subjects=subject(namespace, MEMORY_SAVED), limit=10_000)
    finally:
        await event_log.close()
    return [e.body["memory_id"] for e in entries if marker in e.body["memory"]["content"]]


@asynccontextmanager
async def replica(node: NodeHandle, home: Path) -> AsyncIterator[IngestService]:
    """Another ingest service over the node's log and search service, as `engram run ingest` builds it."""
    values: dict[str, Any] = {"nats_url": node.nats_url, "search_addr": node.grpc_address}
    configured = Settings.from_env({}, home=home, model_cache=node.model_cache, **values)
    resources = Resources(configured)
    service = await build_service(configured, resources)
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
        await resources.close()


async def test_saving_the_same_content_again_answers_with_the_existing_memory(
    api: httpx.Client, node: NodeHandle
) -> None:
    tag = unique()
    first = api.post("/v1/memories", json={"content": f"The nightly deploy runs at 02:00 UTC ({tag}).", "tags": [tag]})
    assert first.status_code == 201 and "duplicate_of" not in first.json(), first.text
    again = api.post(
        "/v1/memories", json={"content": f"  the NIGHTLY deploy\nruns at 02:00 utc ({tag})  ", "memory_type": "fact"}
    )
    assert again.status_code == 200, again.text
    answer, saved = again.json(), first.json()
    assert answer["duplicate_of"] == answer["id"] == saved["id"]
    assert (answer["version"], answer["seq"]) == (1, saved["seq"])
    assert answer["memory"]["memory_type"] == "general", "the existing memory, as it was saved"
    assert again.headers["Location"] == f"/v1/memories/{saved['id']}"

    got = api.get(f"/v1/memories/{saved['id']}").json()
    assert got["version"] == 1 and got["history"] == []
    assert await saved_entries(node, "default", tag, after=saved["seq"] - 1) == [saved["id"]]


async def test_another_agent_or_another_project_saving_the_same_words_gets_a_memory_of_its_own(
    api: httpx.Client,
) -> None:
    content = f"Run the linter before pushing ({unique()})"
    mine = api.post("/v1/memories", json={"content": content}, headers=as_agent("claude-code")).json()
    theirs = api.post("/v1/memories", json={"content": content}, headers=as_agent("gemini-cli")).json()
    elsewhere = api.post(
        "/v1/memories", json={"content": content, "project": "shop"}, headers=as_agent("claude-code")
    ).json()
    assert len({mine["id"], theirs["id"], elsewhere["id"]}) == 3
    assert "duplicate_of" not in theirs and "duplicate_of" not in elsewhere
    repeated = api.post("/v1/memories", json={"content": content}, headers=as_agent("gemini-cli")).json()
    assert repeated["duplicate_of"] == theirs["id"]


async def test_after_the_memory_is_archived_the_same_save_stores_a_new_memory(api: httpx.Client) -> None:
    content = f"The staging database is Postgres 16 ({unique()})."
    first = api.post("/v1/memories", json={"content": content}).json()
    archived = api.delete(f"/v1/memories/{first['id']}")
    assert archived.status_code == 200, archived.text
    second = api.post("/v1/memories", json={"content": content})
    assert second.status_code == 201 and "duplicate_of" not in second.json()
    assert second.json()["id"] != first["id"]
    third = api.post("/v1/memories", json={"content": content}).json()
    assert third["duplicate_of"] == second.json()["id"], "the active one is the existing memory now"


async def test_a_handoff_sent_twice_is_two_handoffs(api: httpx.Client) -> None:
    content = f"Please review the auth migration ({unique()})"
    first = api.post("/v1/memories", json={"content": content, "handoff_target": "gemini-cli"}).json()
    second = api.post("/v1/memories", json={"content": content, "handoff_target": "gemini-cli"}).json()
    assert first["id"] != second["id"] and "duplicate_of" not in second


async def test_mcp_save_memory_answers_duplicate_of(node: NodeHandle) -> None:
    content = f"The billing service retries webhooks three times ({unique()})."
    async with http_client(node.mcp_url, name="claude-code") as client:
        first = await call(client, "save_memory", content=content)
        again = await call(client, "save_memory", content=content.upper())
    assert "duplicate_of" not in first or first["duplicate_of"] is None
    assert again["duplicate_of"] == again["id"] == first["id"]


async def test_identical_saves_racing_each_other_store_one_memory(node: NodeHandle, tmp_path: Path) -> None:
    me = Caller(unique("ns"), "claude-code", source="claude-code")
    marker = unique()
    draft = MemoryInput(content=f"Cache entries live for ten minutes ({marker})")
    client = IngestClient(node.grpc_address)
    try:
        async with replica(node, tmp_path / "a") as a, replica(node, tmp_path / "b") as b:
            results = await asyncio.gather(
                *(client.save(me, draft) for _ in range(4)),
                *(service.writer.save(me, draft) for service in (a, b) for _ in range(3)),
            )
    finally:
        await client.close()
    ids = {r.memory.id for r in results}
    assert len(ids) == 1, ids
    assert sum(1 for r in results if not r.duplicate_of) == 1
    assert await saved_entries(node, me.namespace, marker, after=0) == list(ids)


class LaggingIndex:
    """The search service's listing as an index that has applied nothing after ``seq`` answers it (a save's lookup
    that does not wait); a lookup that waits for a later sequence is answered as it is."""

    def __init__(self, source: Any, seq: int) -> None:
        self.source, self.seq = source, seq

    async def list(self, caller: Caller, **kwargs: Any) -> Page:
        page = await self.source.list(caller, **kwargs)
        if kwargs.get("min_seq", 0) > self.seq:
            return page
        return Page([m for m in page.memories if m.seq <= self.seq], page.next_page_token, self.seq)


async def test_a_repeat_the_index_has_not_applied_yet_is_found_in_the_log_unless_archived_since(
    node: NodeHandle, tmp_path: Path
) -> None:
    """A save does not wait for the index: what it has not applied yet, the save's conditional append reads from
    the log, and a repeat found there that was archived since is no answer."""
    me = Caller(unique("ns"), "claude-code", source="claude-code")
    draft = MemoryInput(content=f"The queue holds at most 500 jobs ({unique()})")
    client = IngestClient(node.grpc_address)
    event_log = await NatsLog.connect(node.nats_url)
    try:
        async with replica(node, tmp_path / "a") as service:
            duplicates = service.writer.duplicates
            assert duplicates is not None
            duplicates.source = LaggingIndex(duplicates.source, await event_log.last_seq())
            first = await service.writer.save(me, draft)
            again = await service.writer.save(me, draft)  # the index "has not applied" the first: found in the log
            assert again.duplicate_of == first.memory.id and not first.duplicate_of

            await client.delete(me, first.memory.id)
            third = await service.writer.save(me, draft)  # the log holds the first one, archived since
            assert not third.duplicate_of and third.memory.id != first.memory.id
    finally:
        await client.close()
        await event_log.close()


async def test_running_a_finished_import_again_adds_nothing(api: httpx.Client, node: NodeHandle) -> None:
    tag = unique()
    rows = [
        {"content": f"Imported without a source id, one ({tag})", "tags": [tag]},
        {"content": f"Imported with a source id ({tag})", "tags": [tag], "source_id": f"notes.jsonl:{tag}"},
        {"content": f"Imported without a source id, two ({tag})", "tags": [tag]},
        {"content": f"imported WITHOUT a source id, one ({tag}).", "tags": [tag]},  # repeats line 1
    ]
    body = "\n".join(json.dumps(row) for row in rows)
    first = api.post("/v1/memories:import", content=body).json()
    assert (first["imported"], first["already_present"]) == (3, 1), first
    ids = [item["id"] for item in first["items"]]
    assert ids[3] == ids[0] and first["items"][3]["already_present"]

    again = api.post("/v1/memories:import", content=body).json()
    assert (again["imported"], again["already_present"], again["rejected"]) == (0, 4, []), again
    assert [item["id"] for item in again["items"]] == ids
    listed = api.get("/v1/memories", params={"tags": tag, "min_seq": again["last_seq"]}).json()
    assert len(listed["memories"]) == 3
    assert sorted(await saved_entries(node, "default", tag, after=0)) == sorted(set(ids))
