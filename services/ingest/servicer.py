"""Ingest gRPC servicer: proto <-> domain only; errors are translated by engram.rpc."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from engram import wire
from engram.results import ImportItem
from engram.rpc import translate_errors, unimplemented
from engram.services.ingest.writer import MemoryWriter
from engram.v1 import common_pb2, ingest_pb2, ingest_pb2_grpc


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

    @translate_errors
    async def ImportMemories(
        self, request_iterator: AsyncIterator[ingest_pb2.ImportMemoriesRequest], context: grpc.aio.ServicerContext
    ) -> ingest_pb2.ImportMemoriesResponse:
        requests = aiter(request_iterator)
        first = await anext(requests, None)
        if first is None:
            return ingest_pb2.ImportMemoriesResponse()

        async def items() -> AsyncIterator[ImportItem]:
            for request in (first,):
                yield _item(request)
            async for request in requests:
                yield _item(request)

        summary = await self._writer.import_stream(wire.caller_from_proto(first.caller), items())
        stored = [(line, mid, seq, False) for line, mid, seq in summary.imported]
        stored += [(line, mid, seq, True) for line, mid, seq in summary.present]
        return ingest_pb2.ImportMemoriesResponse(
            imported=len(summary.imported),
            already_present=len(summary.present),
            rejected=[ingest_pb2.ImportRejection(line=line, reason=reason) for line, reason in summary.rejected],
            last_line=summary.last_line,
            last_seq=summary.last_seq,
            items=[
                ingest_pb2.ImportedItem(line=line, id=mid, seq=seq, already_present=present)
                for line, mid, seq, present in sorted(stored)
            ],
            redactions=[common_pb2.Redaction(kind=r.kind, count=r.count) for r in summary.redactions],
            stopped=str(summary.stopped) if summary.stopped else "",
            stopped_code=summary.stopped.code if summary.stopped else "",
        )

    @translate_errors
    async def EnrichMemory(
        self, request: ingest_pb2.EnrichMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.EnrichMemoryResponse:
        seq = await self._writer.enrich(
            wire.caller_from_proto(request.caller), request.id, list(request.questions), model=request.model
        )
        return ingest_pb2.EnrichMemoryResponse(seq=seq)


def _item(request: ingest_pb2.ImportMemoriesRequest) -> ImportItem:
    return ImportItem(request.line, wire.input_from_proto(request.memory), request.source_id)
