"""Probes and status: /healthz (the process is up), /readyz (every service ready, or why not) and /v1/status
(node, readiness, index lag, counts, disk, sync) for people and scripts (`engram status`)."""

# No `from __future__ import annotations`: FastAPI resolves route annotations against module globals.

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from engram.model import Caller, format_time
from engram.services.gateway.backend import Backend, Readiness
from engram.services.gateway.identity import Resolver, require_scope
from engram.services.gateway.rest import ERROR_RESPONSES, caller_dependency

SYNC_SERVED = "serves edge devices: they sync with `engram edge --upstream <this URL> --key <a sync key>`"
SYNC_NONE = "no sync service behind this gateway (set ENGRAM_SYNC_ADDR to serve edge devices)"


class ProblemOut(BaseModel):
    condition: str = Field(description="What is failing: log, log_store, disk, index, or a service's name.")
    detail: str = Field(description="What is wrong and what to do about it.")
    since: str | None = Field(default=None, description="When it started (RFC 3339).")


class IndexOut(BaseModel):
    applied_seq: int = Field(description="The last log sequence the search index has applied.")
    log_last_seq: int = Field(description="The newest log sequence (0 when the log cannot be asked).")
    lag: int = Field(description="Log entries not yet searchable: log_last_seq - applied_seq.")
    memories: int = Field(description="Active memories in your namespace.")
    embedding_model: str
    reranker_model: str | None = None


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


class StatusOut(BaseModel):
    """Everything `engram status` shows. Log sequences are global to the node (every namespace's writes count)."""

    ready: bool
    services: dict[str, str] = Field(description="Each service: serving or down.")
    problems: list[ProblemOut]
    node: NodeOut
    index: IndexOut | None = Field(description="Null while the search service does not answer.")
    disk: DiskOut | None = Field(default=None, description="Only for admin keys and dev mode.")
    sync: SyncOut


def _problems(readiness: Readiness) -> list[ProblemOut]:
    return [ProblemOut(condition=p.condition, detail=p.detail, since=format_time(p.since)) for p in readiness.problems]


def _services(readiness: Readiness) -> dict[str, str]:
    return {name: "serving" if ok else "down" for name, ok in sorted(readiness.services.items())}


def add_probes(app: FastAPI, backend: Backend, resolver: Resolver) -> None:
    """/healthz and /readyz (unauthenticated: orchestrators call them) and the authenticated /v1/status."""

    @app.get("/healthz", tags=["probes"], summary="Liveness: the process is up")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        tags=["probes"],
        summary="Readiness: every service is ready, or why not",
        responses={503: {"description": "Not ready: the body says which service or condition, with Retry-After"}},
    )
    async def readyz() -> JSONResponse:
        readiness = await backend.readiness()
        body: dict[str, Any] = {
            "status": "ready" if readiness.ready else "unavailable",
            "services": _services(readiness),
            "problems": [p.model_dump() for p in _problems(readiness)],
            "rerank": "off",
        }
        if readiness.services.get("search"):
            model = await backend.rerank_model()
            body["rerank"] = "on" if model else "off"
            body["rerank_model"] = model or None
        if not readiness.ready:
            reasons = "; ".join(f"{p.condition}: {p.detail}" for p in readiness.problems) or "a service is down"
            body["detail"] = f"Not ready: {reasons}"
        headers = None if readiness.ready else {"Retry-After": "2"}
        return JSONResponse(body, status_code=200 if readiness.ready else 503, headers=headers)

    router = APIRouter(prefix="/v1", tags=["status"], responses=ERROR_RESPONSES)
    CurrentCaller = Annotated[Caller, Depends(caller_dependency(resolver))]

    @router.get("/status", response_model=StatusOut, summary="Node status: readiness, index lag, counts, disk, sync")
    async def status(caller: CurrentCaller) -> StatusOut:
        """What `engram status` prints. Needs the read scope; the disk figures need admin (or dev mode)."""
        require_scope(caller, "read")
        readiness = await backend.readiness()
        index = None
        if readiness.services.get("search"):
            stats = await backend.index_stats(caller)
            index = IndexOut(
                applied_seq=stats.applied_seq,
                log_last_seq=stats.log_last_seq,
                lag=max(0, stats.log_last_seq - stats.applied_seq),
                memories=stats.memories,
                embedding_model=stats.embedding_model,
                reranker_model=stats.reranker_model or None,
            )
        show_disk = resolver.dev or "admin" in caller.scopes
        return StatusOut(
            ready=readiness.ready,
            services=_services(readiness),
            problems=_problems(readiness),
            node=NodeOut(
                version=readiness.version,
                pid=readiness.pid,
                started_at=format_time(readiness.started_at),
                uptime_seconds=round(time.time() - readiness.started_at, 1) if readiness.started_at else None,
            ),
            index=index,
            disk=DiskOut(**readiness.disk) if readiness.disk and show_disk else None,
            sync=SyncOut(state=SYNC_SERVED if backend.sync is not None else SYNC_NONE),
        )

    app.include_router(router)
