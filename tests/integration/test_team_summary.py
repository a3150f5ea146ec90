"""Team summaries (consolidate_team) on real embedded nodes through the kernel's gRPC clients: the structured summary
grouped by category, supersession on the next run, the LLM's briefing (a local fake LLM, the only fake), the job
record (GetJob), and the errors that say what to do next."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engram import errors
from engram.grpc.clients import ConsolidationClient, IngestClient, SearchClient
from engram.model import Caller, Memory, MemoryInput, SearchFilter, format_time
from engram.results import Job, SaveResult
from engram.services.consolidation.jobs import JobRunning
from engram.services.consolidation.team_summary import CONDENSE_PROMPT, TeamSummarizer
from tests.conftest import NodeHandle, start_node
from tests.helpers.fake_llm import FakeLlm, RecordedRequest, completion, fake_llm_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 30.0
BRIEFING = "- The team stores refresh tokens hashed and chose PASETO over JWT.\n- SSO tests wait on a rate limit."
FINDING = "Refresh tokens are stored hashed with Argon2 in the sessions table"
DECISION = "We use PASETO v4 tokens instead of JWT to avoid algorithm confusion attacks"
HYPOTHESIS = "The login latency spikes come from a cold Redis connection pool"
BLOCKER = "SSO integration tests are blocked by the identity provider's rate limit"
ACTION_SUMMARY = "Rotate the signing keys before the March release"
ACTION = f"{ACTION_SUMMARY}\nSteps: generate, publish the JWKS, wait a day, retire the old key."
OTHER = "The auth service code lives in the services/auth folder of the monorepo"
SECRET = "The staging admin password hint is the name of the first office dog"
ELSEWHERE = "Billing exports run nightly at 02:00 UTC"
SECTIONS = ["Findings", "Decisions", "Hypotheses", "Blockers", "Action items", "Other"]


@dataclass
class SummaryLlm(FakeLlm):
    """The fake LLM; briefing requests (the team summary's) get BRIEFING, or ``briefing_status`` when it is not 200,
    once ``open`` is set. Other requests (enrichment's questions) are answered as FakeLlm answers them."""

    briefing_status: int = 200
    briefings: list[RecordedRequest] = field(default_factory=list)
    open: threading.Event = field(default_factory=threading.Event)
    _seen: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def __post_init__(self) -> None:
        self.open.set()

    def respond(self, request: RecordedRequest) -> tuple[int, bytes]:
        system = [m.get("content") for m in request.body.get("messages", []) if m.get("role") == "system"]
        if system != [CONDENSE_PROMPT]:
            return super().respond(request)
        with self._seen:
            self.briefings.append(request)
            self._seen.notify_all()
        self.open.wait(WAIT)
        if self.briefing_status != 200:
            return self.briefing_status, b'{"error": {"message": "injected failure"}}'
        return 200, json.dumps(completion(BRIEFING, model=request.body.get("model", ""))).encode()

    def wait_for_briefings(self, count: int, timeout: float) -> bool:
        with self._seen:
            return self._seen.wait_for(lambda: len(self.briefings) >= count, timeout)


@dataclass
class Kit:
    """The kernel's clients of one node."""

    ingest: IngestClient
    search: SearchClient
    jobs: ConsolidationClient

    async def close(self) -> None:
        for client in (self.jobs, self.search, self.ingest):
            await client.close()


@pytest.fixture(scope="module")
def plain_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A node without an LLM, its expiry schedule off (jobs must work whatever the schedule)."""
    handle = start_node(tmp_path_factory.mktemp("summary"), model_cache, ENGRAM_EXPIRY_INTERVAL_SECONDS="0")
    yield handle
    assert handle.stop() == 0


@pytest.fixture(scope="module")
def llm() -> Iterator[SummaryLlm]:
    fake = SummaryLlm()
    with fake_llm_server(fake):
        yield fake
        fake.open.set()


@pytest.fixture(scope="module")
def llm_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path, llm: SummaryLlm) -> Iterator[NodeHandle]:
    handle = start_node(
        tmp_path_factory.mktemp("summary-llm"), model_cache, ENGRAM_LLM_URL=llm.url, ENGRAM_LLM_MODEL="fake-model",
        ENGRAM_EXPIRY_INTERVAL_SECONDS="0",
    )  # fmt: skip
    yield handle
    assert handle.stop() == 0


async def open_kit(node: NodeHandle) -> Kit:
    return Kit(IngestClient(node.grpc_address), SearchClient(node.grpc_address), ConsolidationClient(node.grpc_address))


@pytest.fixture
async def plain(plain_node: NodeHandle) -> AsyncIterator[Kit]:
    kit = await open_kit(plain_node)
    yield kit
    await kit.close()


@pytest.fixture
async def with_llm(llm_node: NodeHandle, llm: SummaryLlm) -> AsyncIterator[Kit]:
    llm.briefing_status = 200
    kit = await open_kit(llm_node)
    yield kit
    await kit.close()
    llm.briefing_status = 200


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def member(namespace: str, agent: str, team: str = "", *, scopes: tuple[str, ...] = ("read", "write")) -> Caller:
    return Caller(namespace, agent, source=agent, scopes=frozenset(scopes), device="laptop", team=team)


async def seed(kit: Kit, namespace: str, team: str) -> dict[str, SaveResult]:
    """One memory of every category from two agents of ``team``, a secret one, and memories of no or another team."""
    alice, bob = member(namespace, "claude-code", team), member(namespace, "gemini-cli", team)
    saved = {
        "finding": await kit.ingest.save(alice, MemoryInput(content=FINDING, memory_type="finding", team=team)),
        "decision": await kit.ingest.save(alice, MemoryInput(content=DECISION, memory_type="decision", team=team)),
        "hypothesis": await kit.ingest.save(bob, MemoryInput(content=HYPOTHESIS, memory_type="hypothesis", team=team)),
        "blocker": await kit.ingest.save(bob, MemoryInput(content=BLOCKER, memory_type="blocker", team=team)),
        "action-item": await kit.ingest.save(
            alice, MemoryInput(content=ACTION, summary=ACTION_SUMMARY, memory_type="action-item", team=team)
        ),
        "other": await kit.ingest.save(bob, MemoryInput(content=f"\n  {OTHER}\nmore lines", team=team)),
        "secret": await kit.ingest.save(
            alice, MemoryInput(content=SECRET, memory_type="finding", team=team, sensitivity="secret")
        ),
    }
    await kit.ingest.save(member(namespace, "cursor", "billing"), MemoryInput(content=ELSEWHERE, team="billing"))
    await kit.ingest.save(member(namespace, "cursor"), MemoryInput(content="Lunch is at noon on Thursdays"))
    return saved


async def summary_of(kit: Kit, caller: Caller, job: Job) -> Memory:
    """The memory a job wrote, read once the index has its writes."""
    assert job.state == "succeeded", job.summary
    return await kit.search.get(caller, job.result["memory_id"], min_seq=job.result["seq"], with_history=True)


def sections(content: str) -> dict[str, list[str]]:
    """The ## sections of a summary (their titles without the count) and their lines."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in content.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].rsplit(" (", 1)[0], [])
        elif current is not None and line:
            current.append(line)
    return found


def day_of(epoch: float | None) -> str:
    return str(format_time(epoch))[:10]


# --- without an LLM --------------------------------------------------------------------------------------------


async def test_the_summary_groups_the_teams_memories_by_category_in_order(plain: Kit) -> None:
    ns, team = unique("ns"), unique("auth")
    saved = await seed(plain, ns, team)
    alice = member(ns, "claude-code", team)
    job = await plain.jobs.run_job(alice, "team_summary", {"team": team})
    memory = await summary_of(plain, alice, job)

    assert (job.kind, job.state, job.namespace) == ("team_summary", "succeeded", ns)
    assert job.started_at is not None and job.finished_at is not None and job.started_at <= job.finished_at
    assert job.result == {
        "team": team, "memory_id": memory.id, "version": 1, "seq": job.result["seq"], "superseded_id": "",
        "memories": 6, "truncated": False, "left_out": 0, "condensed": False,
        "by_category": {"finding": 1, "decision": 1, "hypothesis": 1, "blocker": 1, "action-item": 1, "other": 1},
    }  # fmt: skip
    assert job.summary == f"Team {team}: summarised 6 memories in {memory.id}."
    assert (memory.memory_type, memory.team, memory.importance) == ("team-summary", team, "normal")
    assert memory.tags[:2] == ["team-summary", f"team:{team}"]
    assert memory.summary == f"Team {team}: summary of 6 memories"
    assert memory.owner_agent == "engram-consolidation" and memory.source == "consolidation"

    lines = memory.content.splitlines()
    assert lines[0] == f"# Team {team}: summary of 6 memories ({day_of(job.started_at)})"
    assert [line for line in lines if line.startswith("## ")] == [f"## {title} (1)" for title in SECTIONS]
    grouped = sections(memory.content)
    categories = ["finding", "decision", "hypothesis", "blocker", "action-item", "other"]
    headlines = {"action-item": ACTION_SUMMARY, "other": OTHER}  # the summary, else the content's first line
    for category, title in zip(categories, SECTIONS, strict=True):
        mine = saved[category].memory
        headline = headlines.get(category, mine.content)
        assert grouped[title] == [f"- {headline} ({mine.owner_agent}, {day_of(mine.created_at)}, id {mine.id})"]
    assert ELSEWHERE not in memory.content and "Lunch" not in memory.content, "only the team's memories"
    assert SECRET not in memory.content and "1 secret memory is left out" in memory.content


async def test_search_memory_finds_the_summary_by_a_phrase_of_a_finding(plain: Kit) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(plain, ns, team)
    alice = member(ns, "claude-code", team)
    job = await plain.jobs.run_job(alice, "team_summary", {"team": team})
    found = await plain.search.search(
        alice, "stored hashed with Argon2 in the sessions table", limit=5, flt=SearchFilter(), min_seq=job.result["seq"]
    )
    assert job.result["memory_id"] in [hit.memory.id for hit in found.hits]


async def test_a_second_run_by_another_member_supersedes_the_first(plain: Kit) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(plain, ns, team)
    alice, bob = member(ns, "claude-code", team), member(ns, "gemini-cli", team)
    first = await plain.jobs.run_job(alice, "team_summary", {"team": team})
    second = await plain.jobs.run_job(bob, "team_summary")  # no option: the caller's own team

    assert second.state == "succeeded" and second.result["team"] == team
    assert second.result["superseded_id"] == first.result["memory_id"]
    assert second.result["memories"] == 6, "the first summary is not summarised"
    new = await summary_of(plain, bob, second)
    old = await plain.search.get(bob, first.result["memory_id"], with_history=True)
    assert (old.status, old.superseded_by) == ("superseded", new.id)
    assert [(v.version, v.status) for v in old.history] == [(1, "active")]
    assert first.result["memory_id"] not in new.content
    active = await plain.search.list(bob, limit=10, flt=SearchFilter(team=team, memory_types=["team-summary"]))
    assert [m.id for m in active.memories] == [new.id], "one active summary per team"
    every = SearchFilter(team=team, memory_types=["team-summary"], statuses=["active", "superseded"])
    assert len((await plain.search.list(bob, limit=10, flt=every)).memories) == 2


async def test_a_team_with_the_longest_name_allowed_gets_its_summary_and_tag(plain: Kit) -> None:
    ns, team = unique("ns"), unique("t").ljust(64, "x")
    alice = member(ns, "claude-code", team)
    await plain.ingest.save(alice, MemoryInput(content=FINDING, memory_type="finding"))  # in the caller's team
    memory = await summary_of(plain, alice, await plain.jobs.run_job(alice, "team_summary"))
    assert memory.tags == ["team-summary", f"team:{team}"] and memory.team == team


async def test_a_team_with_no_memories_gets_a_failed_job_saying_why(plain: Kit) -> None:
    ns, team = unique("ns"), unique("empty")
    job = await plain.jobs.run_job(member(ns, "claude-code"), "team_summary", {"team": team})
    assert job.state == "failed" and job.finished_at is not None
    assert job.summary.startswith(f"Team '{team}' has no active memories to summarise.")
    assert job.result == {"team": team, "error": job.summary, "code": "failed_precondition"}


async def test_without_a_team_the_job_is_refused_saying_how_to_name_one(plain: Kit) -> None:
    loner = member(unique("ns"), "claude-code")
    with pytest.raises(errors.InvalidArgument) as refused:
        await plain.jobs.run_job(loner, "team_summary")
    assert refused.value.field == "team" and "name a team" in refused.value.problem
    with pytest.raises(errors.InvalidArgument, match="is not a team name"):
        await plain.jobs.run_job(loner, "team_summary", {"team": "two words"})
    with pytest.raises(errors.InvalidArgument, match="takes only 'team'"):
        await plain.jobs.run_job(loner, "team_summary", {"team": "auth", "teem": "auth"})


async def test_a_reader_may_not_run_a_job(plain: Kit) -> None:
    reader = member(unique("ns"), "claude-code", "auth", scopes=("read",))
    with pytest.raises(errors.PermissionDenied, match="needs the write scope"):
        await plain.jobs.run_job(reader, "team_summary")


async def test_get_job_answers_a_job_in_its_namespace_only(plain: Kit) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(plain, ns, team)
    job = await plain.jobs.run_job(member(ns, "claude-code", team), "team_summary")
    assert await plain.jobs.get_job(member(ns, "gemini-cli"), job.id) == job
    with pytest.raises(errors.NotFound, match="No job with id"):
        await plain.jobs.get_job(member(unique("ns"), "claude-code", team), job.id)
    with pytest.raises(errors.NotFound):
        await plain.jobs.get_job(member(ns, "gemini-cli"), str(uuid.uuid4()))


async def test_expiry_runs_on_demand_with_its_schedule_off_and_counts_the_callers_namespace(plain: Kit) -> None:
    mine, theirs = member(unique("ns"), "claude-code"), member(unique("ns"), "gemini-cli")
    past = time.time() - 60
    due = await plain.ingest.save(mine, MemoryInput(content="The office is closed today", expires_at=past))
    other = await plain.ingest.save(theirs, MemoryInput(content="The canteen is closed today", expires_at=past))
    await plain.search.get(mine, due.memory.id, min_seq=max(due.seq, other.seq))
    job = await plain.jobs.run_job(mine, "expire")
    assert (job.kind, job.state, job.result) == ("expire", "succeeded", {"expired": 1})
    written = (await plain.search.stats()).log_last_seq
    assert (await plain.search.get(mine, due.memory.id, min_seq=written)).status == "expired"
    assert (await plain.search.get(theirs, other.memory.id)).status == "expired", "the pass covers every namespace"


async def test_the_newest_memories_are_kept_when_the_team_has_more_than_fit(plain: Kit) -> None:
    ns, team = unique("ns"), unique("big")
    alice = member(ns, "claude-code", team)
    drafts = [MemoryInput(content=f"Finding {n}: {'detail ' * 12}", memory_type="finding", team=team) for n in range(8)]
    saved = [await plain.ingest.save(alice, draft) for draft in drafts]
    budget = 900
    summarizer = TeamSummarizer(plain.search, plain.ingest, max_content_bytes=budget, max_memories=6)
    summary = await summarizer.summarize(ns, team)

    assert (summary.memories, summary.truncated) == (6, True)
    assert summary.left_out > 0 and len(summary.memory.content.encode()) <= budget
    content = summary.memory.content
    assert "Only the 6 newest memories of the team are included" in content
    assert f"- …and {summary.left_out} more" in content
    kept = [s.memory.id for s in saved if s.memory.id in content]
    assert kept == [s.memory.id for s in saved[-len(kept) :]], "the newest bullets are kept"
    assert saved[0].memory.id not in content and saved[1].memory.id not in content


# --- with an LLM -----------------------------------------------------------------------------------------------


async def test_with_an_llm_the_briefing_comes_before_the_structured_summary(with_llm: Kit, llm: SummaryLlm) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(with_llm, ns, team)
    alice = member(ns, "claude-code", team)
    asked = len(llm.briefings)
    job = await with_llm.jobs.run_job(alice, "team_summary", {"team": team})
    memory = await summary_of(with_llm, alice, job)

    assert job.result["condensed"] is True and "condense_error" not in job.result
    assert memory.content.startswith(f"## In short\n{BRIEFING}\n\n# Team {team}: summary of 6 memories (")
    assert [line for line in memory.content.splitlines() if line.startswith("## ")][1:] == [
        f"## {title} (1)" for title in SECTIONS
    ]
    request = llm.briefings[asked]
    assert FINDING in request.user_text and BLOCKER in request.user_text
    assert SECRET not in request.user_text, "a secret memory never reaches the LLM"


async def test_when_the_llm_fails_the_structured_summary_is_still_written(with_llm: Kit, llm: SummaryLlm) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(with_llm, ns, team)
    alice = member(ns, "claude-code", team)
    llm.briefing_status = 500
    job = await with_llm.jobs.run_job(alice, "team_summary", {"team": team})
    memory = await summary_of(with_llm, alice, job)

    assert job.result["condensed"] is False and "HTTP 500" in job.result["condense_error"]
    assert job.summary.endswith(f"; not condensed: {job.result['condense_error']}")
    assert memory.content.startswith(f"# Team {team}: summary of 6 memories (") and FINDING in memory.content
    assert "## In short" not in memory.content


async def test_a_second_request_while_a_run_is_under_way_is_refused_and_the_run_finishes_without_its_caller(
    with_llm: Kit, llm: SummaryLlm
) -> None:
    ns, team = unique("ns"), unique("auth")
    await seed(with_llm, ns, team)
    alice, bob = member(ns, "claude-code", team), member(ns, "gemini-cli", team)
    asked = len(llm.briefings)
    llm.open.clear()  # the LLM holds the first run's briefing
    try:
        first = asyncio.create_task(with_llm.jobs.run_job(alice, "team_summary"))
        assert await asyncio.to_thread(llm.wait_for_briefings, asked + 1, WAIT)
        with pytest.raises(errors.EngramError) as refused:
            await with_llm.jobs.run_job(bob, "team_summary")
        assert isinstance(refused.value, JobRunning) and refused.value.code == "failed_precondition"
        assert f"for team '{team}' is already running" in str(refused.value)
        running = await with_llm.jobs.get_job(bob, refused.value.job_id)
        assert (running.state, running.finished_at) == ("running", None)
        first.cancel()  # the caller goes away; the job does not
        with pytest.raises(asyncio.CancelledError):
            await first
    finally:
        llm.open.set()
    async with asyncio.timeout(WAIT):
        while (done := await with_llm.jobs.get_job(bob, running.id)).state == "running":
            await asyncio.sleep(0.05)
    assert done.state == "succeeded" and done.result["condensed"] is True
