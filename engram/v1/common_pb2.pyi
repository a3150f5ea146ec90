import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_TYPE_UNSPECIFIED: _ClassVar[MemoryType]
    MEMORY_TYPE_GENERAL: _ClassVar[MemoryType]
    MEMORY_TYPE_FACT: _ClassVar[MemoryType]
    MEMORY_TYPE_PREFERENCE: _ClassVar[MemoryType]
    MEMORY_TYPE_DECISION: _ClassVar[MemoryType]
    MEMORY_TYPE_FINDING: _ClassVar[MemoryType]
    MEMORY_TYPE_HYPOTHESIS: _ClassVar[MemoryType]
    MEMORY_TYPE_BLOCKER: _ClassVar[MemoryType]
    MEMORY_TYPE_ACTION_ITEM: _ClassVar[MemoryType]
    MEMORY_TYPE_HISTORY: _ClassVar[MemoryType]
    MEMORY_TYPE_HANDOFF: _ClassVar[MemoryType]
    MEMORY_TYPE_TEAM_SUMMARY: _ClassVar[MemoryType]
    MEMORY_TYPE_PACK_FILE: _ClassVar[MemoryType]
    MEMORY_TYPE_OBSERVATION: _ClassVar[MemoryType]
    MEMORY_TYPE_SESSION_SUMMARY: _ClassVar[MemoryType]

