"""Ingest for agents working together (issue 8) on a real node, through the kernel's gRPC clients: every memory
names the device it was written on and its team (tagged team:<team>), handoffs are created (handoff_created in the
log), moved on by their target agent only (the one exception to write-own), and expire into plain memories."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from engram import errors
from engram.grpc.clients import IngestClient, SearchClient
from engram.log.nats import NatsLog
from engram.model import Caller, MemoryInput
from engram.results import ImportItem
from engram.services.consolidation.expiry import ExpiryJob, system_caller
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

DEVICE = "ingest-host"  # the node's ENGRAM_DEVICE: where a memory was written when its caller names no device
TTL = 600.0  # the node's ENGRAM_HANDOFF_TTL_SECONDS


@pytest.fixture(scope="module")
def team_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(
        tmp_path_factory.mktemp("handoffs"),
        model_cache,
        ENGRAM_DEVICE=DEVICE,
        ENGRAM_HANDOFF_TTL_SECONDS=str(TTL),
        ENGRAM_EXPIRY_INTERVAL_SECONDS="0",  # the tests drive expiry themselves
    )
    yield handle
    assert handle.stop() == 0


@pytest.fixture
async def clients(team_node: NodeHandle) -> AsyncIterator[tuple[IngestClient, SearchClient]]:
    ingest = IngestClient(team_node.grpc_address)
    search = SearchClient(team_node.grpc_address)
    yield ingest, search
    await search.close()
    await ingest.close()


@pytest.fixture
async def event_log(team_node: NodeHandle) -> AsyncIterator[NatsLog]:
    log = await NatsLog.connect(team_node.nats_url)
    yield log
    await log.close()


def namespace() -> str:
    return f"ns{uuid.uuid4().hex[:10]}"


def caller(ns: str, agent: str, *, device: str = "", team: str = "", admin: bool = False) -> Caller:
    scopes = {"read", "write", "admin"} if admin else {"read", "write"}
    return Caller(ns, agent, source=agent, scopes=frozenset(scopes), device=device, team=team)


async def logged(log: NatsLog, seq: int) -> tuple[str, dict[str, object]]:
    entry = await log.read(seq)
    assert entry is not None
    return entry.event, entry.body


# --- device and team -----------------------------------------------------------------------------------------


async def test_a_save_names_the_callers_device_and_team_and_tags_the_team(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, _ = clients
    ns = namespace()
    alice = caller(ns, "claude-code", device="laptop", team="auth")
    saved = await ingest.save(alice, MemoryInput(content="Sessions live 12h", tags=["sessions"]))
    memory = saved.memory
    assert (memory.origin.device, memory.team, memory.tags) == ("laptop", "auth", ["sessions", "team:auth"])
    event, body = await logged(event_log, saved.seq)
    assert (event, body["event"], body["device"], body["team"], body["tags"]) == (
        "memory_saved", "memory_saved", "laptop", "auth", ["sessions", "team:auth"],
    )  # fmt: skip

    unnamed = await ingest.save(caller(ns, "cursor"), MemoryInput(content="No device named"))
    assert (unnamed.memory.origin.device, unnamed.memory.team, unnamed.memory.tags) == (DEVICE, "", [])

    elsewhere = await ingest.save(alice, MemoryInput(content="A billing note", team="billing"))
    assert (elsewhere.memory.team, elsewhere.memory.tags) == ("billing", ["team:billing"])
    written = await ingest.save(alice, MemoryInput(content="Tagged by hand", tags=["team:auth", "x"]))
    assert written.memory.tags == ["team:auth", "x"], "a team tag the caller wrote is not repeated"


async def test_a_long_team_name_gets_its_tag_and_a_full_tag_list_is_refused_with_the_reason(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    ns = namespace()
    team = "t" * 64  # the longest team a header may name: its tag is longer than a label may be
    saved = await ingest.save(caller(ns, "a", team=team), MemoryInput(content="Long team"))
    assert saved.memory.tags == [f"team:{team}"]
    again = await ingest.update(caller(ns, "a"), saved.memory.id, MemoryInput(summary="still fine"), ["summary"])
    assert again.memory.tags == [f"team:{team}"]
    with pytest.raises(errors.InvalidArgument, match="automatic 'team:auth' tag") as refused:
        await ingest.save(caller(ns, "a", team="auth"), MemoryInput(content="Full", tags=[f"t{n}" for n in range(32)]))
    assert refused.value.field == "tags"


async def test_an_update_that_changes_the_team_replaces_its_tag(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, _ = clients
    ns = namespace()
    me = caller(ns, "claude-code", team="auth")
    saved = await ingest.save(me, MemoryInput(content="Rate limits: 100/min", tags=["limits", "team:ops"]))
    assert saved.memory.tags == ["limits", "team:ops", "team:auth"]
    moved = await ingest.update(me, saved.memory.id, MemoryInput(team="billing"), ["team"])
    assert (moved.memory.team, moved.memory.tags) == ("billing", ["limits", "team:ops", "team:billing"])
    retagged = await ingest.update(me, saved.memory.id, MemoryInput(tags=["quota"]), ["tags"])
    assert retagged.memory.tags == ["quota", "team:billing"], "the team's tag stays while the memory is in it"
    left = await ingest.update(me, saved.memory.id, MemoryInput(team=""), ["team"])
    assert (left.memory.team, left.memory.tags) == ("", ["quota"])
    assert left.memory.origin.device == DEVICE, "an update keeps where the memory was written"


async def test_an_import_gives_each_memory_the_callers_team_and_device_and_creates_handoffs(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, search = clients
    ns = namespace()
    me = caller(ns, "claude-code", device="laptop", team="auth")

    async def items() -> AsyncIterator[ImportItem]:
        yield ImportItem(1, MemoryInput(content="Imported fact", memory_type="fact"))
        yield ImportItem(2, MemoryInput(content="Imported handoff", handoff_target="gemini-cli"))
        yield ImportItem(3, MemoryInput(content="Not a handoff", memory_type="fact", handoff_target="gemini-cli"))
        yield ImportItem(4, MemoryInput(content="Handoff to myself", handoff_target="claude-code"))

    summary = await ingest.import_memories(me, items())
    assert [line for line, _, _ in summary.imported] == [1, 2]
    assert [(line, reason.split(":")[0]) for line, reason in summary.rejected] == [
        (3, "memory_type"),
        (4, "handoff_target"),
    ]
    events = [(await logged(event_log, seq))[0] for _, _, seq in summary.imported]
    assert events == ["memory_saved", "handoff_created"]
    for _, memory_id, seq in summary.imported:
        memory = await search.get(me, memory_id, min_seq=seq)
        assert (memory.team, memory.tags, memory.origin.device) == ("auth", ["team:auth"], "laptop")
    handoff = await search.get(me, summary.imported[1][1])
    assert handoff.memory_type == "handoff" and handoff.handoff is not None
    assert (handoff.handoff.target_agent, handoff.handoff.status) == ("gemini-cli", "pending")

    again = await ingest.import_memories(me, _one(ImportItem(1, MemoryInput(content="Again"), source_id="s1")))
    retried = await ingest.import_memories(me, _one(ImportItem(1, MemoryInput(content="Again"), source_id="s1")))
    assert [i for _, i, _ in retried.present] == [i for _, i, _ in again.imported], "a retried item is stored once"


async def _one(item: ImportItem) -> AsyncIterator[ImportItem]:
    yield item


# --- handoffs ------------------------------------------------------------------------------------------------


async def test_a_save_with_a_handoff_target_is_a_pending_handoff_logged_as_handoff_created(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, search = clients
    alice = caller(namespace(), "claude-code", device="laptop", team="auth")
    saved = await ingest.save(alice, MemoryInput(content="Finish the session refresh", handoff_target="gemini-cli"))
    memory = saved.memory
    assert memory.memory_type == "handoff" and memory.handoff is not None and memory.created_at is not None
    assert (memory.handoff.target_agent, memory.handoff.status) == ("gemini-cli", "pending")
    assert memory.handoff.updated_at == memory.created_at
    assert memory.handoff.expires_at == pytest.approx(memory.created_at + TTL)
    event, body = await logged(event_log, saved.seq)
    assert (event, body["event"], body["memory_id"], body["version"]) == (
        "handoff_created", "handoff_created", memory.id, 1,
    )  # fmt: skip
    assert "vectors" in body and body["memory"]["handoff"]["status"] == "pending"  # type: ignore[index]
    stored = await search.get(alice, memory.id, min_seq=saved.seq)
    assert stored.handoff is not None and stored.handoff.status == "pending" and stored.memory_type == "handoff"
    history = await search.history(alice, memory.id)
    assert [(v.version, v.event) for v in history.versions] == [(1, "handoff_created")]
    assert history.seqs == [saved.seq], "one log entry, not a memory_saved as well"

    typed = await ingest.save(alice, MemoryInput(content="Typed", memory_type="Handoff", handoff_target="cursor"))
    assert typed.memory.memory_type == "handoff"


async def test_a_handoff_of_another_type_without_a_target_or_to_yourself_is_refused(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    me = caller(namespace(), "claude-code", device="laptop")
    cases = [
        (MemoryInput(content="x", memory_type="fact", handoff_target="gemini-cli"), "memory_type", "is 'fact'"),
        (MemoryInput(content="x", memory_type="handoff"), "handoff_target", "is required"),
        (MemoryInput(content="x", handoff_target="claude-code"), "handoff_target", "is you"),
        (MemoryInput(content="x", handoff_target="claude-code@laptop"), "handoff_target", "is you"),
    ]
    for draft, field, says in cases:
        with pytest.raises(errors.InvalidArgument) as refused:
            await ingest.save(me, draft)
        assert refused.value.field == field and says in refused.value.problem, refused.value
    other_device = await ingest.save(me, MemoryInput(content="To my desktop", handoff_target="claude-code@desktop"))
    assert other_device.memory.handoff is not None


async def test_the_target_accepts_and_completes_a_handoff_and_its_notes_are_kept(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, search = clients
    ns = namespace()
    alice, bob = caller(ns, "claude-code", device="laptop"), caller(ns, "gemini-cli", device="desktop")
    created = await ingest.save(alice, MemoryInput(content="Write the expiry tests", handoff_target="gemini-cli"))
    handoff_id = created.memory.id

    accepted = await ingest.update_handoff(bob, handoff_id, "accepted", note="On it")
    memory = accepted.memory
    assert memory.handoff is not None and (memory.version, memory.handoff.status) == (2, "accepted")
    assert (memory.owner_agent, memory.updated_by, memory.memory_type) == ("claude-code", "gemini-cli", "handoff")
    assert created.memory.handoff is not None and memory.handoff.expires_at == pytest.approx(
        created.memory.handoff.expires_at, abs=0.001
    )
    assert memory.handoff.updated_at == memory.updated_at
    [note] = memory.metadata["handoff_notes"]
    assert (note["status"], note["agent"], note["note"]) == ("accepted", "gemini-cli@desktop", "On it")
    assert note["time"].endswith("Z")
    assert (await logged(event_log, accepted.seq))[0] == "handoff_accepted"

    same = await ingest.update_handoff(bob, handoff_id, "accepted")
    assert (same.memory.version, same.seq) == (2, accepted.seq), "the same state again changes nothing"

    completed = await ingest.update_handoff(bob, handoff_id, "completed", note="Tests written")
    assert completed.memory.handoff is not None and completed.memory.handoff.status == "completed"
    assert [n["note"] for n in completed.memory.metadata["handoff_notes"]] == ["On it", "Tests written"]
    assert (await logged(event_log, completed.seq))[0] == "handoff_completed"
    history = await search.history(alice, handoff_id, min_seq=completed.seq)
    assert [v.event for v in history.versions] == ["handoff_created", "handoff_accepted", "handoff_completed"]
    current = await search.get(alice, handoff_id)
    assert current.handoff is not None and current.handoff.status == "completed"

    direct = await ingest.save(alice, MemoryInput(content="Small fix", handoff_target="gemini-cli"))
    done = await ingest.update_handoff(bob, direct.memory.id, "completed")
    assert done.memory.handoff is not None and done.memory.handoff.status == "completed"
    assert "handoff_notes" not in done.memory.metadata, "no note, no notes"


async def test_only_the_target_or_an_admin_moves_a_handoff(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, _ = clients
    ns = namespace()
    alice = caller(ns, "claude-code", device="laptop")
    created = await ingest.save(alice, MemoryInput(content="Review the token flow", handoff_target="gemini-cli"))
    for intruder in (alice, caller(ns, "cursor", device="laptop")):
        with pytest.raises(errors.PermissionDenied) as refused:
            await ingest.update_handoff(intruder, created.memory.id, "accepted")
        assert not isinstance(refused.value, errors.OwnershipError)
        assert "addressed to 'gemini-cli'" in str(refused.value) and intruder.identity in str(refused.value)
    ops = await ingest.update_handoff(caller(ns, "ops", admin=True), created.memory.id, "accepted")
    assert ops.memory.handoff is not None and ops.memory.handoff.status == "accepted"

    pinned = await ingest.save(alice, MemoryInput(content="On the desktop only", handoff_target="gemini-cli@desktop"))
    with pytest.raises(errors.PermissionDenied, match="gemini-cli@laptop"):
        await ingest.update_handoff(caller(ns, "gemini-cli", device="laptop"), pinned.memory.id, "accepted")
    on_desktop = await ingest.update_handoff(caller(ns, "gemini-cli", device="desktop"), pinned.memory.id, "accepted")
    assert on_desktop.memory.handoff is not None and on_desktop.memory.handoff.status == "accepted"


async def test_moves_a_handoff_cannot_make_are_refused_saying_its_state(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    ns = namespace()
    alice, bob = caller(ns, "claude-code"), caller(ns, "gemini-cli")
    created = await ingest.save(alice, MemoryInput(content="Ship the release notes", handoff_target="gemini-cli"))
    for status in ("pending", "expired"):
        with pytest.raises(errors.InvalidArgument, match="give accepted or completed") as refused:
            await ingest.update_handoff(bob, created.memory.id, status)
        assert refused.value.field == "status"
    await ingest.update_handoff(bob, created.memory.id, "completed")
    with pytest.raises(errors.InvalidArgument, match="is completed; it cannot become accepted"):
        await ingest.update_handoff(bob, created.memory.id, "accepted")
    plain = await ingest.save(alice, MemoryInput(content="A plain fact"))
    with pytest.raises(errors.InvalidArgument, match="is not a handoff"):
        await ingest.update_handoff(bob, plain.memory.id, "accepted")
    another = await ingest.save(alice, MemoryInput(content="Another", handoff_target="gemini-cli"))
    with pytest.raises(errors.InvalidArgument, match="note: is longer than 2000"):
        await ingest.update_handoff(bob, another.memory.id, "accepted", note="n" * 2001)
    with pytest.raises(errors.NotFound):
        await ingest.update_handoff(bob, str(uuid.uuid4()), "accepted")


async def test_a_stale_expected_version_is_refused_when_moving_a_handoff(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    ns = namespace()
    alice, bob = caller(ns, "claude-code"), caller(ns, "gemini-cli")
    created = await ingest.save(alice, MemoryInput(content="Rotate the keys", handoff_target="gemini-cli"))
    await ingest.update_handoff(bob, created.memory.id, "accepted", expected_version=1)
    with pytest.raises(errors.VersionConflict) as refused:
        await ingest.update_handoff(bob, created.memory.id, "completed", expected_version=1)
    assert (refused.value.expected, refused.value.actual) == (1, 2)
    done = await ingest.update_handoff(bob, created.memory.id, "completed", expected_version=2)
    assert done.memory.version == 3


async def test_an_update_keeps_a_handoff_a_handoff_and_makes_no_other_memory_one(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    alice = caller(namespace(), "claude-code")
    created = await ingest.save(alice, MemoryInput(content="Hand over the docs", handoff_target="gemini-cli"))
    tagged = await ingest.update(alice, created.memory.id, MemoryInput(tags=["docs"]), ["tags"])
    assert tagged.memory.memory_type == "handoff" and tagged.memory.handoff is not None
    assert (tagged.memory.handoff.target_agent, tagged.memory.handoff.status) == ("gemini-cli", "pending")
    with pytest.raises(errors.InvalidArgument, match="is a handoff and stays one"):
        await ingest.update(alice, created.memory.id, MemoryInput(memory_type="fact"), ["memory_type"])
    plain = await ingest.save(alice, MemoryInput(content="Plain"))
    with pytest.raises(errors.InvalidArgument, match="cannot become a handoff"):
        await ingest.update(alice, plain.memory.id, MemoryInput(memory_type="handoff"), ["memory_type"])


# --- expiry --------------------------------------------------------------------------------------------------


async def test_a_pending_handoff_past_its_deadline_becomes_a_plain_memory(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, search = clients
    ns = namespace()
    alice, bob, job = caller(ns, "claude-code"), caller(ns, "gemini-cli"), system_caller(ns)
    created = await ingest.save(alice, MemoryInput(content="Nobody took this over", handoff_target="gemini-cli"))
    deadline = created.memory.handoff.expires_at  # type: ignore[union-attr]
    assert deadline is not None
    early = await ingest.expire(job, created.memory.id, expected_version=1, at=deadline - 1)
    assert (early.expired, early.memory.version) == (False, 1)

    expired = await ingest.expire(job, created.memory.id, expected_version=1, at=deadline)
    memory = expired.memory
    assert expired.expired and memory.handoff is not None
    assert (memory.version, memory.memory_type, memory.status, memory.handoff.status) == (
        2, "general", "active", "expired",
    )  # fmt: skip
    assert memory.handoff.target_agent == "gemini-cli" and memory.updated_by == "engram-consolidation"
    event, body = await logged(event_log, expired.seq)
    assert (event, body["memory_type"]) == ("handoff_expired", "general")
    with pytest.raises(errors.InvalidArgument, match="expired unaccepted and is a plain memory"):
        await ingest.update_handoff(bob, created.memory.id, "accepted")
    stored = await search.get(alice, created.memory.id, min_seq=expired.seq)
    assert (stored.memory_type, stored.status) == ("general", "active")

    taken = await ingest.save(alice, MemoryInput(content="Taken in time", handoff_target="gemini-cli"))
    await ingest.update_handoff(bob, taken.memory.id, "accepted")
    late = await ingest.expire(job, taken.memory.id, expected_version=2, at=deadline + 10 * TTL)
    assert not late.expired and late.memory.handoff is not None and late.memory.handoff.status == "accepted"


async def test_a_handoff_due_both_ways_becomes_plain_first_and_then_expires(
    clients: tuple[IngestClient, SearchClient], event_log: NatsLog
) -> None:
    ingest, _ = clients
    ns = namespace()
    alice, job = caller(ns, "claude-code"), system_caller(ns)
    now = time.time()
    created = await ingest.save(
        alice, MemoryInput(content="Short-lived", handoff_target="gemini-cli", expires_at=now + 60)
    )
    at = now + 2 * TTL
    first = await ingest.expire(job, created.memory.id, expected_version=1, at=at)
    second = await ingest.expire(job, created.memory.id, expected_version=2, at=at)
    assert (first.expired, first.memory.status, (await logged(event_log, first.seq))[0]) == (
        True, "active", "handoff_expired",
    )  # fmt: skip
    assert (second.expired, second.memory.status, (await logged(event_log, second.seq))[0]) == (
        True, "expired", "memory_expired",
    )  # fmt: skip


async def test_the_expiry_job_turns_overdue_pending_handoffs_into_plain_memories(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    ns = namespace()
    alice = caller(ns, "claude-code")
    overdue = await ingest.save(alice, MemoryInput(content="Overdue handoff", handoff_target="gemini-cli"))
    await search.get(alice, overdue.memory.id, min_seq=overdue.seq)
    job = ExpiryJob(search, ingest, interval=3600, clock=lambda: time.time() + TTL + 1)
    assert await job.run_once() >= 1
    written = (await search.stats()).log_last_seq
    memory = await search.get(alice, overdue.memory.id, min_seq=written)
    assert memory.handoff is not None and (memory.memory_type, memory.handoff.status) == ("general", "expired")
