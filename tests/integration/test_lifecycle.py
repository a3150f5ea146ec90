"""The memory lifecycle on a real node, through the kernel's gRPC clients (what the gateway and tools use):
versions with history, compare-and-set, read all / write own, archive and purge, supersession chains,
point-in-time reads, expiry, access counts and stats."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from engram import errors
from engram.grpc.clients import IngestClient, SearchClient
from engram.log.events import MEMORY_SUPERSEDED, event_body
from engram.log.nats import NatsLog
from engram.model import Caller, MemoryInput, SearchFilter
from engram.services.consolidation.expiry import ExpiryJob
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 20.0


@pytest.fixture(scope="module")
def life_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A node whose read counts reach the log quickly (the expiry job's own schedule stays long: tests drive it)."""
    handle = start_node(
        tmp_path_factory.mktemp("life"),
        model_cache,
        ENGRAM_ACCESS_FLUSH_SECONDS="0.2",
        ENGRAM_EXPIRY_INTERVAL_SECONDS="0.5",
    )
    yield handle
    assert handle.stop() == 0


@pytest.fixture
async def clients(life_node: NodeHandle) -> AsyncIterator[tuple[IngestClient, SearchClient]]:
    ingest = IngestClient(life_node.grpc_address)
    search = SearchClient(life_node.grpc_address)
    yield ingest, search
    await search.close()
    await ingest.close()


def caller(namespace: str, agent: str, *, admin: bool = False, source: str = "test") -> Caller:
    scopes = {"read", "write", "admin"} if admin else {"read", "write"}
    return Caller(namespace=namespace, agent_id=agent, source=source, scopes=frozenset(scopes))


def namespace() -> str:
    return f"ns{uuid.uuid4().hex[:10]}"


