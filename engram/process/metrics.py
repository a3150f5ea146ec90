"""Prometheus metrics: every metric Engram exports, defined once, and the plain HTTP endpoint that serves them.

Counters and histograms are recorded where things happen (an RPC ends, a job ends, a change is pushed). Gauges of
state that is already kept elsewhere (the index's applied sequence, the SSE queues, the reads waiting to be flushed)
are sampled when Prometheus scrapes: their owners ``watch`` themselves and answer ``sample()``. One process has one
registry, so the embedded node (every service in one process) exports all of them together.

Labels are bounded sets (services, methods, tools, route templates, event names, job kinds, outcomes): never a
memory id, an agent or a namespace.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from engram.config import SettingsError
from engram.process.ports import PortInUse

log = logging.getLogger(__name__)

disable_created_metrics()  # a `_created` series beside every counter doubles what is stored and says little

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds: a cached search takes milliseconds, a save with embedding tens, an import or a job minutes.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
JOB_BUCKETS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

# -- requests ------------------------------------------------------------------------------------------------

GRPC_REQUESTS = Counter(
    "engram_grpc_requests", "gRPC calls served, by service, method and status code (OK, INVALID_ARGUMENT, ...).",
    ["service", "method", "code"],
)  # fmt: skip
GRPC_DURATION = Histogram(
    "engram_grpc_request_duration_seconds", "How long gRPC calls took (a streaming call: until its stream ended).",
    ["service", "method"], buckets=LATENCY_BUCKETS,
)  # fmt: skip
MCP_TOOL_CALLS = Counter(
    "engram_mcp_tool_calls", "MCP tool calls, by tool and outcome (ok, or the error's kind: invalid_argument, ...).",
    ["tool", "outcome"],
)  # fmt: skip
MCP_TOOL_DURATION = Histogram(
    "engram_mcp_tool_duration_seconds", "How long MCP tool calls took.", ["tool"], buckets=LATENCY_BUCKETS
)
HTTP_REQUESTS = Counter(
    "engram_http_requests", "HTTP requests the gateway answered, by route template, method and status.",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_DURATION = Histogram(
    "engram_http_request_duration_seconds",
    "How long the gateway's HTTP requests took (an event stream: as long as it stayed open).",
    ["route", "method"], buckets=LATENCY_BUCKETS,
)  # fmt: skip

# -- writes, jobs, sync, enrichment, live events -----------------------------------------------------------

LOG_APPENDS = Counter(
    "engram_log_appends", "Entries ingest appended to the log, by event (a retried write already stored: not counted).",
    ["event"],
)  # fmt: skip
JOBS = Counter(
    "engram_jobs", "Consolidation jobs, by kind and outcome (succeeded, failed, cancelled, already_running).",
    ["kind", "outcome"],
)  # fmt: skip
JOB_DURATION = Histogram(
    "engram_job_duration_seconds", "How long consolidation jobs ran.", ["kind"], buckets=JOB_BUCKETS
)
JOBS_RUNNING = Gauge("engram_jobs_running", "Consolidation jobs running in this process now.")
SYNC_PUSHED = Counter(
    "engram_sync_pushed_changes", "Changes edge devices pushed, by outcome (accepted, conflict, duplicate, rejected).",
    ["outcome"],
)  # fmt: skip
SYNC_PULLED = Counter("engram_sync_pulled_changes", "Changes edge devices pulled.")
ENRICHMENTS = Counter(
    "engram_enrichments", "Log entries the enrichment worker handled, by outcome (enriched, skipped, retrying, "
    "gave_up, error).", ["outcome"],
)  # fmt: skip
SSE_DROPPED = Counter(
    "engram_sse_dropped_events", "Events dropped from the queue of an SSE client that read too slowly (it got a gap)."
)

# -- sampled when scraped ------------------------------------------------------------------------------------

INDEX_APPLIED_SEQ = "engram_index_applied_seq"
LOG_LAST_SEQ = "engram_log_last_seq"
INDEX_LAG = "engram_index_lag"
INDEX_QUARANTINED = "engram_index_quarantined_entries"
SSE_CLIENTS = "engram_sse_clients"
SSE_QUEUED_EVENTS = "engram_sse_queued_events"
SSE_QUEUE_DEPTH_MAX = "engram_sse_queue_depth_max"
ACCESS_PENDING_READS = "engram_access_pending_reads"
ENRICHMENT_IN_FLIGHT = "engram_enrichment_in_flight"


@dataclass(frozen=True, slots=True)
class SampledGauge:
    """A gauge read from its owners at scrape time; ``combine`` joins the values of several owners in one process
    (one per process in production; tests may run more)."""

    help: str
    combine: Callable[[Iterable[float]], float]


SAMPLED: dict[str, SampledGauge] = {
    INDEX_APPLIED_SEQ: SampledGauge("The last log sequence the search index has applied.", max),
    LOG_LAST_SEQ: SampledGauge("The newest log sequence the search service has seen (its follow of the log).", max),
    INDEX_LAG: SampledGauge("Log entries not yet applied to the search index (log last sequence - applied).", max),
    INDEX_QUARANTINED: SampledGauge(
        "Log entries the search index could not apply and set aside (engram index quarantine list).", max
    ),
    SSE_CLIENTS: SampledGauge("Open SSE event streams.", sum),
    SSE_QUEUED_EVENTS: SampledGauge("Events waiting in the SSE clients' queues, over every client.", sum),
    SSE_QUEUE_DEPTH_MAX: SampledGauge("Events waiting in the fullest SSE client queue.", max),
    ACCESS_PENDING_READS: SampledGauge("Memory reads counted but not yet flushed to the log (access_count).", sum),
    ENRICHMENT_IN_FLIGHT: SampledGauge("Memories being enriched (LLM questions) right now.", sum),
}


class Sampled(Protocol):
    """Something whose state is exported as gauges."""

    def sample(self) -> Mapping[str, float]:
        """Current values by metric name (names from SAMPLED). Called from the scrape thread: plain reads only,
        never the event loop's objects being changed under it."""
        ...


