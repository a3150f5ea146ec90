"""Leases in NATS KV (real nats-server): one holder at a time, kept alive by renewal, lost by a holder that dies;
consolidation jobs in two processes sharing one NATS never run the same job at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import nats
import pytest
from nats.aio.client import Client

from engram.errors import Unavailable
from engram.log.leases import Holder, Lease, Leases, lease_key
from engram.model import Caller
from engram.process.natsd import NatsServer
from engram.services.consolidation.jobs import JobRunning, Jobs, Outcome, Work

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
TTL = 1.0
CALLER = Caller(namespace="default", agent_id="lead", scopes=frozenset({"read", "write"}))


@pytest.fixture
async def connections(nats_server: NatsServer) -> AsyncIterator[list[Client]]:
    """Two connections, as two replicas would have."""
    clients = [await nats.connect(nats_server.url) for _ in range(2)]
    yield clients
    for client in clients:
        if not client.is_closed:
            await client.close()


async def leases(client: Client) -> Leases:
    return await Leases.open(client.jetstream(), ttl=TTL)


async def test_a_lease_has_one_holder_at_a_time_until_it_is_released(connections: list[Client]) -> None:
    mine, theirs = [await leases(c) for c in connections]
    key = lease_key("default", "team_summary", "team 'auth'")
    assert all(c.isalnum() or c in "._" for c in key)
    held = await mine.acquire(key, "job-1", "replica-a")
    assert isinstance(held, Lease)

    refused = await theirs.acquire(key, "job-2", "replica-b")
    assert isinstance(refused, Holder)
    assert (refused.job_id, refused.owner) == ("job-1", "replica-a")

    await asyncio.sleep(TTL * 2.5)  # renewed meanwhile: still held
    assert isinstance(await theirs.acquire(key, "job-2", "replica-b"), Holder)
    assert not held.lost

    await held.release()
    taken = await theirs.acquire(key, "job-2", "replica-b")
    assert isinstance(taken, Lease)
    assert (await mine.holder(key)) == taken.holder
    await taken.release()
    assert await mine.holder(key) is None


async def test_a_holder_that_dies_loses_its_lease_once_the_ttl_passes(connections: list[Client]) -> None:
    dying, survivor = connections
    key = lease_key("default", "expiry", "namespace")
    held = await (await leases(dying)).acquire(key, "job-1", "replica-a")
    assert isinstance(held, Lease)
    await dying.close()  # the process is gone: no renewal, no release

    other = await leases(survivor)
    assert isinstance(await other.acquire(key, "job-2", "replica-b"), Holder)
    await asyncio.sleep(TTL * 2)
    taken = await other.acquire(key, "job-2", "replica-b")
    assert isinstance(taken, Lease)
    await taken.release()
    await held.release()  # its connection is closed: nothing to do, and no error


def slow_kind(started: asyncio.Event, finish: asyncio.Event, runs: list[str]) -> object:
    def prepare(caller: Caller, options: Mapping[str, str]) -> Work:
        async def run(time_left: float | None) -> Outcome:
            started.set()
            await finish.wait()
            runs.append(caller.namespace)
            return Outcome("done", {"done": True})

        return Work(key="namespace", run=run)

    return prepare


async def test_a_second_replica_is_told_the_job_runs_elsewhere_then_runs_it_once_the_first_died(
    connections: list[Client],
) -> None:
    first_started, finish, runs = asyncio.Event(), asyncio.Event(), []
    first, second = Jobs(), Jobs()
    first.share(await leases(connections[0]), "replica-a")
    second.share(await leases(connections[1]), "replica-b")
    first.handle("slow", slow_kind(first_started, finish, runs))  # type: ignore[arg-type]
    second_started = asyncio.Event()
    second.handle("slow", slow_kind(second_started, finish, runs))  # type: ignore[arg-type]

    running = asyncio.create_task(first.run(CALLER, "slow", {}))
    await asyncio.wait_for(first_started.wait(), 10)
    with pytest.raises(JobRunning) as refused:
        await second.run(CALLER, "slow", {})
    job_id = first._recent and next(iter(first._recent))  # the running job, as GetJob on the first replica has it
    assert refused.value.job_id == job_id
    assert "already running" in str(refused.value)

    await connections[0].close()  # the first replica dies mid-job: its lease is neither renewed nor released
    await first.close()  # (its job stops with it)
    assert running.cancelled() or running.done()
    await asyncio.sleep(TTL * 2)
    finish.set()
    done = await second.run(CALLER, "slow", {})
    assert (done.state, done.result) == ("succeeded", {"done": True})
    assert runs == ["default"]  # the dead replica's run never finished; the second ran once
    await second.close()


async def test_a_lease_store_out_of_reach_answers_unavailable(connections: list[Client]) -> None:
    store = await leases(connections[0])
    await connections[0].close()
    with pytest.raises(Unavailable, match="cannot be reached"):
        await store.acquire(lease_key("default", "expiry", "namespace"), "job-1", "replica-a")


async def test_renewals_follow_the_ttl_the_bucket_was_created_with(connections: list[Client]) -> None:
    await Leases.open(connections[0].jetstream(), ttl=TTL)
    assert (await Leases.open(connections[1].jetstream(), ttl=120.0)).ttl == TTL
