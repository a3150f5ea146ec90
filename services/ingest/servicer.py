"""Ingest gRPC servicer: proto <-> domain only; its errors are translated by the server's ErrorInterceptor."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from engram.errors import InvalidArgument
from engram.grpc import wire
from engram.results import ImportItem
from engram.scrub import Redaction
from engram.services.ingest.lifecycle import Lifecycle
from engram.services.ingest.writer import MemoryWriter
from engram.v1 import common_pb2, ingest_pb2, ingest_pb2_grpc


def _redactions(redactions: tuple[Redaction, ...] | list[Redaction]) -> list[common_pb2.Redaction]:
    return [common_pb2.Redaction(kind=r.kind, count=r.count) for r in redactions]


class IngestServicer(ingest_pb2_grpc.IngestServicer):
    def __init__(self, writer: MemoryWriter, lifecycle: Lifecycle) -> None:
        self._writer = writer
        self._lifecycle = lifecycle

    async def SaveMemory(
        self, request: ingest_pb2.SaveMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.SaveMemoryResponse:
        result = await self._writer.save(wire.caller_from_proto(request.caller), wire.input_from_proto(request.memory))
        return ingest_pb2.SaveMemoryResponse(
            memory=wire.memory_to_proto(result.memory),
            version=result.memory.version,
            seq=result.seq,
            redactions=_redactions(result.redactions),
            duplicate_of=result.duplicate_of,
        )

    async def UpdateMemory(
        self, request: ingest_pb2.UpdateMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.UpdateMemoryResponse:
        result = await self._lifecycle.update(
            wire.caller_from_proto(request.caller),
            request.id,
            wire.input_from_proto(request.memory),
            list(request.update_mask),
            expected_version=request.expected_version,
        )
        return ingest_pb2.UpdateMemoryResponse(
            memory=wire.memory_to_proto(result.memory),
            version=result.memory.version,
            seq=result.seq,
            redactions=_redactions(result.redactions),
        )

    async def DeleteMemory(
        self, request: ingest_pb2.DeleteMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.DeleteMemoryResponse:
        caller = wire.caller_from_proto(request.caller)
        if request.purge:
            result = await self._lifecycle.purge(caller, request.id)
        else:
            result = await self._lifecycle.delete(caller, request.id, expected_version=request.expected_version)
        response = ingest_pb2.DeleteMemoryResponse(id=result.id, seq=result.seq, erased=result.erased)
        if result.memory is not None:
            response.memory.CopyFrom(wire.memory_to_proto(result.memory))
            response.version = result.memory.version
        return response

    async def SupersedeMemory(
        self, request: ingest_pb2.SupersedeMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.SupersedeMemoryResponse:
        result = await self._lifecycle.supersede(
            wire.caller_from_proto(request.caller),
            request.id,
            replacement=wire.input_from_proto(request.replacement) if request.HasField("replacement") else None,
            new_id=request.new_id,
            expected_version=request.expected_version,
        )
        return ingest_pb2.SupersedeMemoryResponse(
            old_memory=wire.memory_to_proto(result.old),
            new_memory=wire.memory_to_proto(result.new),
            seq=result.seq,
            redactions=_redactions(result.redactions),
        )

    async def UnsupersedeMemory(
        self, request: ingest_pb2.UnsupersedeMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.UnsupersedeMemoryResponse:
        result = await self._lifecycle.unsupersede(
            wire.caller_from_proto(request.caller), request.id, expected_version=request.expected_version
        )
        response = ingest_pb2.UnsupersedeMemoryResponse(memory=wire.memory_to_proto(result.memory), seq=result.seq)
        if result.replacement is not None:
            response.replacement.CopyFrom(wire.memory_to_proto(result.replacement))
        return response

    async def ExpireMemory(
        self, request: ingest_pb2.ExpireMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.ExpireMemoryResponse:
        at = wire.ts_to_epoch(request, "at")
        if at is None:
            raise InvalidArgument("at", "is required: the time the expiry runs for.")
        result = await self._lifecycle.expire(
            wire.caller_from_proto(request.caller), request.id, expected_version=request.expected_version, at=at
        )
        return ingest_pb2.ExpireMemoryResponse(
            memory=wire.memory_to_proto(result.memory), seq=result.seq, expired=result.expired
        )

    async def MergeMemories(
        self, request: ingest_pb2.MergeMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.MergeMemoriesResponse:
        result = await self._lifecycle.merge(
            wire.caller_from_proto(request.caller), list(request.ids), into_id=request.into_id,
            replacement=wire.input_from_proto(request.replacement) if request.HasField("replacement") else None,
            force=request.force, note=request.note,
        )  # fmt: skip
        return ingest_pb2.MergeMemoriesResponse(
            survivor=wire.memory_to_proto(result.survivor), merged=[wire.memory_to_proto(m) for m in result.merged],
            seq=result.seq, redactions=_redactions(result.redactions),
        )  # fmt: skip

    async def RelateMemories(
        self, request: ingest_pb2.RelateMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.RelateMemoriesResponse:
        result = await self._lifecycle.relate(
            wire.caller_from_proto(request.caller), request.id, request.other_id, request.kind, note=request.note,
            replace_kinds=tuple(request.replace_kinds),
        )  # fmt: skip
        return ingest_pb2.RelateMemoriesResponse(
            memory=wire.memory_to_proto(result.memory), seq=result.seq, changed=result.changed
        )

    async def DecayMemory(
        self, request: ingest_pb2.DecayMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.DecayMemoryResponse:
        idle_since = wire.ts_to_epoch(request, "idle_since")
        if idle_since is None:
            raise InvalidArgument("idle_since", "is required: the memory must have been idle since then.")
        result = await self._lifecycle.decay(
            wire.caller_from_proto(request.caller), request.id, expected_version=request.expected_version,
            idle_since=idle_since, archive=request.archive,
        )  # fmt: skip
        return ingest_pb2.DecayMemoryResponse(
            memory=wire.memory_to_proto(result.memory), seq=result.seq, changed=result.changed
        )

    async def UpdateHandoff(
        self, request: ingest_pb2.UpdateHandoffRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.UpdateHandoffResponse:
        result = await self._lifecycle.update_handoff(
            wire.caller_from_proto(request.caller),
            request.id,
            _handoff_status(request.status),
            expected_version=request.expected_version,
            note=request.note,
        )
        return ingest_pb2.UpdateHandoffResponse(memory=wire.memory_to_proto(result.memory), seq=result.seq)

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

    async def EnrichMemory(
        self, request: ingest_pb2.EnrichMemoryRequest, context: grpc.aio.ServicerContext
    ) -> ingest_pb2.EnrichMemoryResponse:
        seq = await self._writer.enrich(
            wire.caller_from_proto(request.caller), request.id, list(request.questions), model=request.model
        )
        return ingest_pb2.EnrichMemoryResponse(seq=seq)


def _handoff_status(number: int) -> str:
    """HANDOFF_STATUS_ACCEPTED -> "accepted"; "" for unspecified or a number this version does not know."""
    if number == common_pb2.HANDOFF_STATUS_UNSPECIFIED or number not in common_pb2.HandoffStatus.values():
        return ""
    return common_pb2.HandoffStatus.Name(number).removeprefix("HANDOFF_STATUS_").lower()


def _item(request: ingest_pb2.ImportMemoriesRequest) -> ImportItem:
    return ImportItem(
        request.line, wire.input_from_proto(request.memory), request.source_id, request.dense, request.dense_model
    )
