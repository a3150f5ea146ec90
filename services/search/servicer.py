"""Search gRPC servicer: proto <-> domain only; its errors are translated by the server's ErrorInterceptor."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from engram.errors import InvalidArgument
from engram.grpc import wire
from engram.model import Caller, ListQuery, SearchQuery
from engram.ownership import require_admin
from engram.results import Quarantined
from engram.services.search.indexer import Indexer
from engram.services.search.reader import DAY_SECONDS, MemoryReader
from engram.v1 import common_pb2, search_pb2, search_pb2_grpc


class SearchServicer(search_pb2_grpc.SearchServicer):
    def __init__(self, reader: MemoryReader, indexer: Indexer) -> None:
        self._reader = reader
        self._indexer = indexer

    async def SearchMemories(
        self, request: search_pb2.SearchMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.SearchMemoriesResponse:
        result = await self._reader.search(*wire.request_from_proto(request, SearchQuery))
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
            explain_note=result.explain_note,
        )

    async def GetMemory(
        self, request: search_pb2.GetMemoryRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetMemoryResponse:
        memory = await self._reader.get(
            wire.caller_from_proto(request.caller),
            request.id,
            min_seq=request.min_seq,
            with_history=request.with_history,
            for_update=request.for_update,
            for_create=request.for_create,
            head=request.head,
        )
        return search_pb2.GetMemoryResponse(memory=wire.memory_to_proto(memory))

    async def ListMemories(
        self, request: search_pb2.ListMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListMemoriesResponse:
        memories, token, applied = await self._reader.list_recent(*wire.request_from_proto(request, ListQuery))
        return search_pb2.ListMemoriesResponse(
            memories=[wire.memory_to_proto(m) for m in memories], next_page_token=token, index_seq=applied
        )

    async def GetStats(
        self, request: search_pb2.GetStatsRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetStatsResponse:
        caller = wire.caller_from_proto(request.caller)
        response = search_pb2.GetStatsResponse(
            applied_seq=self._reader.applied_seq,
            embedding_model=self._reader.embedding_model,
            reranker_model=self._reader.reranker_model,
            log_last_seq=await self._reader.log_last_seq(),
            quarantined=self._indexer.quarantine.count,
        )
        if not request.breakdown:
            response.memories = await self._reader.count(caller)
            return response
        stats = await self._reader.stats(caller)
        response.memories = stats.memories
        response.total = stats.total
        for name, counts in (("by_agent", stats.by_agent), ("by_type", stats.by_type),
                             ("by_status", stats.by_status), ("by_team", stats.by_team)):  # fmt: skip
            getattr(response, name).extend(
                search_pb2.StatCount(key=key, count=count) for key, count in sorted(counts.items())
            )
        return response

    async def GetHistory(
        self, request: search_pb2.GetHistoryRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetHistoryResponse:
        history = await self._reader.history(
            wire.caller_from_proto(request.caller), request.id, min_seq=request.min_seq
        )
        return search_pb2.GetHistoryResponse(
            memory_id=history.memory_id,
            versions=[wire.to_proto(v, common_pb2.MemoryVersion) for v in history.versions],
            seqs=history.seqs,
        )

    async def GetMemoryAt(
        self, request: search_pb2.GetMemoryAtRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetMemoryAtResponse:
        at = wire.ts_to_epoch(request, "at")
        if at is None:
            raise InvalidArgument("at", "is required: the time to read the memory at.")
        memory = await self._reader.memory_at(
            wire.caller_from_proto(request.caller), request.id, at, min_seq=request.min_seq
        )
        return search_pb2.GetMemoryAtResponse(memory=wire.memory_to_proto(memory))

    async def ListExpiring(
        self, request: search_pb2.ListExpiringRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListExpiringResponse:
        require_admin(wire.caller_from_proto(request.caller))
        at = wire.ts_to_epoch(request, "at")
        if at is None:
            raise InvalidArgument("at", "is required: the time the expiry runs for.")
        due = await self._reader.expiring(at=at, limit=request.limit or 100)
        response = search_pb2.ListExpiringResponse()
        for item in due:
            entry = response.memories.add(namespace=item.namespace, id=item.id, version=item.version)
            wire.set_ts(entry, "expires_at", item.expires_at)
        return response

    async def ListAgents(
        self, request: search_pb2.ListAgentsRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListAgentsResponse:
        agents = await self._reader.agents(wire.caller_from_proto(request.caller), min_seq=request.min_seq)
        response = search_pb2.ListAgentsResponse()
        for agent in agents:
            entry = response.agents.add(
                agent_id=agent.agent_id, memories=agent.memories, devices=agent.devices, clients=agent.clients,
                teams=agent.teams, writes=agent.writes,
            )  # fmt: skip
            wire.set_ts(entry, "first_seen", agent.first_seen)
            wire.set_ts(entry, "last_seen", agent.last_seen)
        return response

    async def ListTeams(
        self, request: search_pb2.ListTeamsRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListTeamsResponse:
        teams = await self._reader.teams(wire.caller_from_proto(request.caller), min_seq=request.min_seq)
        response = search_pb2.ListTeamsResponse()
        for team in teams:
            entry = response.teams.add(
                team=team.team, memories=team.memories, agents=team.agents, summary_id=team.summary_id
            )
            wire.set_ts(entry, "last_activity", team.last_activity)
        return response

    async def ListNamespaces(
        self, request: search_pb2.ListNamespacesRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListNamespacesResponse:
        require_admin(wire.caller_from_proto(request.caller))
        counts = await self._reader.namespaces()
        return search_pb2.ListNamespacesResponse(
            namespaces=[search_pb2.StatCount(key=k, count=v) for k, v in sorted(counts.items())]
        )

    async def GetActivity(
        self, request: search_pb2.GetActivityRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.GetActivityResponse:
        start = wire.ts_to_epoch(request, "start")
        if start is None:
            raise InvalidArgument("start", "give the first day's start (a timestamp).")
        counts = await self._reader.activity(
            wire.caller_from_proto(request.caller), start=start, days=request.days, min_seq=request.min_seq
        )
        response = search_pb2.GetActivityResponse()
        for index, by_agent in enumerate(counts):
            counted = [search_pb2.StatCount(key=agent, count=n) for agent, n in sorted(by_agent.items())]
            day = response.days.add(by_agent=counted)
            wire.set_ts(day, "start", start + index * DAY_SECONDS)
        return response

    async def ScanMemories(
        self, request: search_pb2.ScanMemoriesRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[search_pb2.ScanMemoriesResponse]:
        caller = wire.caller_from_proto(request.caller)
        flt = wire.filter_from_proto(request.filter)
        pages = self._reader.scan(caller, flt, with_vectors=request.with_vectors, min_seq=request.min_seq)
        async for memories, vectors in pages:
            yield search_pb2.ScanMemoriesResponse(
                memories=[wire.memory_to_proto(m) for m in memories], vectors=vectors if request.with_vectors else []
            )

    async def ListQuarantined(
        self, request: search_pb2.ListQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.ListQuarantinedResponse:
        namespace = _quarantine_scope(wire.caller_from_proto(request.caller), request.all_namespaces)
        return search_pb2.ListQuarantinedResponse(
            entries=[_quarantined(item) for item in self._indexer.quarantined(namespace)],
            total=self._indexer.quarantine.count,
        )

    async def RetryQuarantined(
        self, request: search_pb2.RetryQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.RetryQuarantinedResponse:
        namespace = _quarantine_scope(wire.caller_from_proto(request.caller), request.all_namespaces)
        applied, failed = await self._indexer.retry_quarantined(list(request.seqs), namespace)
        return search_pb2.RetryQuarantinedResponse(
            applied=[_quarantined(item) for item in applied], failed=[_quarantined(item) for item in failed]
        )

    async def DropQuarantined(
        self, request: search_pb2.DropQuarantinedRequest, context: grpc.aio.ServicerContext
    ) -> search_pb2.DropQuarantinedResponse:
        namespace = _quarantine_scope(wire.caller_from_proto(request.caller), request.all_namespaces)
        dropped = await self._indexer.drop_quarantined(list(request.seqs), namespace)
        return search_pb2.DropQuarantinedResponse(dropped=[_quarantined(item) for item in dropped])


def _quarantine_scope(caller: Caller, all_namespaces: bool) -> str | None:
    """The namespace whose quarantined entries an admin manages (None: every one, which the gateway asks for in dev
    mode only, where the node is its user's own)."""
    require_admin(caller, "manage the entries the index set aside")
    return None if all_namespaces else caller.namespace


def _quarantined(item: Quarantined) -> search_pb2.QuarantinedEntry:
    entry = search_pb2.QuarantinedEntry(
        seq=item.seq, namespace=item.namespace, memory_id=item.memory_id, event=item.event, error=item.error
    )
    wire.set_ts(entry, "at", item.at)
    return entry
