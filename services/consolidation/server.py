"""Builds the consolidation service and a standalone gRPC server for it."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from engram.config import Settings
from engram.runtime import Resources, RunningServer, serve
from engram.services.consolidation.servicer import ConsolidationServicer
from engram.v1 import consolidation_pb2_grpc


@dataclass
class ConsolidationService:
    name: str = "engram.v1.Consolidation"

    def register(self, server: grpc.aio.Server) -> None:
        consolidation_pb2_grpc.add_ConsolidationServicer_to_server(ConsolidationServicer(), server)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


async def build_service(settings: Settings, resources: Resources) -> ConsolidationService:
    return ConsolidationService()


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen)
