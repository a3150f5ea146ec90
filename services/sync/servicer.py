"""Sync gRPC servicer. Edge sync arrives in a later release; today every RPC says so."""

from __future__ import annotations

from typing import Any

import grpc

from engram.rpc import unimplemented
from engram.v1 import sync_pb2_grpc


class SyncServicer(sync_pb2_grpc.SyncServicer):
    async def RegisterDevice(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "Edge sync (RegisterDevice)")

    async def PushChanges(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "Edge sync (PushChanges)")

    async def PullChanges(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "Edge sync (PullChanges)")