class _Sampler(Collector):
    """Collects the SAMPLED gauges from the objects that watch themselves."""

    def __init__(self) -> None:
        self._sources: weakref.WeakSet[Sampled] = weakref.WeakSet()  # a forgotten owner drops out by itself
        self._lock = threading.Lock()

    def add(self, source: Sampled) -> None:
        with self._lock:
            self._sources.add(source)

    def discard(self, source: Sampled) -> None:
        with self._lock:
            self._sources.discard(source)

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [GaugeMetricFamily(name, gauge.help) for name, gauge in SAMPLED.items()]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        with self._lock:
            sources = list(self._sources)
        values: dict[str, list[float]] = {}
        for source in sources:
            try:
                sample = source.sample()
            except Exception:  # one broken owner must not cost the whole scrape
                log.exception("sampling %s for metrics failed", type(source).__name__)
                continue
            for name, value in sample.items():
                values.setdefault(name, []).append(float(value))
        # Only what some owner reported: a gateway-only process has no index, so no index gauges.
        return [
            GaugeMetricFamily(name, SAMPLED[name].help, value=SAMPLED[name].combine(values[name]))
            for name in SAMPLED
            if values.get(name)
        ]


_SAMPLER = _Sampler()
REGISTRY.register(_SAMPLER)


def watch(source: Sampled) -> None:
    """Exports ``source.sample()`` from now on, until ``unwatch`` (or until the source is garbage)."""
    _SAMPLER.add(source)


def unwatch(source: Sampled) -> None:
    _SAMPLER.discard(source)


def exposition() -> bytes:
    """Every metric of this process in the Prometheus text format. Blocking (samples are read): call it from a
    thread, not the event loop."""
    return generate_latest(REGISTRY)


# -- the endpoint ------------------------------------------------------------------------------------------------


class MetricsPortInUse(PortInUse):
    """The port of ENGRAM_METRICS_LISTEN is taken."""

    def __init__(self, host: str, port: int) -> None:
        OSError.__init__(
            self,
            f"port {port} for metrics is in use (another engram?); set ENGRAM_METRICS_LISTEN to another address "
            f"(e.g. {host or '0.0.0.0'}:{port + 1}) or stop the other process",
        )
        self.port = port


@dataclass
class MetricsServer:
    """The running endpoint; ``url`` is where GET /metrics answers."""

    url: str
    _server: WSGIServer
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def parse_listen(listen: str) -> tuple[str, int]:
    """host:port (``[::1]:9100`` for IPv6; ``:9100`` for every address) as (host, port)."""
    host, sep, port = listen.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise SettingsError(f"ENGRAM_METRICS_LISTEN must be host:port (e.g. 0.0.0.0:9090), got {listen!r}")
    return host.strip("[]"), int(port)


def start_server(listen: str) -> MetricsServer:
    """Serves GET /metrics on ``listen`` (host:port; port 0 picks one) from a daemon thread."""
    host, port = parse_listen(listen)
    bind = host or "0.0.0.0"
    try:
        server, thread = start_http_server(port, bind, REGISTRY)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise MetricsPortInUse(host, port) from e
        raise SettingsError(f"ENGRAM_METRICS_LISTEN={listen}: cannot listen there ({e.strerror or e})") from e
    bound = server.server_address[1]
    shown = f"[{bind}]" if ":" in bind else bind
    metrics = MetricsServer(f"http://{shown}:{bound}/metrics", server, thread)
    log.info("Prometheus metrics at %s", metrics.url)
    return metrics


@contextlib.contextmanager
def serving(listen: str) -> Iterator[MetricsServer | None]:
    """The metrics endpoint of a process for the duration of the block; nothing when ``listen`` is empty."""
    if not listen.strip():
        yield None
        return
    server = start_server(listen)
    try:
        yield server
    finally:
        server.stop()
