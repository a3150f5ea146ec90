"""Probes and status: /healthz (the process is up), /readyz (every service ready, or why not) and /v1/status
(node, readiness, index lag, counts, disk, sync) for people and scripts (`engram status`)."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

import asyncio
import dataclasses
import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from engram import errors
from engram.config import Settings
from engram.log import Log
from engram.model import Caller, format_time
from engram.process.health import LOG
from engram.services.gateway.backend import Backend, ProblemReport, Readiness
from engram.services.gateway.identity import require_scope
from engram.services.gateway.rest.dependencies import (
    CurrentBackend,
    CurrentCaller,
    CurrentResolver,
    CurrentSettings,
    EventLog,
)
from engram.services.gateway.rest.problems import ERROR_RESPONSES

SYNC_SERVED = "serves edge devices: they sync with `engram edge --upstream <this URL> --key <a sync key>`"
SYNC_NONE = "no sync service behind this gateway (set ENGRAM_SYNC_ADDR to serve edge devices)"
# /readyz answers within this many seconds whatever the services and the log do: a probe that waits longer is
# counted as failed by orchestrators anyway, and then nobody learns why. The log is asked for less, so its answer
# (or its silence) is known in time.
READYZ_SECONDS = 1.0
LOG_PROBE_SECONDS = 0.5


class ProblemOut(BaseModel):
    condition: str = Field(description="What is failing: log, log_store, disk, index, or a service's name.")
    detail: str = Field(description="What is wrong and what to do about it.")
    since: str | None = Field(default=None, description="When it started (RFC 3339).")
    degraded: bool = Field(
        default=False, description="It stops nothing: the node serves (e.g. index_quarantine: log entries set aside)."
    )


class QuarantinedNewest(BaseModel):
    seq: int
    namespace: str
    event: str
    error: str


class IndexOut(BaseModel):
    applied_seq: int = Field(description="The last log sequence the search index has applied.")
    log_last_seq: int = Field(description="The newest log sequence (0 when the log cannot be asked).")
    lag: int = Field(description="Log entries not yet searchable: log_last_seq - applied_seq.")
    memories: int = Field(description="Active memories in your namespace.")
    embedding_model: str
    reranker_model: str | None = None
    quarantined: int = Field(
        default=0,
        description="Log entries the index could not apply and set aside, over every namespace "
        "(`engram index quarantine list`).",
    )
    quarantine_newest: QuarantinedNewest | None = Field(
        default=None, description="The newest of them in your namespace (admin keys and dev mode only)."
    )


class DiskOut(BaseModel):
    path: str
    free_bytes: int
    reserve_bytes: int = Field(description="Writes stop when less than this is free (ENGRAM_DISK_RESERVE_MB).")


class NodeOut(BaseModel):
    version: str
    pid: int
    started_at: str | None
    uptime_seconds: float | None


class SyncOut(BaseModel):
    state: str


class CallerOut(BaseModel):
    """Who the status was asked as: what the console and `engram status` show as "signed in as"."""

    identity: str = Field(description="agent@device, or the bare agent.")
    namespace: str = Field(description="The namespace every read and write of this caller works in.")
    dev: bool = Field(description="Dev mode: an anonymous caller on loopback, in namespace default.")
    other_namespaces: dict[str, int] = Field(
        default_factory=dict,
        description="Dev mode only: the other namespaces holding active memories (e.g. synced in with a key's "
        "namespace), which this caller does not see; read them with a key of that namespace.",
    )


class StatusOut(BaseModel):
    """Everything `engram status` shows. Log sequences are global to the node (every namespace's writes count)."""

    ready: bool
    services: dict[str, str] = Field(description="Each service: serving or down.")
    problems: list[ProblemOut]
    node: NodeOut
    index: IndexOut | None = Field(description="Null while the search service does not answer.")
    disk: DiskOut | None = Field(default=None, description="Only for admin keys and dev mode.")
    sync: SyncOut
    caller: CallerOut | None = None


def _problems(readiness: Readiness) -> list[ProblemOut]:
    return [
        ProblemOut(condition=p.condition, detail=p.detail, since=format_time(p.since), degraded=p.degraded)
        for p in readiness.problems
    ]


def _services(readiness: Readiness) -> dict[str, str]:
    return {name: "serving" if ok else "down" for name, ok in sorted(readiness.services.items())}


async def log_problem(event_log: Log | None, timeout: float = LOG_PROBE_SECONDS) -> ProblemReport | None:
    """Why the log cannot be used right now, asking it for its newest sequence (None: it answered in time).

    The services notice a closed connection at once, but not a server that stopped answering on an open one (hung,
    or cut off by the network) until NATS' own pings time out, minutes later: this probe does, in ``timeout``.
    """
    if event_log is None:  # a gateway without NATS (no live events): the services' own reports say it all
        return None
    try:
        await asyncio.wait_for(event_log.last_seq(), timeout)
    except TimeoutError:
        reason = f"no reply within {timeout:g} s"
    except Exception as e:  # nats errors or EngramError: any failure to answer means not ready
        reason = type(e).__name__ if not isinstance(e, errors.EngramError) else str(e)
    else:
        return None
    return ProblemReport(
        LOG, f"NATS (the log) does not answer ({reason}): nothing can be stored until it does.", time.time()
    )


async def _readiness_now(backend: Backend, event_log: Log | None) -> Readiness:
    """The services' readiness and the log's, asked at once and within READYZ_SECONDS."""
    readiness, log_down = await asyncio.gather(
        backend.readiness(timeout=READYZ_SECONDS - 0.1), log_problem(event_log, LOG_PROBE_SECONDS)
    )
    if log_down is None or any(p.condition == LOG for p in readiness.problems):
        return readiness  # the services already say the log is down, and since when
    # Every service needs the log (Health's LOG condition stops them all): say so as they would.
    services = dict.fromkeys(readiness.services, False)
    return dataclasses.replace(readiness, services=services, problems=[*readiness.problems, log_down])


async def _rerank_model(backend: Backend, timeout: float) -> str | None:
    """The reranker's model id ("" for none), or the last one known when the search service does not say in time."""
    try:
        return await asyncio.wait_for(backend.rerank_model(), timeout)
    except (TimeoutError, errors.EngramError):
        return backend.known_rerank_model


async def _caller_out(backend: Backend, caller: Caller, *, dev: bool) -> CallerOut:
    """Who asked; in dev mode also the namespaces it does not see (the node is its user's own: no tenant to hide)."""
    out = CallerOut(identity=caller.identity, namespace=caller.namespace, dev=dev)
    if dev:
        everyone = Caller(namespace=caller.namespace, agent_id="engram-status", scopes=frozenset({"read", "admin"}))
        try:
            counts = await backend.search_client.namespaces(everyone)
        except errors.EngramError:  # the search service is down: the status says so elsewhere
            counts = {}
        out.other_namespaces = {ns: n for ns, n in sorted(counts.items()) if ns != caller.namespace and n}
    return out


async def _quarantine_newest(backend: Backend, caller: Caller) -> QuarantinedNewest | None:
    """The newest entry set aside in the caller's namespace (admin keys, and dev mode's caller), or None."""
    admin = caller if "admin" in caller.scopes else dataclasses.replace(caller, scopes=caller.scopes | {"admin"})
    try:
        entries, _ = await backend.search_client.quarantined(admin)
    except errors.EngramError:  # the search service is down: the status says so elsewhere
        return None
    if not entries:
        return None
    newest = entries[-1]
    return QuarantinedNewest(seq=newest.seq, namespace=newest.namespace, event=newest.event, error=newest.error)


def _sync_state(backend: Backend, settings: Settings) -> str:
    """An edge node: its sync with the cluster, in a line; else whether this gateway serves edge devices."""
    if settings.upstream:
        from engram.services.sync.device import STATE_FILE, SyncState

        return SyncState.load(settings.home / "sync" / STATE_FILE).line(settings.upstream)
    return SYNC_SERVED if backend.sync is not None else SYNC_NONE


def _readiness_body(readiness: Readiness) -> dict[str, Any]:
    """/readyz's answer without the reranker: each service, the problems, and whether it is ready."""
    return {
        # degraded: ready (200), with problems that stop nothing, e.g. log entries the index set aside
        "status": ("degraded" if readiness.degraded else "ready") if readiness.ready else "unavailable",
        "services": _services(readiness),
        "problems": [p.model_dump() for p in _problems(readiness)],
        "rerank": "off",
    }


async def _rerank_fields(backend: Backend, timeout: float) -> dict[str, Any]:
    """Whether search reranks, and with which model ("unknown" when the search service does not say in time)."""
    model = await _rerank_model(backend, max(0.05, timeout))
    return {"rerank": "unknown" if model is None else "on" if model else "off", "rerank_model": model or None}


def _not_ready(readiness: Readiness) -> str:
    reasons = "; ".join(f"{p.condition}: {p.detail}" for p in readiness.problems) or "a service is down"
    return f"Not ready: {reasons}"


def _node_out(readiness: Readiness) -> NodeOut:
    return NodeOut(
        version=readiness.version,
        pid=readiness.pid,
        started_at=format_time(readiness.started_at),
        uptime_seconds=round(time.time() - readiness.started_at, 1) if readiness.started_at else None,
    )


async def _index_out(backend: Backend, caller: Caller, *, newest: bool) -> IndexOut:
    """The search index's figures; with ``newest`` (admin keys and dev mode), the newest entry it set aside."""
    stats = await backend.search_client.stats(caller)
    index = IndexOut(
        applied_seq=stats.applied_seq,
        log_last_seq=stats.log_last_seq,
        lag=max(0, stats.log_last_seq - stats.applied_seq),
        memories=stats.memories,
        embedding_model=stats.embedding_model,
        reranker_model=stats.reranker_model or None,
        quarantined=stats.quarantined,
    )
    if stats.quarantined and newest:
        index.quarantine_newest = await _quarantine_newest(backend, caller)
    return index


# /healthz and /readyz, unauthenticated: orchestrators call them. build_app includes them first, then `router`.
probes = APIRouter()


@probes.get("/healthz", tags=["probes"], summary="Liveness: the process is up")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@probes.get(
    "/readyz",
    tags=["probes"],
    summary="Readiness: every service is ready, or why not",
    responses={503: {"description": "Not ready: the body says which service or condition, with Retry-After"}},
)
async def readyz(backend: CurrentBackend, event_log: EventLog) -> JSONResponse:
    # No docstring: it would become the route's description in the OpenAPI document. The services are asked, and
    # the log itself (event_log, the gateway's connection; None without NATS) whether it answers.
    started = time.monotonic()
    readiness = await _readiness_now(backend, event_log)
    body = _readiness_body(readiness)
    if readiness.services.get("search"):
        body.update(await _rerank_fields(backend, READYZ_SECONDS - (time.monotonic() - started)))
    if not readiness.ready:
        body["detail"] = _not_ready(readiness)
    headers = None if readiness.ready else {"Retry-After": "2"}
    return JSONResponse(body, status_code=200 if readiness.ready else 503, headers=headers)


# The authenticated /v1/status; it takes the app's backend, resolver and settings (an edge node's status shows its
# sync with the cluster) and the caller as injected dependencies (rest/dependencies.py).
router = APIRouter(prefix="/v1", tags=["status"], responses=ERROR_RESPONSES)


@router.get("/status", response_model=StatusOut, summary="Node status: readiness, index lag, counts, disk, sync")
async def status(
    caller: CurrentCaller, backend: CurrentBackend, resolver: CurrentResolver, settings: CurrentSettings
) -> StatusOut:
    """What `engram status` prints. Needs the read scope; the disk figures need admin (or dev mode)."""
    require_scope(caller, "read")
    readiness = await backend.readiness()
    privileged = resolver.dev or "admin" in caller.scopes
    return StatusOut(
        ready=readiness.ready,
        services=_services(readiness),
        problems=_problems(readiness),
        node=_node_out(readiness),
        index=await _index_out(backend, caller, newest=privileged) if readiness.services.get("search") else None,
        disk=DiskOut(**readiness.disk) if readiness.disk and privileged else None,
        sync=SyncOut(state=_sync_state(backend, settings)),
        caller=await _caller_out(backend, caller, dev=resolver.dev),
    )
