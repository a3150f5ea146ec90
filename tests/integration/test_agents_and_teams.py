"""Agents and teams of a namespace on a real node, through the kernel's gRPC clients: the agent registry (writes
by two agents on two devices through two clients, reads, restarts, rebuilds), team listings, listing by last
change, and handoffs (filters, deadlines, history)."""

from __future__ import annotations

import asyncio
import base64
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engram import errors
from engram.embed.sparse import Bm25Encoder
from engram.grpc.clients import IngestClient, SearchClient
from engram.ids import uuid7
from engram.log.events import HANDOFF_ACCEPTED, HANDOFF_CREATED, event_body
from engram.log.nats import NatsLog
from engram.model import Caller, Handoff, Memory, MemoryInput, SearchFilter
from engram.results import AgentInfo, TeamInfo
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 20.0
DIM = 384  # the embedder's dense size (all-MiniLM-L6-v2)


@pytest.fixture(scope="module")
def team_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """Read batches reach the log quickly; the expiry job is off, so due handoffs stay due for the test."""
    handle = start_node(
        tmp_path_factory.mktemp("teams"),
        model_cache,
        ENGRAM_ACCESS_FLUSH_SECONDS="0.2",
        ENGRAM_EXPIRY_INTERVAL_SECONDS="0",
    )
    yield handle
    assert handle.stop() == 0


@pytest.fixture
async def clients(team_node: NodeHandle) -> AsyncIterator[tuple[IngestClient, SearchClient]]:
    ingest, search = IngestClient(team_node.grpc_address), SearchClient(team_node.grpc_address)
    yield ingest, search
    await search.close()
    await ingest.close()


def namespace() -> str:
    return f"ns{uuid.uuid4().hex[:10]}"


def people(ns: str) -> tuple[Caller, Caller, Caller]:
    """Claude Code on a laptop and through Cursor on a desktop (one agent), and Gemini CLI on the desktop."""
    alice = Caller(ns, "claude-code", source="claude-code", device="laptop", team="auth")
    return alice, replace(alice, source="cursor", device="desktop"), Caller(ns, "gemini-cli", "gemini-cli",
                                                                             device="desktop")  # fmt: skip


async def write_story(ingest: IngestClient, ns: str) -> int:
    """Alice saves two memories from her laptop and updates one from the desktop; Bob saves two and archives one."""
    alice, alice_on_desktop, bob = people(ns)
    first = await ingest.save(alice, MemoryInput(content="Tokens expire after 15 minutes", team="auth"))
    await ingest.save(alice, MemoryInput(content="Refresh tokens rotate on every use", team="auth"))
    await ingest.update(alice_on_desktop, first.memory.id, MemoryInput(content="Tokens expire after 10 minutes"),
                        ["content"])  # fmt: skip
    await ingest.save(bob, MemoryInput(content="The CI runner has eight cores"))
    gone = await ingest.save(bob, MemoryInput(content="The CI runner has four cores"))
    return (await ingest.delete(bob, gone.memory.id)).seq