class Confidence(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIDENCE_UNSPECIFIED: _ClassVar[Confidence]
    CONFIDENCE_STATED: _ClassVar[Confidence]
    CONFIDENCE_INFERRED: _ClassVar[Confidence]

class Importance(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    IMPORTANCE_UNSPECIFIED: _ClassVar[Importance]
    IMPORTANCE_LOW: _ClassVar[Importance]
    IMPORTANCE_NORMAL: _ClassVar[Importance]
    IMPORTANCE_HIGH: _ClassVar[Importance]
    IMPORTANCE_CRITICAL: _ClassVar[Importance]

class Sensitivity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SENSITIVITY_UNSPECIFIED: _ClassVar[Sensitivity]
    SENSITIVITY_NORMAL: _ClassVar[Sensitivity]
    SENSITIVITY_PRIVATE: _ClassVar[Sensitivity]
    SENSITIVITY_SECRET: _ClassVar[Sensitivity]

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS_UNSPECIFIED: _ClassVar[Status]
    STATUS_ACTIVE: _ClassVar[Status]
    STATUS_ARCHIVED: _ClassVar[Status]
    STATUS_EXPIRED: _ClassVar[Status]
    STATUS_SUPERSEDED: _ClassVar[Status]

class RelationKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RELATION_KIND_UNSPECIFIED: _ClassVar[RelationKind]
    RELATION_KIND_SUPERSEDES: _ClassVar[RelationKind]
    RELATION_KIND_CONTRADICTS: _ClassVar[RelationKind]
    RELATION_KIND_CONTEXT_DEPENDENT: _ClassVar[RelationKind]
    RELATION_KIND_MERGED_INTO: _ClassVar[RelationKind]

class HandoffStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HANDOFF_STATUS_UNSPECIFIED: _ClassVar[HandoffStatus]
    HANDOFF_STATUS_PENDING: _ClassVar[HandoffStatus]
    HANDOFF_STATUS_ACCEPTED: _ClassVar[HandoffStatus]
    HANDOFF_STATUS_COMPLETED: _ClassVar[HandoffStatus]
    HANDOFF_STATUS_EXPIRED: _ClassVar[HandoffStatus]
MEMORY_TYPE_UNSPECIFIED: MemoryType
MEMORY_TYPE_GENERAL: MemoryType
MEMORY_TYPE_FACT: MemoryType
MEMORY_TYPE_PREFERENCE: MemoryType
MEMORY_TYPE_DECISION: MemoryType
MEMORY_TYPE_FINDING: MemoryType
MEMORY_TYPE_HYPOTHESIS: MemoryType
MEMORY_TYPE_BLOCKER: MemoryType
MEMORY_TYPE_ACTION_ITEM: MemoryType
MEMORY_TYPE_HISTORY: MemoryType
MEMORY_TYPE_HANDOFF: MemoryType
MEMORY_TYPE_TEAM_SUMMARY: MemoryType
MEMORY_TYPE_PACK_FILE: MemoryType
MEMORY_TYPE_OBSERVATION: MemoryType
MEMORY_TYPE_SESSION_SUMMARY: MemoryType
CONFIDENCE_UNSPECIFIED: Confidence
CONFIDENCE_STATED: Confidence
CONFIDENCE_INFERRED: Confidence
IMPORTANCE_UNSPECIFIED: Importance
IMPORTANCE_LOW: Importance
IMPORTANCE_NORMAL: Importance
IMPORTANCE_HIGH: Importance
IMPORTANCE_CRITICAL: Importance
SENSITIVITY_UNSPECIFIED: Sensitivity
SENSITIVITY_NORMAL: Sensitivity
SENSITIVITY_PRIVATE: Sensitivity
SENSITIVITY_SECRET: Sensitivity
STATUS_UNSPECIFIED: Status
STATUS_ACTIVE: Status
STATUS_ARCHIVED: Status
STATUS_EXPIRED: Status
STATUS_SUPERSEDED: Status
RELATION_KIND_UNSPECIFIED: RelationKind
RELATION_KIND_SUPERSEDES: RelationKind
RELATION_KIND_CONTRADICTS: RelationKind
RELATION_KIND_CONTEXT_DEPENDENT: RelationKind
RELATION_KIND_MERGED_INTO: RelationKind
HANDOFF_STATUS_UNSPECIFIED: HandoffStatus
HANDOFF_STATUS_PENDING: HandoffStatus
HANDOFF_STATUS_ACCEPTED: HandoffStatus
HANDOFF_STATUS_COMPLETED: HandoffStatus
HANDOFF_STATUS_EXPIRED: HandoffStatus

class CallContext(_message.Message):
    __slots__ = ("namespace", "agent_id", "source", "device", "scopes", "request_id", "team", "agent_from_key")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    AGENT_FROM_KEY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    agent_id: str
    source: str
    device: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    request_id: str
    team: str
    agent_from_key: bool
    def __init__(self, namespace: _Optional[str] = ..., agent_id: _Optional[str] = ..., source: _Optional[str] = ..., device: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., request_id: _Optional[str] = ..., team: _Optional[str] = ..., agent_from_key: _Optional[bool] = ...) -> None: ...

class Relation(_message.Message):
    __slots__ = ("kind", "memory_id", "note")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    kind: RelationKind
    memory_id: str
    note: str
    def __init__(self, kind: _Optional[_Union[RelationKind, str]] = ..., memory_id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class Handoff(_message.Message):
    __slots__ = ("target_agent", "status", "updated_at", "expires_at")
    TARGET_AGENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    target_agent: str
    status: HandoffStatus
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, target_agent: _Optional[str] = ..., status: _Optional[_Union[HandoffStatus, str]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Origin(_message.Message):
    __slots__ = ("device", "source_id")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    device: str
    source_id: str
    def __init__(self, device: _Optional[str] = ..., source_id: _Optional[str] = ...) -> None: ...

class MemoryVersion(_message.Message):
    __slots__ = ("version", "content", "summary", "agent_id", "source", "updated_at", "seq", "conflict", "status", "event")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    version: int
    content: str
    summary: str
    agent_id: str
    source: str
    updated_at: _timestamp_pb2.Timestamp
    seq: int
    conflict: bool
    status: Status
    event: str
    def __init__(self, version: _Optional[int] = ..., content: _Optional[str] = ..., summary: _Optional[str] = ..., agent_id: _Optional[str] = ..., source: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., seq: _Optional[int] = ..., conflict: _Optional[bool] = ..., status: _Optional[_Union[Status, str]] = ..., event: _Optional[str] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("id", "namespace", "content", "summary", "memory_type", "confidence", "topics", "tags", "importance", "owner_agent", "source", "team", "project", "conversation_id", "metadata_json", "sensitivity", "created_at", "updated_at", "valid_at", "invalid_at", "expires_at", "version", "history", "status", "superseded_by", "relations", "handoff", "questions", "access_count", "origin", "seq", "context", "last_accessed_at", "updated_by", "tier")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    OWNER_AGENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    SENSITIVITY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    INVALID_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCESS_COUNT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESSED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    content: str
    summary: str
    memory_type: MemoryType
    confidence: Confidence
    topics: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    importance: Importance
    owner_agent: str
    source: str
    team: str
    project: str
    conversation_id: str
    metadata_json: str
    sensitivity: Sensitivity
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    valid_at: _timestamp_pb2.Timestamp
    invalid_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    version: int
    history: _containers.RepeatedCompositeFieldContainer[MemoryVersion]
    status: Status
    superseded_by: str
    relations: _containers.RepeatedCompositeFieldContainer[Relation]
    handoff: Handoff
    questions: _containers.RepeatedScalarFieldContainer[str]
    access_count: int
    origin: Origin
    seq: int
    context: str
    last_accessed_at: _timestamp_pb2.Timestamp
    updated_by: str
    tier: str
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., content: _Optional[str] = ..., summary: _Optional[str] = ..., memory_type: _Optional[_Union[MemoryType, str]] = ..., confidence: _Optional[_Union[Confidence, str]] = ..., topics: _Optional[_Iterable[str]] = ..., tags: _Optional[_Iterable[str]] = ..., importance: _Optional[_Union[Importance, str]] = ..., owner_agent: _Optional[str] = ..., source: _Optional[str] = ..., team: _Optional[str] = ..., project: _Optional[str] = ..., conversation_id: _Optional[str] = ..., metadata_json: _Optional[str] = ..., sensitivity: _Optional[_Union[Sensitivity, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., invalid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., version: _Optional[int] = ..., history: _Optional[_Iterable[_Union[MemoryVersion, _Mapping]]] = ..., status: _Optional[_Union[Status, str]] = ..., superseded_by: _Optional[str] = ..., relations: _Optional[_Iterable[_Union[Relation, _Mapping]]] = ..., handoff: _Optional[_Union[Handoff, _Mapping]] = ..., questions: _Optional[_Iterable[str]] = ..., access_count: _Optional[int] = ..., origin: _Optional[_Union[Origin, _Mapping]] = ..., seq: _Optional[int] = ..., context: _Optional[str] = ..., last_accessed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_by: _Optional[str] = ..., tier: _Optional[str] = ...) -> None: ...

class MemoryInput(_message.Message):
    __slots__ = ("content", "summary", "memory_type", "confidence", "topics", "tags", "importance", "team", "project", "conversation_id", "metadata_json", "sensitivity", "valid_at", "invalid_at", "expires_at", "handoff_target", "context")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    TEAM_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    SENSITIVITY_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    INVALID_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HANDOFF_TARGET_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    content: str
    summary: str
    memory_type: MemoryType
    confidence: Confidence
    topics: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    importance: Importance
    team: str
    project: str
    conversation_id: str
    metadata_json: str
    sensitivity: Sensitivity
    valid_at: _timestamp_pb2.Timestamp
    invalid_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    handoff_target: str
    context: str
    def __init__(self, content: _Optional[str] = ..., summary: _Optional[str] = ..., memory_type: _Optional[_Union[MemoryType, str]] = ..., confidence: _Optional[_Union[Confidence, str]] = ..., topics: _Optional[_Iterable[str]] = ..., tags: _Optional[_Iterable[str]] = ..., importance: _Optional[_Union[Importance, str]] = ..., team: _Optional[str] = ..., project: _Optional[str] = ..., conversation_id: _Optional[str] = ..., metadata_json: _Optional[str] = ..., sensitivity: _Optional[_Union[Sensitivity, str]] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., invalid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., handoff_target: _Optional[str] = ..., context: _Optional[str] = ...) -> None: ...

class Redaction(_message.Message):
    __slots__ = ("kind", "count")
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    count: int
    def __init__(self, kind: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...
