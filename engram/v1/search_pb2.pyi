import datetime

from engram.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RerankMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RERANK_MODE_UNSPECIFIED: _ClassVar[RerankMode]
    RERANK_MODE_ON: _ClassVar[RerankMode]
    RERANK_MODE_OFF: _ClassVar[RerankMode]
RERANK_MODE_UNSPECIFIED: RerankMode
RERANK_MODE_ON: RerankMode
RERANK_MODE_OFF: RerankMode

class SearchFilter(_message.Message):
    __slots__ = ("tags", "owner_agent", "memory_types", "created_after", "created_before", "topics", "statuses", "conversation_id", "project", "as_of", "team", "handoff_target", "handoff_statuses", "relation_kinds", "pack", "content_keys")
    TAGS_FIELD_NUMBER: _ClassVar[int]
    OWNER_AGENT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TYPES_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_TARGET_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_STATUSES_FIELD_NUMBER: _ClassVar[int]
    RELATION_KINDS_FIELD_NUMBER: _ClassVar[int]
    PACK_FIELD_NUMBER: _ClassVar[int]
    CONTENT_KEYS_FIELD_NUMBER: _ClassVar[int]
    tags: _containers.RepeatedScalarFieldContainer[str]
    owner_agent: str
    memory_types: _containers.RepeatedScalarFieldContainer[_common_pb2.MemoryType]
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    topics: _containers.RepeatedScalarFieldContainer[str]
    statuses: _containers.RepeatedScalarFieldContainer[_common_pb2.Status]
    conversation_id: str
    project: str
    as_of: _timestamp_pb2.Timestamp
    team: str
    handoff_target: str
    handoff_statuses: _containers.RepeatedScalarFieldContainer[_common_pb2.HandoffStatus]
    relation_kinds: _containers.RepeatedScalarFieldContainer[str]
    pack: str
    content_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tags: _Optional[_Iterable[str]] = ..., owner_agent: _Optional[str] = ..., memory_types: _Optional[_Iterable[_Union[_common_pb2.MemoryType, str]]] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., topics: _Optional[_Iterable[str]] = ..., statuses: _Optional[_Iterable[_Union[_common_pb2.Status, str]]] = ..., conversation_id: _Optional[str] = ..., project: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., team: _Optional[str] = ..., handoff_target: _Optional[str] = ..., handoff_statuses: _Optional[_Iterable[_Union[_common_pb2.HandoffStatus, str]]] = ..., relation_kinds: _Optional[_Iterable[str]] = ..., pack: _Optional[str] = ..., content_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchMemoriesRequest(_message.Message):
    __slots__ = ("caller", "query", "limit", "filter", "min_seq", "explain", "rerank", "sources", "min_relevance")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    RERANK_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    MIN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    query: str
    limit: int
    filter: SearchFilter
    min_seq: int
    explain: bool
    rerank: RerankMode
    sources: _containers.RepeatedScalarFieldContainer[str]
    min_relevance: float
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[SearchFilter, _Mapping]] = ..., min_seq: _Optional[int] = ..., explain: _Optional[bool] = ..., rerank: _Optional[_Union[RerankMode, str]] = ..., sources: _Optional[_Iterable[str]] = ..., min_relevance: _Optional[float] = ...) -> None: ...

class StageRank(_message.Message):
    __slots__ = ("stage", "rank", "score")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    stage: str
    rank: int
    score: float
    def __init__(self, stage: _Optional[str] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("memory", "score", "explain")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    score: float
    explain: _containers.RepeatedCompositeFieldContainer[StageRank]
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., score: _Optional[float] = ..., explain: _Optional[_Iterable[_Union[StageRank, _Mapping]]] = ...) -> None: ...

class SearchMemoriesResponse(_message.Message):
    __slots__ = ("hits", "applied_seq", "reranked", "rerank_note", "explain_note")
    HITS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    RERANKED_FIELD_NUMBER: _ClassVar[int]
    RERANK_NOTE_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_NOTE_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    applied_seq: int
    reranked: bool
    rerank_note: str
    explain_note: str
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., applied_seq: _Optional[int] = ..., reranked: _Optional[bool] = ..., rerank_note: _Optional[str] = ..., explain_note: _Optional[str] = ...) -> None: ...

class GetMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "min_seq", "with_history", "for_update", "for_create", "head")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    WITH_HISTORY_FIELD_NUMBER: _ClassVar[int]
    FOR_UPDATE_FIELD_NUMBER: _ClassVar[int]
    FOR_CREATE_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    min_seq: int
    with_history: bool
    for_update: bool
    for_create: bool
    head: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., min_seq: _Optional[int] = ..., with_history: _Optional[bool] = ..., for_update: _Optional[bool] = ..., for_create: _Optional[bool] = ..., head: _Optional[bool] = ...) -> None: ...

class GetMemoryResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ...) -> None: ...

