"""Sync gRPC servicer: RegisterDevice, PushChanges and PullChanges, converted to and from the inbox (inbox.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Protocol

import grpc

from engram.errors import Unavailable
from engram.grpc import wire
from engram.results import SyncChange
from engram.services.sync.inbox import Inbox
from engram.v1 import sync_pb2, sync_pb2_grpc


class HasInbox(Protocol):
    @property
    def inbox(self) -> Inbox | None: ...


class SyncServicer(sync_pb2_grpc.SyncServicer):
    def __init__(self, service: HasInbox) -> None:
        self._service = service

    def _inbox(self) -> Inbox:
        if self._service.inbox is None:
            raise Unavailable("The sync service has no search service to read from (set ENGRAM_SEARCH_ADDR).")
        return self._service.inbox

    async def RegisterDevice(
        self, request: sync_pb2.RegisterDeviceRequest, context: grpc.aio.ServicerContext
    ) -> sync_pb2.RegisterDeviceResponse:
        device, last = await self._inbox().register(wire.caller_from_proto(request.caller), request.device)
        return sync_pb2.RegisterDeviceResponse(device=device, cursor=last)

    async def PushChanges(
        self, request: sync_pb2.PushChangesRequest, context: grpc.aio.ServicerContext
    ) -> sync_pb2.PushChangesResponse:
        changes = [SyncChange(c.source_id, c.event, c.body_json, c.seq, c.parent) for c in request.changes]
        results = await self._inbox().push(
            wire.caller_from_proto(request.caller), request.device, changes, restore=request.restore,
            agents=list(request.agents),
        )  # fmt: skip
        return sync_pb2.PushChangesResponse(results=[sync_pb2.PushResult(**asdict(r)) for r in results])

    async def PullChanges(
        self, request: sync_pb2.PullChangesRequest, context: grpc.aio.ServicerContext
    ) -> sync_pb2.PullChangesResponse:
        page = await self._inbox().pull(
            wire.caller_from_proto(request.caller), request.device, request.cursor, request.limit
        )
        changes = [
            sync_pb2.Change(source_id=c.source_id, event=c.event, body_json=c.body, seq=c.seq) for c in page.changes
        ]
        return sync_pb2.PullChangesResponse(
            changes=changes, cursor=page.cursor, has_more=page.has_more, last_seq=page.last_seq
        )
