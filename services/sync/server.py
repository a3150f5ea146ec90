"""Builds the sync service and a standalone gRPC server for it."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from engram.config import Settings
from engram.runtime import Resources, RunningServer, serve
from engram.services.sync.servicer import SyncServicer
from engram.v1 import sync_pb2_grpc


@dataclass
class SyncService:
    name: str = "engram.v1.Sync"

    def register(self, server: grpc.aio.Server) -> None:
        sync_pb2_grpc.add_SyncServicer_to_server(SyncServicer(), server)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


async def build_service(settings: Settings, resources: Resources) -> SyncService:
    return SyncService()


async def build_server(settings: Settings, resources: Resources) -> RunningServer:
    return await serve([await build_service(settings, resources)], settings.grpc_listen, resources=resources)
