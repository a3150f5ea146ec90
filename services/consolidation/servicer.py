"""Consolidation gRPC servicer. Its jobs arrive in a later release; today every RPC says so."""

from __future__ import annotations

from typing import Any

import grpc

from engram.rpc import unimplemented
from engram.v1 import consolidation_pb2_grpc


class ConsolidationServicer(consolidation_pb2_grpc.ConsolidationServicer):
    async def RunJob(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "Consolidation jobs (expiry, dedupe, decay, contradictions, summaries)")

    async def GetJob(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "Consolidation jobs")
