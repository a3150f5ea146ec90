"""Builds the consolidation service (with its enrichment worker) and a standalone gRPC server for it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import grpc

from engram.clients import IngestClient, SearchClient
from engram.config import Settings
from engram.llm import ChatClient, redact_url
from engram.runtime import Resources, RunningServer, serve
from engram.services.consolidation.enrichment import DURABLE_NAME, SUBJECTS, Enricher, EnrichOptions
from engram.services.consolidation.expiry import ExpiryJob
from engram.services.consolidation.servicer import ConsolidationServicer
from engram.v1 import consolidation_pb2_grpc

log = logging.getLogger(__name__)

DEFAULT_INGEST_TIMEOUT = 30.0
ACK_WAIT_MARGIN_SECONDS = 30.0


@dataclass
class Enrichment:
    """The running parts of enrichment, closed together."""

    enricher: Enricher  # owns its queue
    llm: ChatClient
    ingest: IngestClient

    async def close(self) -> None:
        await self.enricher.stop()  # also closes the queue
        await self.llm.aclose()
        await self.ingest.close()


@dataclass
class Expiry:
    job: ExpiryJob
    search: SearchClient
    ingest: IngestClient

    async def close(self) -> None:
        await self.job.stop()
        await self.search.close()
        await self.ingest.close()


@dataclass
class ConsolidationService:
    """The consolidation gRPC service and its background workers.

    Set `ingest_addr` and `search_addr` before start(): enrichment and expiry write through ingest and expiry
    finds due memories through search; in the embedded node they are only known once the shared gRPC server has
    bound its port.
    """

    settings: Settings
    resources: Resources
    ingest_addr: str | None = None
    search_addr: str | None = None
    name: str = "engram.v1.Consolidation"
    _enrichment: Enrichment | None = field(default=None, init=False, repr=False)
    _expiry: Expiry | None = field(default=None, init=False, repr=False)

    def register(self, server: grpc.aio.Server) -> None:
        consolidation_pb2_grpc.add_ConsolidationServicer_to_server(ConsolidationServicer(), server)

    @property
    def enrichment_running(self) -> bool:
        return self._enrichment is not None and self._enrichment.enricher.running

    async def start(self) -> None:
        if self.ingest_addr and self.search_addr and self.settings.expiry_interval_seconds > 0:
            search = SearchClient(self.search_addr, timeout=DEFAULT_INGEST_TIMEOUT)
            ingest = IngestClient(self.ingest_addr, timeout=DEFAULT_INGEST_TIMEOUT)
            job = ExpiryJob(search, ingest, interval=self.settings.expiry_interval_seconds)
            await job.start()
            self._expiry = Expiry(job, search, ingest)
        else:
            log.info(
                "expiry off: it needs ENGRAM_INGEST_ADDR, ENGRAM_SEARCH_ADDR and ENGRAM_EXPIRY_INTERVAL_SECONDS > 0"
            )
        if reason := self._enrichment_off_reason():
            log.info("enrichment off: %s", reason)
            return
        assert self.settings.llm_url is not None and self.ingest_addr is not None
        self._enrichment = await open_enrichment(self.settings, self.resources, self.ingest_addr)
        log.info("enrichment on: questions by %s at %s, stored through ingest at %s", self.settings.llm_model,
                 redact_url(self.settings.llm_url), self.ingest_addr)  # fmt: skip

    async def stop(self) -> None:
        expiry, self._expiry = self._expiry, None
        if expiry is not None:
            await expiry.close()
        enrichment, self._enrichment = self._enrichment, None
        if enrichment is not None:
            await enrichment.close()

    def _enrichment_off_reason(self) -> str:
        if not self.settings.llm_url:
            return "no LLM configured (set ENGRAM_LLM_URL to an OpenAI-compatible endpoint to add questions)"
        if not self.ingest_addr:
            return "no ingest address (set ENGRAM_INGEST_ADDR)"
        return ""


async def open_enrichment(settings: Settings, resources: Resources, ingest_addr: str) -> Enrichment:
    """Connects the enricher to its queue, the LLM and ingest, and starts it."""
    assert settings.llm_url is not None
    event_log = await resources.log()
    # An entry must not come back to another worker while its LLM and ingest calls may still be running.
    ack_wait = settings.llm_timeout_seconds + DEFAULT_INGEST_TIMEOUT + ACK_WAIT_MARGIN_SECONDS
    queue = await event_log.work_queue(DURABLE_NAME, SUBJECTS, ack_wait=ack_wait)
    llm = ChatClient(
        settings.llm_url, model=settings.llm_model, api_key=settings.llm_api_key, timeout=settings.llm_timeout_seconds
    )
    ingest = IngestClient(ingest_addr, timeout=DEFAULT_INGEST_TIMEOUT)
    options = EnrichOptions(
        retry_base_seconds=settings.enrich_retry_base_seconds, max_attempts=max(1, settings.enrich_max_attempts)
    )
    enricher = Enricher(queue, llm, ingest, options=options)
    await enricher.start()
    return Enrichment(enricher, llm, ingest)


async def build_service(settings: Settings, resources: Resources) -> ConsolidationService:
    """The service; the embedded node replaces `ingest_addr` with its own bound address before start()."""
    return ConsolidationService(settings, resources, ingest_addr=settings.ingest_addr, search_addr=settings.search_addr)


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    service = await build_service(settings, resources)
    service.ingest_addr = settings.ingest_addr
    return await serve([service], settings.grpc_listen, resources=resources)