class ListMemoriesRequest(_message.Message):
    __slots__ = ("caller", "limit", "filter", "page_token", "min_seq", "order")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    limit: int
    filter: SearchFilter
    page_token: str
    min_seq: int
    order: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[SearchFilter, _Mapping]] = ..., page_token: _Optional[str] = ..., min_seq: _Optional[int] = ..., order: _Optional[str] = ...) -> None: ...

class ListMemoriesResponse(_message.Message):
    __slots__ = ("memories", "next_page_token", "index_seq")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INDEX_SEQ_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[_common_pb2.Memory]
    next_page_token: str
    index_seq: int
    def __init__(self, memories: _Optional[_Iterable[_Union[_common_pb2.Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., index_seq: _Optional[int] = ...) -> None: ...

class GetHistoryRequest(_message.Message):
    __slots__ = ("caller", "id", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., min_seq: _Optional[int] = ...) -> None: ...

class GetHistoryResponse(_message.Message):
    __slots__ = ("versions", "memory_id", "seqs")
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[_common_pb2.MemoryVersion]
    memory_id: str
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, versions: _Optional[_Iterable[_Union[_common_pb2.MemoryVersion, _Mapping]]] = ..., memory_id: _Optional[str] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class GetMemoryAtRequest(_message.Message):
    __slots__ = ("caller", "id", "at", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    at: _timestamp_pb2.Timestamp
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., min_seq: _Optional[int] = ...) -> None: ...

class GetMemoryAtResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = ("caller", "breakdown")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    BREAKDOWN_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    breakdown: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., breakdown: _Optional[bool] = ...) -> None: ...

class StatCount(_message.Message):
    __slots__ = ("key", "count")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    key: str
    count: int
    def __init__(self, key: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ("memories", "applied_seq", "embedding_model", "reranker_model", "log_last_seq", "by_agent", "by_type", "by_status", "by_team", "total", "quarantined")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    RERANKER_MODEL_FIELD_NUMBER: _ClassVar[int]
    LOG_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    BY_AGENT_FIELD_NUMBER: _ClassVar[int]
    BY_TYPE_FIELD_NUMBER: _ClassVar[int]
    BY_STATUS_FIELD_NUMBER: _ClassVar[int]
    BY_TEAM_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_FIELD_NUMBER: _ClassVar[int]
    memories: int
    applied_seq: int
    embedding_model: str
    reranker_model: str
    log_last_seq: int
    by_agent: _containers.RepeatedCompositeFieldContainer[StatCount]
    by_type: _containers.RepeatedCompositeFieldContainer[StatCount]
    by_status: _containers.RepeatedCompositeFieldContainer[StatCount]
    by_team: _containers.RepeatedCompositeFieldContainer[StatCount]
    total: int
    quarantined: int
    def __init__(self, memories: _Optional[int] = ..., applied_seq: _Optional[int] = ..., embedding_model: _Optional[str] = ..., reranker_model: _Optional[str] = ..., log_last_seq: _Optional[int] = ..., by_agent: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ..., by_type: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ..., by_status: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ..., by_team: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ..., total: _Optional[int] = ..., quarantined: _Optional[int] = ...) -> None: ...

class ListExpiringRequest(_message.Message):
    __slots__ = ("caller", "at", "limit")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    at: _timestamp_pb2.Timestamp
    limit: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class ExpiringMemory(_message.Message):
    __slots__ = ("namespace", "id", "version", "expires_at")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    version: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., version: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListExpiringResponse(_message.Message):
    __slots__ = ("memories",)
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[ExpiringMemory]
    def __init__(self, memories: _Optional[_Iterable[_Union[ExpiringMemory, _Mapping]]] = ...) -> None: ...

class ListAgentsRequest(_message.Message):
    __slots__ = ("caller", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., min_seq: _Optional[int] = ...) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("agent_id", "first_seen", "last_seen", "memories", "devices", "clients", "teams", "writes")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    first_seen: _timestamp_pb2.Timestamp
    last_seen: _timestamp_pb2.Timestamp
    memories: int
    devices: _containers.RepeatedScalarFieldContainer[str]
    clients: _containers.RepeatedScalarFieldContainer[str]
    teams: _containers.RepeatedScalarFieldContainer[str]
    writes: int
    def __init__(self, agent_id: _Optional[str] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., memories: _Optional[int] = ..., devices: _Optional[_Iterable[str]] = ..., clients: _Optional[_Iterable[str]] = ..., teams: _Optional[_Iterable[str]] = ..., writes: _Optional[int] = ...) -> None: ...

class ListAgentsResponse(_message.Message):
    __slots__ = ("agents",)
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[AgentInfo]
    def __init__(self, agents: _Optional[_Iterable[_Union[AgentInfo, _Mapping]]] = ...) -> None: ...

class ListTeamsRequest(_message.Message):
    __slots__ = ("caller", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., min_seq: _Optional[int] = ...) -> None: ...

class TeamInfo(_message.Message):
    __slots__ = ("team", "memories", "agents", "summary_id", "last_activity")
    TEAM_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_FIELD_NUMBER: _ClassVar[int]
    team: str
    memories: int
    agents: _containers.RepeatedScalarFieldContainer[str]
    summary_id: str
    last_activity: _timestamp_pb2.Timestamp
    def __init__(self, team: _Optional[str] = ..., memories: _Optional[int] = ..., agents: _Optional[_Iterable[str]] = ..., summary_id: _Optional[str] = ..., last_activity: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListTeamsResponse(_message.Message):
    __slots__ = ("teams",)
    TEAMS_FIELD_NUMBER: _ClassVar[int]
    teams: _containers.RepeatedCompositeFieldContainer[TeamInfo]
    def __init__(self, teams: _Optional[_Iterable[_Union[TeamInfo, _Mapping]]] = ...) -> None: ...

class ScanMemoriesRequest(_message.Message):
    __slots__ = ("caller", "filter", "with_vectors", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    WITH_VECTORS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    filter: SearchFilter
    with_vectors: bool
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., filter: _Optional[_Union[SearchFilter, _Mapping]] = ..., with_vectors: _Optional[bool] = ..., min_seq: _Optional[int] = ...) -> None: ...

class ScanMemoriesResponse(_message.Message):
    __slots__ = ("memories", "vectors")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[_common_pb2.Memory]
    vectors: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, memories: _Optional[_Iterable[_Union[_common_pb2.Memory, _Mapping]]] = ..., vectors: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ListNamespacesRequest(_message.Message):
    __slots__ = ("caller",)
    CALLER_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ...) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces",)
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[StatCount]
    def __init__(self, namespaces: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ...) -> None: ...

class GetActivityRequest(_message.Message):
    __slots__ = ("caller", "start", "days", "min_seq")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    DAYS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQ_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    start: _timestamp_pb2.Timestamp
    days: int
    min_seq: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., days: _Optional[int] = ..., min_seq: _Optional[int] = ...) -> None: ...

class ActivityDay(_message.Message):
    __slots__ = ("start", "by_agent")
    START_FIELD_NUMBER: _ClassVar[int]
    BY_AGENT_FIELD_NUMBER: _ClassVar[int]
    start: _timestamp_pb2.Timestamp
    by_agent: _containers.RepeatedCompositeFieldContainer[StatCount]
    def __init__(self, start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., by_agent: _Optional[_Iterable[_Union[StatCount, _Mapping]]] = ...) -> None: ...

class GetActivityResponse(_message.Message):
    __slots__ = ("days",)
    DAYS_FIELD_NUMBER: _ClassVar[int]
    days: _containers.RepeatedCompositeFieldContainer[ActivityDay]
    def __init__(self, days: _Optional[_Iterable[_Union[ActivityDay, _Mapping]]] = ...) -> None: ...

class QuarantinedEntry(_message.Message):
    __slots__ = ("seq", "namespace", "memory_id", "event", "error", "at")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    namespace: str
    memory_id: str
    event: str
    error: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, seq: _Optional[int] = ..., namespace: _Optional[str] = ..., memory_id: _Optional[str] = ..., event: _Optional[str] = ..., error: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListQuarantinedRequest(_message.Message):
    __slots__ = ("caller", "all_namespaces")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ALL_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    all_namespaces: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., all_namespaces: _Optional[bool] = ...) -> None: ...

class ListQuarantinedResponse(_message.Message):
    __slots__ = ("entries", "total")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[QuarantinedEntry]
    total: int
    def __init__(self, entries: _Optional[_Iterable[_Union[QuarantinedEntry, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...

class RetryQuarantinedRequest(_message.Message):
    __slots__ = ("caller", "all_namespaces", "seqs")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ALL_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    all_namespaces: bool
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., all_namespaces: _Optional[bool] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class RetryQuarantinedResponse(_message.Message):
    __slots__ = ("applied", "failed")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    applied: _containers.RepeatedCompositeFieldContainer[QuarantinedEntry]
    failed: _containers.RepeatedCompositeFieldContainer[QuarantinedEntry]
    def __init__(self, applied: _Optional[_Iterable[_Union[QuarantinedEntry, _Mapping]]] = ..., failed: _Optional[_Iterable[_Union[QuarantinedEntry, _Mapping]]] = ...) -> None: ...

class DropQuarantinedRequest(_message.Message):
    __slots__ = ("caller", "all_namespaces", "seqs")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ALL_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    all_namespaces: bool
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., all_namespaces: _Optional[bool] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class DropQuarantinedResponse(_message.Message):
    __slots__ = ("dropped",)
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    dropped: _containers.RepeatedCompositeFieldContainer[QuarantinedEntry]
    def __init__(self, dropped: _Optional[_Iterable[_Union[QuarantinedEntry, _Mapping]]] = ...) -> None: ...