async def test_the_registry_lists_each_agent_with_devices_clients_teams_writes_and_memories(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    started = time.time()
    last = await write_story(ingest, ns)
    alice = people(ns)[0]

    agents = await search.list_agents(alice, min_seq=last)

    assert [(a.agent_id, a.writes, a.memories, a.devices, a.clients, a.teams) for a in agents] == [
        ("gemini-cli", 3, 1, ["desktop"], ["gemini-cli"], []),  # seen last: listed first
        ("claude-code", 3, 2, ["desktop", "laptop"], ["cursor", "claude-code"], ["auth"]),
    ]
    for agent in agents:
        assert agent.first_seen is not None and agent.last_seen is not None
        assert started - 1 <= agent.first_seen < agent.last_seen <= time.time()
    assert agents[0].last_seen is not None and agents[1].last_seen is not None
    assert agents[0].last_seen > agents[1].last_seen
    assert await search.list_agents(Caller(namespace(), "claude-code")) == []  # another namespace sees none


async def test_reads_make_an_agent_seen_without_counting_as_writes(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    last = await write_story(ingest, ns)
    alice = people(ns)[0]
    reader = Caller(ns, "codex", source="codex-cli", device="ci", agent_from_key=True)
    self_named = Caller(ns, "mallory", source="curl")  # a shared key's caller names itself
    before = time.time()
    assert (await search.search(self_named, "token expiry", limit=3, flt=SearchFilter(), min_seq=last)).hits
    found = await search.search(reader, "token expiry", limit=3, flt=SearchFilter(), min_seq=last)
    assert found.hits
    await search.list(replace(alice, device="phone"), limit=5, flt=SearchFilter())

    deadline = time.monotonic() + WAIT
    while not {"codex", "claude-code"} <= {a.agent_id for a in await seen_since(search, alice, before)}:
        assert time.monotonic() < deadline, await search.list_agents(alice)
        await asyncio.sleep(0.1)

    agents = {a.agent_id: a for a in await search.list_agents(alice)}
    assert "mallory" not in agents  # read before codex: applied by now, and added nobody
    codex, claude = agents["codex"], agents["claude-code"]
    assert (codex.writes, codex.memories, codex.devices, codex.clients) == (0, 0, ["ci"], ["codex-cli"])
    assert codex.teams == []  # teams come from writes
    assert codex.first_seen == codex.last_seen
    assert (claude.writes, claude.devices[0], claude.clients[0]) == (3, "phone", "claude-code")


async def seen_since(search: SearchClient, caller: Caller, since: float) -> list[AgentInfo]:
    return [a for a in await search.list_agents(caller) if a.last_seen is not None and a.last_seen >= since]


async def test_teams_are_listed_with_counts_owners_summary_and_last_activity(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    alice, _, bob = people(ns)
    infra = await ingest.save(bob, MemoryInput(content="Builds run on the infra cluster", team="infra"))
    await ingest.save(alice, MemoryInput(content="Auth uses RS256 tokens", team="auth", memory_type="finding"))
    await ingest.save(bob, MemoryInput(content="Sessions are stored in Redis", team="auth", memory_type="decision"))
    text = "# Team auth\n- RS256 tokens\n- Redis sessions"
    draft = MemoryInput(content=text, memory_type="team-summary", team="auth", tags=["team-summary"])
    summary = await ingest.save(replace(alice, scopes=frozenset({"read", "write", "admin"})), draft)  # as a job
    await ingest.save(replace(alice, team=""), MemoryInput(content="No team for this one"))

    teams = await search.list_teams(alice, min_seq=summary.seq)

    assert [(t.team, t.memories, t.agents, t.summary_id) for t in teams] == [
        ("auth", 3, ["claude-code", "gemini-cli"], summary.memory.id),
        ("infra", 1, ["gemini-cli"], ""),
    ]
    assert teams[0].last_activity == pytest.approx(summary.memory.updated_at)
    assert teams[1].last_activity == pytest.approx(infra.memory.updated_at)

    changed = await ingest.update(bob, infra.memory.id, MemoryInput(content="Builds run on the new cluster"),
                                  ["content"])  # fmt: skip
    teams = await search.list_teams(alice, min_seq=changed.seq)
    assert [(t.team, t.last_activity) for t in teams] == [
        ("infra", pytest.approx(changed.memory.updated_at)),
        ("auth", pytest.approx(summary.memory.updated_at)),
    ]
    archived = await ingest.delete(bob, infra.memory.id)
    assert [t.team for t in await search.list_teams(alice, min_seq=archived.seq)] == ["auth"]


async def test_listing_by_last_change_pages_most_recently_changed_first(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = Caller(namespace(), "claude-code", device="laptop")
    saved = [await ingest.save(me, MemoryInput(content=f"Note number {n}")) for n in range(5)]
    ids = [s.memory.id for s in saved]
    changed = await ingest.update(me, ids[1], MemoryInput(content="Note number one, revised"), ["content"])

    pages, token = [], ""
    for _ in range(3):
        page = await search.list(me, limit=2, flt=SearchFilter(), page_token=token, min_seq=changed.seq,
                                 order="updated")  # fmt: skip
        pages.append([m.id for m in page.memories])
        token = page.next_page_token
    created = await search.list(me, limit=10, flt=SearchFilter())

    assert pages == [[ids[1], ids[4]], [ids[3], ids[2]], [ids[0]]] and token == ""
    assert [m.id for m in created.memories] == ids[::-1]  # the default order is unchanged
    first = await search.list(me, limit=2, flt=SearchFilter())
    with pytest.raises(errors.InvalidArgument, match="another order"):
        await search.list(me, limit=2, flt=SearchFilter(), page_token=first.next_page_token, order="updated")
    with pytest.raises(errors.InvalidArgument, match=r"'newest' is not an order; use one of created, updated"):
        await search.list(me, limit=2, flt=SearchFilter(), order="newest")


def handoff_vectors(text: str) -> dict[str, object]:
    sparse = Bm25Encoder().document(text)
    dense = np.zeros(DIM, dtype="<f4")
    dense[0] = 1.0
    return {"dense": base64.b64encode(dense.tobytes()).decode(),
            "sparse": {"indices": sparse.indices, "values": sparse.values}}  # fmt: skip


async def append(node: NodeHandle, event: str, memory: Memory, caller: Caller) -> int:
    event_log = await NatsLog.connect(node.nats_url)
    try:
        body = event_body(event, memory, caller, vectors=handoff_vectors(memory.content))
        return (await event_log.append(memory.namespace, event, body, msg_id=f"{memory.id}:{memory.version}")).seq
    finally:
        await event_log.close()


async def test_handoffs_are_filtered_by_target_and_status_and_due_at_their_deadline(
    clients: tuple[IngestClient, SearchClient], team_node: NodeHandle
) -> None:
    _, search = clients
    ns = namespace()
    alice, _, bob = people(ns)
    now = time.time()

    def handoff(content: str, target: str, deadline: float) -> Memory:
        return Memory(
            id=uuid7(), namespace=ns, content=content, owner_agent="claude-code", memory_type="handoff",
            created_at=now - 60, updated_at=now - 60, handoff=Handoff(target, "pending", now - 60, deadline),
        )  # fmt: skip

    overdue = handoff("Finish the token refresh review", "gemini-cli", now - 1)
    open_one = handoff("Write the auth migration guide", "gemini-cli", now + 3600)
    other = handoff("Update the dashboards", "cursor", now + 3600)
    for memory in (overdue, open_one, other):
        await append(team_node, HANDOFF_CREATED, memory, alice)
    accepted = replace(open_one, version=2, updated_at=now, handoff=Handoff("gemini-cli", "accepted", now, now + 3600))
    last = await append(team_node, HANDOFF_ACCEPTED, accepted, bob)

    pending = SearchFilter(handoff_target="gemini-cli", handoff_statuses=["pending"])
    mine = await search.list(bob, limit=10, flt=pending, min_seq=last)
    for_me = await search.list(bob, limit=10, flt=SearchFilter(handoff_target="gemini-cli"))
    admin = Caller(ns, "ops", scopes=frozenset({"read", "write", "admin"}))
    due = {(item.namespace, item.id): item.expires_at for item in await search.list_expiring(admin, at=now, limit=1000)}
    history = await search.history(bob, open_one.id)

    assert [m.id for m in mine.memories] == [overdue.id]
    assert {m.id for m in for_me.memories} == {overdue.id, open_one.id}
    assert due.get((ns, overdue.id)) == pytest.approx(now - 1, abs=1e-3)
    assert (ns, open_one.id) not in due and (ns, other.id) not in due
    assert [(v.version, v.event) for v in history.versions] == [(1, HANDOFF_CREATED), (2, HANDOFF_ACCEPTED)]


async def snapshot(node: NodeHandle, caller: Caller, seq: int) -> tuple[list[AgentInfo], list[TeamInfo]]:
    search = SearchClient(node.grpc_address)
    try:
        return await search.list_agents(caller, min_seq=seq), await search.list_teams(caller, min_seq=seq)
    finally:
        await search.close()


async def test_the_registry_survives_a_restart_and_a_rebuild_from_the_log_unchanged(
    tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "node"
    node = start_node(home, model_cache)
    ns = namespace()
    try:
        ingest = IngestClient(node.grpc_address)
        try:
            last = await write_story(ingest, ns)
        finally:
            await ingest.close()
        caller = people(ns)[0]
        before = await snapshot(node, caller, last)
    finally:
        assert node.stop() == 0
    assert [a.agent_id for a in before[0]] == ["gemini-cli", "claude-code"] and before[1][0].team == "auth"

    node = start_node(home, model_cache)  # the persisted index: the registry comes back with it
    try:
        assert await snapshot(node, caller, last) == before
    finally:
        assert node.stop() == 0
    for name in ("index", "index-versions"):  # the index is derived data: a new one is rebuilt from the log
        shutil.rmtree(home / name)

    node = start_node(home, model_cache)
    try:
        assert await snapshot(node, caller, last) == before
    finally:
        assert node.stop() == 0
