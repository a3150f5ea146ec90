"""Consolidation gRPC servicer: RunJob, GetJob and ListJobs, converted to and from the domain's jobs (jobs.py)."""

from __future__ import annotations

from typing import Protocol

import grpc

from engram.errors import InvalidArgument, Unavailable
from engram.grpc import wire
from engram.grpc.clients import JOB_KINDS, RESOLUTIONS, contradiction_to_proto, job_to_proto
from engram.services.consolidation.jobs import DEFAULT_LIST_LIMIT, Jobs
from engram.services.consolidation.maintenance import Maintenance
from engram.v1 import consolidation_pb2, consolidation_pb2_grpc


class HasMaintenance(Protocol):
    @property
    def maintenance(self) -> Maintenance | None: ...


class ConsolidationServicer(consolidation_pb2_grpc.ConsolidationServicer):
    def __init__(self, jobs: Jobs, service: HasMaintenance | None = None) -> None:
        self._jobs = jobs
        self._service = service

    def _maintenance(self) -> Maintenance:
        maintenance = self._service.maintenance if self._service is not None else None
        if maintenance is None:
            raise Unavailable(
                "The consolidation service has no ingest or search address (set ENGRAM_INGEST_ADDR and "
                "ENGRAM_SEARCH_ADDR)."
            )
        return maintenance

    async def ListContradictions(
        self, request: consolidation_pb2.ListContradictionsRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.ListContradictionsResponse:
        found = await self._maintenance().list_contradictions(
            wire.caller_from_proto(request.caller), topics=list(request.topics), limit=request.limit
        )
        return consolidation_pb2.ListContradictionsResponse(contradictions=[contradiction_to_proto(c) for c in found])

    async def ResolveContradiction(
        self, request: consolidation_pb2.ResolveContradictionRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.ResolveContradictionResponse:
        number = request.resolution
        name = consolidation_pb2.Resolution.Name(number) if number in consolidation_pb2.Resolution.values() else ""
        resolution = name.removeprefix("RESOLUTION_").lower()
        if resolution not in RESOLUTIONS:
            raise InvalidArgument("resolution", f"give one of {', '.join(RESOLUTIONS)}.")
        memories, summary = await self._maintenance().resolve(
            wire.caller_from_proto(request.caller), request.id, request.other_id, resolution,
            context=request.context, other_context=request.other_context, content=request.content,
            winner_id=request.winner_id,
        )  # fmt: skip
        return consolidation_pb2.ResolveContradictionResponse(
            memories=[wire.memory_to_proto(m) for m in memories], summary=summary
        )

    async def RunJob(
        self, request: consolidation_pb2.RunJobRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.RunJobResponse:
        job = await self._jobs.run(
            wire.caller_from_proto(request.caller), kind_of(request.kind), dict(request.options),
            time_limit=context.time_remaining(),
        )  # fmt: skip
        return consolidation_pb2.RunJobResponse(job=job_to_proto(job))

    async def ListJobs(
        self, request: consolidation_pb2.ListJobsRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.ListJobsResponse:
        jobs = await self._jobs.list(wire.caller_from_proto(request.caller), limit=request.limit or DEFAULT_LIST_LIMIT)
        return consolidation_pb2.ListJobsResponse(jobs=[job_to_proto(job) for job in jobs])

    async def GetJob(
        self, request: consolidation_pb2.GetJobRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.GetJobResponse:
        job = await self._jobs.get(wire.caller_from_proto(request.caller), request.id)
        return consolidation_pb2.GetJobResponse(job=job_to_proto(job))


def kind_of(number: int) -> str:
    """JOB_KIND_TEAM_SUMMARY -> "team_summary"; raises InvalidArgument for UNSPECIFIED or an unknown number."""
    name = consolidation_pb2.JobKind.Name(number) if number in consolidation_pb2.JobKind.values() else ""
    kind = name.removeprefix("JOB_KIND_").lower()
    if kind not in JOB_KINDS:
        raise InvalidArgument("kind", f"name a job kind: one of {', '.join(JOB_KINDS)}.")
    return kind
