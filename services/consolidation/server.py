"""Builds the consolidation service (its jobs, the expiry schedule and the enrichment worker) and a standalone gRPC
server for it."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from engram.config import Settings
from engram.errors import EngramError, Unavailable
from engram.grpc.clients import IngestClient, SearchClient
from engram.log.events import CONSOLIDATION_COMPLETE, SCHEMA_VERSION
from engram.model import Caller, format_time
from engram.models.catalog import NLI
from engram.models.llm import ChatClient, redact_url
from engram.models.named import Hub, classifier_dir
from engram.models.nli import load_nli
from engram.process.periodic import Periodic
from engram.process.runtime import Resources, RunningServer, serve
from engram.results import Job
from engram.services.consolidation.checkpoint import Checkpoints
from engram.services.consolidation.enrichment import DURABLE_NAME, SUBJECTS, Enricher, EnrichOptions
from engram.services.consolidation.expiry import ExpiryJob
from engram.services.consolidation.isolated import ChildCompare
from engram.services.consolidation.jobs import (
    AGENT,
    SOURCE,
    JobRunning,
    Jobs,
    Work,
    system_caller,
)
from engram.services.consolidation.maintenance import DecayPolicy, Maintenance
from engram.services.consolidation.servicer import ConsolidationServicer
from engram.services.consolidation.team_summary import TeamSummarizer
from engram.v1 import consolidation_pb2_grpc

log = logging.getLogger(__name__)

DEFAULT_INGEST_TIMEOUT = 30.0
ACK_WAIT_MARGIN_SECONDS = 30.0


@dataclass
class Connections:
    """The clients the jobs and workers of this service talk through, opened together at start and closed together
    at stop: ingest (every write), search (every read) and the LLM, each None when not configured."""

    ingest: IngestClient | None = None
    search: SearchClient | None = None
    llm: ChatClient | None = None

    @classmethod
    def open(cls, settings: Settings, ingest_addr: str | None, search_addr: str | None) -> Connections:
        ingest = IngestClient(ingest_addr, timeout=DEFAULT_INGEST_TIMEOUT) if ingest_addr else None
        search = None
        if search_addr:
            # One channel when one process hosts both (the embedded node), as the gateway does.
            target = ingest.channel if ingest is not None and search_addr == ingest_addr else search_addr
            search = SearchClient(target, timeout=DEFAULT_INGEST_TIMEOUT)
        llm = None
        if settings.llm_url:
            llm = ChatClient(
                settings.llm_url, model=settings.llm_model, api_key=settings.llm_api_key,
                timeout=settings.llm_timeout_seconds,
            )  # fmt: skip
        return cls(ingest, search, llm)

    async def close(self) -> None:
        if self.llm is not None:
            await self.llm.aclose()
        if self.search is not None:
            await self.search.close()  # does not close a channel shared with ingest
        if self.ingest is not None:
            await self.ingest.close()


@dataclass
class ConsolidationService:
    """The consolidation gRPC service: on-demand jobs (team summaries, expiry) and background workers (scheduled
    expiry, enrichment).

    Set `ingest_addr` and `search_addr` before start(): jobs and workers write through ingest and read through
    search; in the embedded node they are only known once the shared gRPC server has bound its port.
    """

    settings: Settings
    resources: Resources
    ingest_addr: str | None = None
    search_addr: str | None = None
    name: str = "engram.v1.Consolidation"
    jobs: Jobs = field(default_factory=Jobs, init=False, repr=False)
    _connections: Connections = field(default_factory=Connections, init=False, repr=False)
    _expiry: ExpiryJob | None = field(default=None, init=False, repr=False)
    _enricher: Enricher | None = field(default=None, init=False, repr=False)
    maintenance: Maintenance | None = field(default=None, init=False, repr=False)
    _schedule: Periodic | None = field(default=None, init=False, repr=False)

    def register(self, server: grpc.aio.Server) -> None:
        consolidation_pb2_grpc.add_ConsolidationServicer_to_server(ConsolidationServicer(self.jobs, self), server)

    @property
    def enrichment_running(self) -> bool:
        return self._enricher is not None and self._enricher.running

    async def start(self) -> None:
        self._connections = Connections.open(self.settings, self.ingest_addr, self.search_addr)
        try:
            await self._share_jobs()
            self._start_jobs()
            await self._start_expiry()
            await self._start_enrichment()
            self._start_schedule()
        except BaseException:
            await self.stop()  # a service that failed to start is not stopped by its server
            raise

    async def stop(self) -> None:
        schedule, self._schedule = self._schedule, None
        if schedule is not None:
            await schedule.stop()
        await self.jobs.close()
        expiry, self._expiry = self._expiry, None
        if expiry is not None:
            await expiry.stop()
        enricher, self._enricher = self._enricher, None
        if enricher is not None:
            await enricher.stop()  # also closes its queue
        connections, self._connections = self._connections, Connections()
        await connections.close()

    async def _share_jobs(self) -> None:
        """With a log (NATS), jobs take leases in it: one run of a job at a time across every replica."""
        if not self.settings.nats_url:
            log.info("job leases off: without ENGRAM_NATS_URL a job is only exclusive within this process")
            return
        owner = f"{socket.gethostname()}:{os.getpid()}"
        self.jobs.share(await self.resources.leases(), owner, await self.resources.job_store())
        event_log = await self.resources.log()

        async def completed(job: Job) -> None:
            body = {
                "schema": SCHEMA_VERSION, "event": CONSOLIDATION_COMPLETE, "namespace": job.namespace,
                "agent": AGENT, "source": SOURCE, "time": format_time(job.finished_at), "job_id": job.id,
                "kind": job.kind, "state": job.state, "summary": job.summary, "result": job.result,
            }  # fmt: skip
            await event_log.append(job.namespace, CONSOLIDATION_COMPLETE, body, msg_id=f"{job.id}:complete")

        self.jobs.on_finish(completed)

    def _start_jobs(self) -> None:
        ingest, search = self._connections.ingest, self._connections.search
        self.jobs.on_finish(self._released)
        if ingest is None or search is None:
            log.info("jobs off: they need ENGRAM_INGEST_ADDR and ENGRAM_SEARCH_ADDR")
            for kind in JOBS:
                self.jobs.handle(kind, _unavailable)
            return
        self._expiry = ExpiryJob(search, ingest, interval=self.settings.expiry_interval_seconds)
        if self.jobs.leases is not None:
            self._expiry.share(self.jobs.leases, self.jobs.owner)
        summarizer = TeamSummarizer(
            search, ingest, max_content_bytes=self.settings.max_content_bytes, llm=self._connections.llm
        )
        policy = DecayPolicy(
            cold_after_days=self.settings.decay_cold_after_days,
            archive_after_days=self.settings.decay_archive_after_days,
            importances=_names(self.settings.decay_importances), keep_types=_names(self.settings.decay_keep_types),
        )  # fmt: skip
        nli_dir = named_nli(self.settings)
        # optional: confirms contradictions when one is installed
        nli = load_nli(self.settings.model_cache_dir, model_dir=nli_dir)
        if nli is not None:
            log.info("contradictions and merges are checked by the NLI model %s", nli.model_id)
        compare = None
        if self.settings.consolidation_child and self.ingest_addr and self.search_addr:
            compare = ChildCompare(self.ingest_addr, self.search_addr, self.settings.consolidation_max_proposals,
                                   self.settings.model_cache_dir, nli_dir)  # fmt: skip
        self.maintenance = Maintenance(
            search, ingest, llm=self._connections.llm, decay=policy, expiry=self._expiry, summarizer=summarizer,
            max_proposals=self.settings.consolidation_max_proposals, nli=nli, compare=compare,
            checkpoints=Checkpoints(self.jobs.store),
        )  # fmt: skip
        self.jobs.handle("team_summary", summarizer.job)
        self.jobs.handle("expire", self._expiry.on_demand)
        self.jobs.handle("dedupe", self.maintenance.dedupe)
        self.jobs.handle("contradictions", self.maintenance.contradictions)
        self.jobs.handle("decay", self.maintenance.decay)
        self.jobs.handle("enrich_backfill", self.maintenance.enrich_backfill)
        self.jobs.handle("all", self.maintenance.all)

    def _start_schedule(self) -> None:
        interval = self.settings.consolidation_interval_seconds
        if self.maintenance is None or interval <= 0:
            log.info("scheduled consolidation off (ENGRAM_CONSOLIDATION_INTERVAL_SECONDS=0 or no ingest/search)")
            return
        self._schedule = Periodic("consolidation", interval, self.run_scheduled)
        self._schedule.start()

    async def run_scheduled(self) -> int:
        """Runs `all` in every namespace with memories, skipping those another replica is running; returns how
        many ran here."""
        search = self._connections.search
        if search is None:
            return 0
        ran = 0
        for namespace in await search.namespaces(system_caller("")):
            try:
                job = await self.jobs.run(system_caller(namespace), "all", {})
            except JobRunning:
                continue  # another replica runs it
            except EngramError as e:  # one namespace that cannot run now never holds up the others
                log.warning("scheduled consolidation of %s did not start: %s", namespace, e)
                continue
            ran += 1
            log.info("scheduled consolidation of %s: %s (%s)", namespace, job.state, job.summary)
        return ran

    async def _released(self, job: Job) -> None:
        """A job over a namespace read all of it (50k memories: 450 MiB of Python objects at the peak, measured);
        freed at its end, that memory goes back to the system at once."""
        await self.resources.release_memory()

    async def _start_expiry(self) -> None:
        if self._expiry is not None and self.settings.expiry_interval_seconds > 0:
            await self._expiry.start()
        else:
            log.info(
                "scheduled expiry off: it needs ENGRAM_INGEST_ADDR, ENGRAM_SEARCH_ADDR and "
                "ENGRAM_EXPIRY_INTERVAL_SECONDS > 0"
            )

    async def _start_enrichment(self) -> None:
        if reason := self._enrichment_off_reason():
            log.info("enrichment off: %s", reason)
            return
        assert self._connections.llm is not None and self._connections.ingest is not None
        self._enricher = await open_enricher(self.settings, self.resources, self._connections)
        log.info("enrichment on: questions by %s at %s, stored through ingest at %s", self.settings.llm_model,
                 redact_url(self.settings.llm_url or ""), self.ingest_addr)  # fmt: skip

    def _enrichment_off_reason(self) -> str:
        if not self.settings.llm_url:
            return "no LLM configured (set ENGRAM_LLM_URL to an OpenAI-compatible endpoint to add questions)"
        if not self.ingest_addr:
            return "no ingest address (set ENGRAM_INGEST_ADDR)"
        return ""


JOBS = ("expire", "dedupe", "contradictions", "team_summary", "decay", "enrich_backfill", "all")


def _names(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _unavailable(caller: Caller, options: Mapping[str, str]) -> Work:
    raise Unavailable(
        "The consolidation service has no ingest or search address, which its jobs need: set ENGRAM_INGEST_ADDR "
        "and ENGRAM_SEARCH_ADDR."
    )


async def open_enricher(settings: Settings, resources: Resources, connections: Connections) -> Enricher:
    """Connects an enricher to its queue, the LLM and ingest, and starts it."""
    assert connections.llm is not None and connections.ingest is not None
    event_log = await resources.log()
    # An entry must not come back to another worker while its LLM and ingest calls may still be running.
    ack_wait = settings.llm_timeout_seconds + DEFAULT_INGEST_TIMEOUT + ACK_WAIT_MARGIN_SECONDS
    queue = await event_log.work_queue(DURABLE_NAME, SUBJECTS, ack_wait=ack_wait)
    options = EnrichOptions(
        retry_base_seconds=settings.enrich_retry_base_seconds, max_attempts=max(1, settings.enrich_max_attempts)
    )
    enricher = Enricher(queue, connections.llm, connections.ingest, options=options)
    await enricher.start()
    return enricher


async def build_service(settings: Settings, resources: Resources) -> ConsolidationService:
    """The service; the embedded node replaces its ingest and search addresses with its own bound address before
    start()."""
    return ConsolidationService(settings, resources, ingest_addr=settings.ingest_addr, search_addr=settings.search_addr)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)


def named_nli(settings: Settings) -> Path | None:
    """The NLI model ENGRAM_NLI_MODEL names (pulled once when it is one of the list), or None: the newest installed."""
    if not settings.nli_model:
        return None
    return classifier_dir(settings.nli_model, NLI, settings.model_cache_dir,
                          hub=Hub(settings.hf_endpoint, settings.hf_token))  # fmt: skip
