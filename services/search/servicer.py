"""Search gRPC servicer: proto <-> domain only; errors are translated by engram.rpc."""

from __future__ import annotations

from typing import Any

import grpc

from engram import wire
from engram.rpc import translate_errors, unimplemented
from engram.services.search.reader import MemoryReader
from engram.v1 import search_pb2, search_pb2_grpc

_RERANK = {search_pb2.RERANK_MODE_ON: True, search_pb2.RERANK_MODE_OFF: False}


class SearchServicer(search_pb2_grpc.SearchServicer):
    def __init__(self, reader: MemoryReader) -> None:
        self._reader = reader

    @translate_errors
    async def SearchMemories(
        self, request: search_pb2.SearchMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.SearchMemoriesResponse:
        result = await self._reader.search(
            wire.caller_from_proto(request.caller),
            request.query,
            limit=request.limit,
            flt=wire.filter_from_proto(request.filter),
            min_seq=request.min_seq,
            explain=request.explain,
            rerank=_RERANK.get(request.rerank),
            sources=list(request.sources),
        )
        return search_pb2.SearchMemoriesResponse(
            hits=[
                search_pb2.SearchHit(
                    memory=wire.memory_to_proto(hit.memory),
                    score=hit.score,
                    explain=[
                        search_pb2.StageRank(stage=stage, rank=rank, score=score)
                        for stage, (rank, score) in hit.explain.items()
                    ],
                )
                for hit in result.hits
            ],
            applied_seq=result.applied_seq,
            reranked=result.reranked,
            rerank_note=result.rerank_note,
        )

    @translate_errors
    async def GetMemory(
        self, request: search_pb2.GetMemoryRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetMemoryResponse:
        memory = await self._reader.get(wire.caller_from_proto(request.caller), request.id, min_seq=request.min_seq)
        return search_pb2.GetMemoryResponse(memory=wire.memory_to_proto(memory))

    @translate_errors
    async def ListMemories(
        self, request: search_pb2.ListMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListMemoriesResponse:
        memories, token = await self._reader.list_recent(
            wire.caller_from_proto(request.caller),
            limit=request.limit,
            flt=wire.filter_from_proto(request.filter),
            page_token=request.page_token,
            min_seq=request.min_seq,
        )
        return search_pb2.ListMemoriesResponse(
            memories=[wire.memory_to_proto(m) for m in memories], next_page_token=token
        )

    @translate_errors
    async def GetStats(
        self, request: search_pb2.GetStatsRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetStatsResponse:
        count = await self._reader.count(wire.caller_from_proto(request.caller))
        return search_pb2.GetStatsResponse(
            memories=count,
            applied_seq=self._reader.applied_seq,
            embedding_model=self._reader.embedding_model,
            reranker_model=self._reader.reranker_model,
            log_last_seq=await self._reader.log_last_seq(),
        )

    async def GetHistory(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "GetHistory (the versions of a memory)")

    async def GetMemoryAt(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await unimplemented(context, "GetMemoryAt (point-in-time reads)")
