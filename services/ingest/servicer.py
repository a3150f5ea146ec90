"""Ingest gRPC servicer: proto <-> domain only; errors are translated by engram.rpc."""

from __future__ import annotations

from typing import Any

import grpc

from engram import wire
from engram.rpc import translate_errors, unimplemented
from engram.v1 import common_pb2, ingest_pb2, ingest_pb2_grpc
from engram.services.ingest.writer import MemoryWriter


class IngestServicer(ingest_pb2_grpc.IngestServicer):
    def __init__(self, writer: MemoryWriter) -> None:
        self._writer = writer

    @translate_errors
    async def SaveMemory(
        self, request: ingest_pb2.SaveMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.SaveMemoryResponse:
        result = await self._writer.save(wire.caller_from_proto(request.caller), wire.input_from_proto(request.memory))
        return ingest_pb2.SaveMemoryResponse(
            memory=wire.memory_to_proto(result.memory),
            version=result.memory.version,
            seq=result.seq,
            redactions=[common_pb2.Redaction(kind=r.kind, count=r.count) for r in result.redactions],
        )

    async def UpdateMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "UpdateMemory (editing a memory)")

    async def DeleteMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "DeleteMemory (archiving a memory)")

    async def SupersedeMemory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "SupersedeMemory")

    async def UpdateHandoff(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "UpdateHandoff (accepting or completing a handoff)")

    async def ImportMemories(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "ImportMemories (bulk import)")
