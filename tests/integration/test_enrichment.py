"""Reverse-HyDE enrichment end to end: real JetStream, a real ingest gRPC server, a local fake LLM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engram.config import Settings
from engram.errors import Unavailable
from engram.grpc import wire
from engram.grpc.clients import IngestClient
from engram.grpc.rpc import channel
from engram.log import SUBJECT_PREFIX, LogEntry
from engram.log.events import MEMORY_ENRICHED
from engram.log.nats import NatsLog
from engram.model import Caller, MemoryInput
from engram.models.llm import ChatClient
from engram.process.natsd import NatsServer
from engram.process.runtime import Resources, RunningServer, serve
from engram.services.consolidation.enrichment import DURABLE_NAME, SUBJECTS, Enricher, EnrichOptions, Outcome
from engram.services.consolidation.server import ConsolidationService
from engram.services.ingest.server import build_service as build_ingest
from engram.services.ingest.servicer import IngestServicer
from engram.v1 import ingest_pb2, ingest_pb2_grpc
from tests.helpers.fake_llm import FakeLlm, canned_questions, fake_llm_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

API_KEY = "sk-enrich-test-7f3a9c1e5b"
MODEL = "fake-model"
WAIT = 30.0
FAST = EnrichOptions(retry_base_seconds=0.005, max_attempts=3, fetch_timeout=0.5)
WRITER = Caller(namespace="default", agent_id="tester@box", source="pytest")

# The lead's EnrichMemory replaces the generated UNIMPLEMENTED answer; these tests need it.
assert IngestServicer.EnrichMemory is not ingest_pb2_grpc.IngestServicer.EnrichMemory


@dataclass
class Harness:
    """A real ingest server on a real log, a fake LLM, and everything ingest appended as memory_enriched."""

    settings: Settings
    log: NatsLog
    ingest_addr: str
    fake: FakeLlm
    enriched: asyncio.Queue[LogEntry] = field(default_factory=asyncio.Queue)
    last_save_seconds: float = 0.0
    _stub: Any = None

    async def save(self, content: str, **fields: Any) -> str:
        request = ingest_pb2.SaveMemoryRequest(
            caller=wire.caller_to_proto(WRITER), memory=wire.input_to_proto(MemoryInput(content=content, **fields))
        )
        started = time.monotonic()
        response = await self._stub.SaveMemory(request, timeout=WAIT)
        self.last_save_seconds = time.monotonic() - started
        return str(response.memory.id)

    async def next_enriched(self) -> LogEntry:
        async with asyncio.timeout(WAIT):
            return await self.enriched.get()

    @contextlib.asynccontextmanager
    async def enricher(
        self, options: EnrichOptions = FAST, *, ingest: Any = None
    ) -> AsyncIterator[asyncio.Queue[Outcome]]:
        """Runs an Enricher on the durable queue (as the service does) and yields its outcomes."""
        outcomes: asyncio.Queue[Outcome] = asyncio.Queue()
        queue = await self.log.work_queue(DURABLE_NAME, SUBJECTS, ack_wait=30)
        llm = ChatClient(self.fake.url, model=MODEL, api_key=API_KEY, timeout=5)
        real_ingest = IngestClient(self.ingest_addr, timeout=10)
        enricher = Enricher(queue, llm, ingest or real_ingest, options=options, observer=outcomes.put_nowait)
        await enricher.start()
        try:
            yield outcomes
        finally:
            await enricher.stop()
            await llm.aclose()
            await real_ingest.close()


async def next_outcome(outcomes: asyncio.Queue[Outcome]) -> Outcome:
    async with asyncio.timeout(WAIT):
        return await outcomes.get()


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with fake_llm_server() as server:
        yield server


@pytest.fixture
def settings(nats_server: NatsServer, model_cache: Path, tmp_path: Path, fake: FakeLlm) -> Settings:
    return Settings.from_env(
        {}, home=tmp_path / "home", nats_url=nats_server.url, model_cache=model_cache, llm_url=fake.url,
        llm_model=MODEL, llm_api_key=API_KEY, enrich_retry_base_seconds=0.005, enrich_max_attempts=3,
    )  # fmt: skip


@pytest.fixture
async def harness(settings: Settings, fake: FakeLlm) -> AsyncIterator[Harness]:
    resources = Resources(settings)
    server: RunningServer = await serve([await build_ingest(settings, resources)], "127.0.0.1:0", resources=resources)
    ingest_channel = channel(server.address)
    event_log = await resources.log()
    h = Harness(settings, event_log, server.address, fake, _stub=ingest_pb2_grpc.IngestStub(ingest_channel))

    async def collect(entry: LogEntry) -> None:
        h.enriched.put_nowait(entry)

    subscription = await event_log.follow(1, collect, subjects=f"{SUBJECT_PREFIX}.*.{MEMORY_ENRICHED}")
    try:
        yield h
    finally:
        await subscription.unsubscribe()
        await ingest_channel.close()
        await server.stop(grace=0)
        await resources.close()


async def test_questions_are_generated_after_the_save_and_stored_through_ingest(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memory_id = await harness.save("We deploy the billing service with Helm on Fridays", topics=["deploy"])
    assert harness.fake.count == 0  # the save was answered without asking the LLM
    async with harness.enricher() as outcomes:
        outcome = await next_outcome(outcomes)
        entry = await harness.next_enriched()
    assert (outcome.memory_id, outcome.status, outcome.attempt) == (memory_id, "enriched", 1)
    (request,) = harness.fake.requests
    assert "We deploy the billing service with Helm on Fridays" in request.user_text
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == MODEL
    assert entry.event == MEMORY_ENRICHED and entry.body["memory_id"] == memory_id
    assert entry.body["questions"] == canned_questions(request.user_text)
    assert entry.body["question_model"] == MODEL and entry.body["agent"] == "engram-enricher"
    assert entry.body["source"] == "enrichment" and entry.body["namespace"] == "default"
    assert API_KEY not in caplog.text


async def test_transient_llm_errors_are_retried_with_backoff(harness: Harness) -> None:
    harness.fake.fail_next = 2
    memory_id = await harness.save("The staging database is reset every Monday at 06:00 UTC")
    async with harness.enricher() as outcomes:
        seen = [await next_outcome(outcomes) for _ in range(3)]
        await harness.next_enriched()
    assert [(o.memory_id, o.status, o.attempt) for o in seen] == [
        (memory_id, "retrying", 1), (memory_id, "retrying", 2), (memory_id, "enriched", 3)
    ]  # fmt: skip
    assert harness.fake.count == 3


async def test_rate_limits_are_retried_too(harness: Harness) -> None:
    harness.fake.fail_next, harness.fake.fail_status = 1, 429
    await harness.save("Our OpenAI quota resets at midnight Pacific time")
    async with harness.enricher() as outcomes:
        statuses = [(await next_outcome(outcomes)).status for _ in range(2)]
    assert statuses == ["retrying", "enriched"]


async def test_gives_up_after_max_attempts_and_continues_with_the_next_memory(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # An answer without usable questions counts as a failed attempt; only the doomed memory gets one.
    harness.fake.questions_for = lambda text: [] if "doomed" in text else canned_questions(text)
    doomed = await harness.save("A doomed memory the model cannot find questions for")
    fine = await harness.save("The VPN gateway lives in the Frankfurt region")
    with caplog.at_level(logging.WARNING):
        async with harness.enricher() as outcomes:
            seen = [await next_outcome(outcomes) for _ in range(4)]
            entry = await harness.next_enriched()
    doomed_statuses = [(o.status, o.attempt) for o in seen if o.memory_id == doomed]
    assert doomed_statuses == [("retrying", 1), ("retrying", 2), ("gave_up", 3)]
    assert [o.status for o in seen if o.memory_id == fine] == ["enriched"]
    assert entry.body["memory_id"] == fine and harness.enriched.empty()
    assert any(doomed in r.getMessage() and "gave up after 3 attempts" in r.getMessage() for r in caplog.records)


async def test_a_non_retryable_llm_error_gives_up_at_once(harness: Harness) -> None:
    harness.fake.fail_next, harness.fake.fail_status = 1, 401
    memory_id = await harness.save("The on-call rotation changes every Tuesday")
    async with harness.enricher() as outcomes:
        outcome = await next_outcome(outcomes)
    assert (outcome.memory_id, outcome.status, outcome.attempt) == (memory_id, "gave_up", 1)
    assert "HTTP 401" in outcome.detail and harness.fake.count == 1


async def test_secret_memories_never_reach_the_llm(harness: Harness) -> None:
    secret = await harness.save("The root password hint is the name of the first office cat", sensitivity="secret")
    normal = await harness.save("The first office was in Lisbon")
    async with harness.enricher() as outcomes:
        seen = {o.memory_id: o.status for o in [await next_outcome(outcomes) for _ in range(2)]}
        entry = await harness.next_enriched()
    assert seen == {secret: "skipped", normal: "enriched"}
    assert entry.body["memory_id"] == normal
    assert all("office cat" not in r.user_text for r in harness.fake.requests)


async def test_an_ingest_outage_is_retried_without_asking_the_llm_again(harness: Harness) -> None:
    flaky = FlakyIngest(IngestClient(harness.ingest_addr, timeout=10), failures=2)
    memory_id = await harness.save("Invoices are archived for ten years")
    try:
        async with harness.enricher(ingest=flaky) as outcomes:
            seen = [await next_outcome(outcomes) for _ in range(3)]
            entry = await harness.next_enriched()
    finally:
        await flaky.inner.close()
    assert [o.status for o in seen] == ["retrying", "retrying", "enriched"]
    assert entry.body["memory_id"] == memory_id
    assert harness.fake.count == 1  # the questions were kept for the retries


async def test_restart_resumes_from_the_durable_consumer_without_re_enriching(harness: Harness) -> None:
    first = await harness.save("Lunch is at noon on Thursdays")
    async with harness.enricher() as outcomes:
        assert (await next_outcome(outcomes)).memory_id == first
    second = await harness.save("Backups run at 02:00 UTC")  # saved while no enricher runs
    async with harness.enricher() as outcomes:
        outcome = await next_outcome(outcomes)
        queue = await harness.log.work_queue(DURABLE_NAME, SUBJECTS, ack_wait=30)
        info = await queue.info()
        await queue.close()
    assert (outcome.memory_id, outcome.status, outcome.attempt) == (second, "enriched", 1)
    assert (info.num_pending, info.num_ack_pending) == (0, 0)
    assert harness.fake.count == 2
    assert [(await harness.next_enriched()).body["memory_id"] for _ in range(2)] == [first, second]


async def test_stop_hands_work_in_flight_back_for_the_next_run(harness: Harness) -> None:
    harness.fake.mode = "hang"
    memory_id = await harness.save("The coffee machine is descaled monthly")
    async with harness.enricher():
        assert await asyncio.to_thread(harness.fake.wait_for_requests, 1, WAIT)
        started = time.monotonic()
    assert time.monotonic() - started < 5  # stop() does not wait for the hanging LLM
    harness.fake.mode = "questions"
    async with harness.enricher() as outcomes:
        outcome = await next_outcome(outcomes)
    assert (outcome.memory_id, outcome.status, outcome.attempt) == (memory_id, "enriched", 2)


async def test_a_hanging_llm_never_delays_saves(harness: Harness) -> None:
    harness.fake.mode = "hang"
    async with harness.enricher():
        await harness.save("First memory while the LLM hangs")
        assert await asyncio.to_thread(harness.fake.wait_for_requests, 1, WAIT)
        await harness.save("Second memory while the LLM hangs")
        assert harness.last_save_seconds < 2


async def test_service_starts_enrichment_only_with_an_llm_and_an_ingest_address(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="engram.services.consolidation.server")
    resources = Resources(harness.settings)
    try:
        no_llm = ConsolidationService(
            harness.settings.replace(llm_url=None), resources, ingest_addr=harness.ingest_addr
        )
        await no_llm.start()
        no_ingest = ConsolidationService(harness.settings, resources)
        await no_ingest.start()
        service = ConsolidationService(harness.settings, resources, ingest_addr=harness.ingest_addr)
        await service.start()
        memory_id = await harness.save("The service wiring enriches this memory")
        entry = await harness.next_enriched()
        running = service.enrichment_running
        for started in (service, no_ingest, no_llm):
            await started.stop()
    finally:
        await resources.close()
    assert entry.body["memory_id"] == memory_id and running
    messages = [
        r.getMessage()
        for r in caplog.records
        if r.name == "engram.services.consolidation.server" and r.getMessage().startswith("enrichment")
    ]
    assert messages[0].startswith("enrichment off: no LLM configured")
    assert messages[1].startswith("enrichment off: no ingest address")
    assert messages[2].startswith(f"enrichment on: questions by {MODEL} at {harness.fake.url}")
    assert API_KEY not in caplog.text


@dataclass
class FlakyIngest:
    """The real ingest client, failing the first `failures` calls as an unreachable ingest would."""

    inner: IngestClient
    failures: int

    async def enrich(self, caller: Caller, memory_id: str, questions: list[str], *, model: str) -> int:
        if self.failures > 0:
            self.failures -= 1
            raise Unavailable("ingest is restarting")
        return await self.inner.enrich(caller, memory_id, questions, model=model)
