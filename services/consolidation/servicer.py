"""Consolidation gRPC servicer: RunJob and GetJob, converted to and from the domain's jobs (jobs.py)."""

from __future__ import annotations

import grpc

from engram import wire
from engram.clients import JOB_KINDS, job_to_proto
from engram.errors import InvalidArgument
from engram.rpc import translate_errors
from engram.services.consolidation.jobs import Jobs
from engram.v1 import consolidation_pb2, consolidation_pb2_grpc


class ConsolidationServicer(consolidation_pb2_grpc.ConsolidationServicer):
    def __init__(self, jobs: Jobs) -> None:
        self._jobs = jobs

    @translate_errors
    async def RunJob(
        self, request: consolidation_pb2.RunJobRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.RunJobResponse:
        job = await self._jobs.run(
            wire.caller_from_proto(request.caller), kind_of(request.kind), dict(request.options),
            time_limit=context.time_remaining(),
        )  # fmt: skip
        return consolidation_pb2.RunJobResponse(job=job_to_proto(job))

    @translate_errors
    async def GetJob(
        self, request: consolidation_pb2.GetJobRequest, context: grpc.aio.ServicerContext
    ) -> consolidation_pb2.GetJobResponse:
        job = self._jobs.get(wire.caller_from_proto(request.caller), request.id)
        return consolidation_pb2.GetJobResponse(job=job_to_proto(job))


def kind_of(number: int) -> str:
    """JOB_KIND_TEAM_SUMMARY -> "team_summary"; raises InvalidArgument for UNSPECIFIED or an unknown number."""
    name = consolidation_pb2.JobKind.Name(number) if number in consolidation_pb2.JobKind.values() else ""
    kind = name.removeprefix("JOB_KIND_").lower()
    if kind not in JOB_KINDS:
        raise InvalidArgument("kind", f"name a job kind: one of {', '.join(JOB_KINDS)}.")
    return kind