async def test_update_makes_a_new_version_and_keeps_the_old_one_in_history(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    alice = caller(ns, "claude-code@laptop", source="claude-code")
    saved = await ingest.save(alice, MemoryInput(content="The deploy target is Heroku", tags=["deploy"]))
    updated = await ingest.update(
        caller(ns, "claude-code@laptop", source="cursor"),
        saved.memory.id,
        MemoryInput(content="The deploy target is Fly.io"),
        ["content"],
    )
    assert (updated.memory.version, updated.memory.content, updated.memory.tags) == (
        2,
        "The deploy target is Fly.io",
        ["deploy"],
    )
    assert updated.memory.updated_by == "claude-code@laptop" and updated.memory.source == "cursor"
    current = await search.get(alice, saved.memory.id, min_seq=updated.seq, with_history=True)
    assert current.version == 2 and current.content == "The deploy target is Fly.io"
    assert [(v.version, v.content, v.agent_id, v.source) for v in current.history] == [
        (1, "The deploy target is Heroku", "claude-code@laptop", "claude-code")
    ]
    history = await search.history(alice, saved.memory.id)
    assert [(v.version, v.event, v.source) for v in history.versions] == [
        (1, "memory_saved", "claude-code"),
        (2, "memory_updated", "cursor"),
    ]
    assert history.versions[0].seq == saved.seq and history.versions[1].seq == updated.seq
    assert history.versions[0].updated_at is not None and history.versions[1].updated_at is not None
    assert history.versions[0].updated_at <= history.versions[1].updated_at


async def test_an_update_that_changes_nothing_writes_no_version(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, _ = clients
    me = caller(namespace(), "a@d")
    saved = await ingest.save(me, MemoryInput(content="Unchanged", tags=["a"]))
    same = await ingest.update(me, saved.memory.id, MemoryInput(content="Unchanged", tags=["a"]), ["content", "tags"])
    assert (same.memory.version, same.seq) == (1, saved.seq)


async def test_a_stale_expected_version_is_refused_with_the_current_version(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    me = caller(namespace(), "a@d")
    saved = await ingest.save(me, MemoryInput(content="Port is 8080"))
    await ingest.update(me, saved.memory.id, MemoryInput(content="Port is 8081"), ["content"], expected_version=1)
    with pytest.raises(errors.VersionConflict) as refused:
        await ingest.update(me, saved.memory.id, MemoryInput(content="Port is 9000"), ["content"], expected_version=1)
    assert (refused.value.expected, refused.value.actual) == (1, 2)
    assert "version 2" in str(refused.value)


async def test_racing_updates_with_the_same_expected_version_have_exactly_one_winner(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    saved = await ingest.save(me, MemoryInput(content="The build uses make"))
    racers = 8
    outcomes = await asyncio.gather(
        *(
            ingest.update(
                me, saved.memory.id, MemoryInput(content=f"The build uses tool {n}"), ["content"], expected_version=1
            )
            for n in range(racers)
        ),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if not isinstance(o, BaseException)]
    losers = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(winners) == 1, outcomes
    assert all(isinstance(e, errors.VersionConflict) and e.actual == 2 for e in losers), losers
    history = await search.history(me, saved.memory.id, min_seq=winners[0].seq)
    assert [v.version for v in history.versions] == [1, 2]
    assert history.versions[-1].content == winners[0].memory.content


async def test_racing_updates_without_expected_version_all_land_as_successive_versions(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    saved = await ingest.save(me, MemoryInput(content="Counter memory", tags=["t0"]))
    results = await asyncio.gather(
        *(ingest.update(me, saved.memory.id, MemoryInput(content="x", tags=[f"t{n}"]), ["tags"]) for n in range(1, 7))
    )
    assert sorted(r.memory.version for r in results) == [2, 3, 4, 5, 6, 7]
    history = await search.history(me, saved.memory.id, min_seq=max(r.seq for r in results))
    assert [v.version for v in history.versions] == [1, 2, 3, 4, 5, 6, 7]


async def test_update_by_non_owner_is_rejected_with_owner_named(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, _ = clients
    ns = namespace()
    saved = await ingest.save(caller(ns, "gemini-cli"), MemoryInput(content="Use pnpm, not npm"))
    for attempt in (
        ingest.update(caller(ns, "claude-code"), saved.memory.id, MemoryInput(content="Use npm"), ["content"]),
        ingest.delete(caller(ns, "claude-code"), saved.memory.id),
    ):  # supersede is not among them: newest wins (tests/integration/test_newest_wins.py)
        with pytest.raises(errors.OwnershipError) as refused:
            await attempt
        assert (refused.value.owner, refused.value.caller) == ("gemini-cli", "claude-code")
        assert str(refused.value) == (
            "Memory owned by 'gemini-cli', you are 'claude-code'. Use search_memory to read it, or save your own "
            "version."
        )
    admin = await ingest.update(
        caller(ns, "ops", admin=True), saved.memory.id, MemoryInput(content="Use pnpm 9"), ["content"]
    )
    assert admin.memory.version == 2 and admin.memory.owner_agent == "gemini-cli" and admin.memory.updated_by == "ops"


async def test_unowned_memories_may_be_changed_by_any_agent_of_the_namespace(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    ns = namespace()
    saved = await ingest.save(caller(ns, "anonymous"), MemoryInput(content="Legacy note"))
    updated = await ingest.update(caller(ns, "cursor"), saved.memory.id, MemoryInput(summary="legacy"), ["summary"])
    assert updated.memory.version == 2 and updated.memory.summary == "legacy"


async def test_another_namespace_cannot_see_or_change_a_memory(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, search = clients
    saved = await ingest.save(caller(namespace(), "a"), MemoryInput(content="Private to one namespace"))
    intruder = caller(namespace(), "a", admin=True)
    with pytest.raises(errors.NotFound):
        await ingest.update(intruder, saved.memory.id, MemoryInput(content="x"), ["content"])
    with pytest.raises(errors.NotFound):
        await search.history(intruder, saved.memory.id)


async def test_delete_archives_hides_from_search_and_list_but_not_from_get_and_history(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    word = uuid.uuid4().hex[:8]
    saved = await ingest.save(me, MemoryInput(content=f"Staging database is db-{word}"))
    deleted = await ingest.delete(me, saved.memory.id)
    assert deleted.memory is not None and (deleted.memory.status, deleted.memory.version) == ("archived", 2)
    found = await search.search(me, f"db-{word}", limit=5, flt=SearchFilter(), min_seq=deleted.seq)
    assert [h.memory.id for h in found.hits] == []
    assert (await search.list(me, limit=10, flt=SearchFilter())).memories == []
    archived = SearchFilter(statuses=["active", "archived"])
    found = await search.search(me, f"db-{word}", limit=5, flt=archived)
    assert [h.memory.id for h in found.hits] == [saved.memory.id]
    assert [m.id for m in (await search.list(me, limit=10, flt=archived)).memories] == [saved.memory.id]
    assert (await search.get(me, saved.memory.id)).status == "archived"
    history = await search.history(me, saved.memory.id)
    assert [(v.version, v.status, v.event) for v in history.versions] == [
        (1, "active", "memory_saved"),
        (2, "archived", "memory_deleted"),
    ]
    again = await ingest.delete(me, saved.memory.id)  # nothing more to do
    assert again.memory is not None and again.memory.version == 2


async def test_purge_needs_admin_and_erases_every_log_entry_of_the_memory(
    clients: tuple[IngestClient, SearchClient], life_node: NodeHandle
) -> None:
    ingest, search = clients
    ns = namespace()
    owner = caller(ns, "a@d")
    secret_word = f"pw{uuid.uuid4().hex}"
    saved = await ingest.save(owner, MemoryInput(content=f"The wifi passphrase word is {secret_word}"))
    updated = await ingest.update(owner, saved.memory.id, MemoryInput(summary=f"has {secret_word}"), ["summary"])
    with pytest.raises(errors.PermissionDenied, match="Only an admin may purge"):
        await ingest.delete(owner, saved.memory.id, purge=True)
    purged = await ingest.delete(caller(ns, "root", admin=True), saved.memory.id, purge=True)
    assert purged.erased == 2 and purged.memory is None
    with pytest.raises(errors.NotFound):
        await search.get(owner, saved.memory.id, min_seq=purged.seq)
    found = await search.search(owner, secret_word, limit=5, flt=SearchFilter(statuses=["active", "archived"]))
    assert found.hits == []
    event_log = await NatsLog.connect(life_node.nats_url)
    try:
        assert await event_log.read(saved.seq) is None and await event_log.read(updated.seq) is None
        marker = await event_log.read(purged.seq)
        assert marker is not None and marker.body["event"] == "memory_purged"
        assert secret_word not in str(marker.body)
    finally:
        await event_log.close()
    store = life_node.home / "nats"
    blobs = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file()) if store.exists() else b""
    assert secret_word.encode() not in blobs


async def test_memory_at_and_search_as_of_see_the_version_current_then(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    word = uuid.uuid4().hex[:8]
    saved = await ingest.save(me, MemoryInput(content=f"The {word} service is written in Ruby"))
    await asyncio.sleep(0.05)
    between = time.time()
    await asyncio.sleep(0.05)
    updated = await ingest.update(
        me, saved.memory.id, MemoryInput(content=f"The {word} service is written in Go"), ["content"]
    )
    then = await search.memory_at(me, saved.memory.id, between, min_seq=updated.seq)
    assert (then.version, then.content) == (1, f"The {word} service is written in Ruby")
    now = await search.memory_at(me, saved.memory.id, time.time() + 1)
    assert now.version == 2
    with pytest.raises(errors.NoVersionAt, match="did not exist yet"):
        await search.memory_at(me, saved.memory.id, between - 3600)
    old = await search.search(me, f"{word} Ruby", limit=3, flt=SearchFilter(as_of=between))
    assert [(h.memory.id, h.memory.version) for h in old.hits] == [(saved.memory.id, 1)]
    current = await search.search(me, f"{word} Ruby", limit=3, flt=SearchFilter())
    assert [(h.memory.id, h.memory.version) for h in current.hits] == [(saved.memory.id, 2)]
    before = await search.search(me, f"{word} Ruby", limit=3, flt=SearchFilter(as_of=between - 3600))
    assert before.hits == []


async def test_supersession_chains_resolve_to_their_head(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    word = uuid.uuid4().hex[:8]
    first = await ingest.save(me, MemoryInput(content=f"Decision {word}: use Postgres 14", memory_type="decision"))
    second = await ingest.supersede(
        me,
        first.memory.id,
        replacement=MemoryInput(content=f"Decision {word}: use Postgres 16", memory_type="decision"),
    )
    assert second.old.status == "superseded" and second.old.superseded_by == second.new.id
    assert second.old.invalid_at is not None and second.new.valid_at is not None
    assert [(r.kind, r.memory_id) for r in second.new.relations] == [("supersedes", first.memory.id)]
    # Superseding #1 again resolves to the head of its chain (#2).
    third = await ingest.supersede(
        me, first.memory.id, replacement=MemoryInput(content=f"Decision {word}: use Postgres 17")
    )
    assert third.old.id == second.new.id and third.old.superseded_by == third.new.id
    assert (await search.get(me, first.memory.id, min_seq=third.seq)).superseded_by == second.new.id
    hits = await search.search(me, f"Decision {word} Postgres", limit=5, flt=SearchFilter())
    assert [h.memory.id for h in hits.hits] == [third.new.id]
    # An existing memory may be the replacement.
    other = await ingest.save(me, MemoryInput(content=f"Decision {word}: use SQLite"))
    fourth = await ingest.supersede(me, third.new.id, new_id=other.memory.id)
    assert fourth.old.superseded_by == other.memory.id and fourth.new.id == other.memory.id
    with pytest.raises(errors.InvalidArgument):
        await ingest.supersede(me, other.memory.id, new_id=other.memory.id)
    # A replaced memory cannot come back as a replacement: that would close a cycle.
    with pytest.raises(errors.InvalidArgument, match="was itself superseded"):
        await ingest.supersede(me, other.memory.id, new_id=first.memory.id)


async def test_expiry_job_with_an_injected_clock_expires_only_what_is_due(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    now = time.time()
    due = await ingest.save(me, MemoryInput(content="Temporary: the office is closed", expires_at=now + 3600))
    later = await ingest.save(me, MemoryInput(content="Temporary: sprint ends", expires_at=now + 86400))
    forever = await ingest.save(me, MemoryInput(content="Permanent fact"))
    await search.get(me, forever.memory.id, min_seq=forever.seq)
    job = ExpiryJob(search, ingest, interval=3600, clock=lambda: now + 7200)
    assert await job.run_once() >= 1
    written = (await search.stats()).log_last_seq
    expired = await search.get(me, due.memory.id, with_history=True, min_seq=written)
    assert (expired.status, expired.version, expired.updated_by) == ("expired", 2, "engram-consolidation")
    assert expired.invalid_at == pytest.approx(now + 3600, abs=0.01)
    assert [v.status for v in expired.history] == ["active"]
    assert (await search.get(me, later.memory.id)).status == "active"
    assert (await search.get(me, forever.memory.id)).status == "active"
    listed = await search.list(me, limit=10, flt=SearchFilter(), min_seq=expired.seq)
    assert due.memory.id not in {m.id for m in listed.memories}


async def test_the_scheduled_expiry_expires_a_memory_once_due(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, search = clients
    me = caller(namespace(), "a@d")
    saved = await ingest.save(me, MemoryInput(content="Expires in a moment", expires_at=time.time() + 0.5))
    deadline = time.monotonic() + WAIT
    while (memory := await search.get(me, saved.memory.id, min_seq=saved.seq)).status != "expired":
        assert time.monotonic() < deadline, memory
        await asyncio.sleep(0.2)


async def test_reads_are_counted_in_batches_and_stats_break_the_namespace_down(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    a, b = caller(ns, "claude-code"), caller(ns, "gemini-cli")
    one = await ingest.save(a, MemoryInput(content="Alpha fact", memory_type="fact", team="core"))
    await ingest.save(a, MemoryInput(content="Beta decision", memory_type="decision", team="core"))
    three = await ingest.save(b, MemoryInput(content="Gamma finding", memory_type="finding"))
    await ingest.delete(b, three.memory.id)
    for _ in range(3):
        await search.get(a, one.memory.id, min_seq=three.seq)
    deadline = time.monotonic() + WAIT
    while (memory := await search.get(a, one.memory.id, for_update=True)).access_count < 3:
        assert time.monotonic() < deadline, memory
        await asyncio.sleep(0.1)
    assert memory.version == 1 and memory.last_accessed_at is not None
    stats = await search.memory_stats(a)
    assert (stats.memories, stats.total) == (2, 3)
    assert stats.by_agent == {"claude-code": 2, "gemini-cli": 1}
    assert stats.by_type == {"fact": 1, "decision": 1, "finding": 1}
    assert stats.by_status == {"active": 2, "archived": 1}
    assert stats.by_team == {"core": 2}


async def test_undoing_the_supersession_of_an_archived_memory_gives_back_archived(
    clients: tuple[IngestClient, SearchClient], life_node: NodeHandle
) -> None:
    """Issue 33: an archived memory superseded (as an older Engram allowed) came back active on undo. Superseding an
    archived memory is refused now; one already in the log (appended here as that version wrote it) is undone to
    archived."""
    ingest, search = clients
    ns = namespace()
    alice, bob = caller(ns, "alice"), caller(ns, "bob")
    old = await ingest.save(alice, MemoryInput(content="The proxy is squid on port 3128"))
    archived = await ingest.delete(alice, old.memory.id)
    with pytest.raises(errors.InvalidArgument, match="is archived; only an active memory is superseded"):
        await ingest.supersede(bob, old.memory.id, replacement=MemoryInput(content="The proxy is envoy"))
    new = await ingest.save(bob, MemoryInput(content="The proxy is envoy on port 10000"))
    event_log = await NatsLog.connect(life_node.nats_url)
    try:
        entry = await event_log.read(archived.seq)
        assert entry is not None
        current = await search.get(alice, old.memory.id, min_seq=new.seq, for_update=True)
        legacy = dataclasses.replace(
            current, status="superseded", superseded_by=new.memory.id, version=current.version + 1,
            updated_by="bob", history=[],
        )  # fmt: skip
        body = event_body(MEMORY_SUPERSEDED, legacy, bob, vectors=entry.body["vectors"])
        appended = await event_log.append(ns, MEMORY_SUPERSEDED, body, msg_id=f"{legacy.id}:{legacy.version}")
    finally:
        await event_log.close()
    assert (await search.get(alice, old.memory.id, min_seq=appended.seq)).status == "superseded"
    undone = await ingest.unsupersede(alice, old.memory.id)
    back = await search.get(alice, old.memory.id, min_seq=undone.seq)
    assert (back.status, back.superseded_by) == ("archived", "")
