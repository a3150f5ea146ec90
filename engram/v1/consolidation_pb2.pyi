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

class JobKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_KIND_UNSPECIFIED: _ClassVar[JobKind]
    JOB_KIND_EXPIRE: _ClassVar[JobKind]
    JOB_KIND_DEDUPE: _ClassVar[JobKind]
    JOB_KIND_DECAY: _ClassVar[JobKind]
    JOB_KIND_CONTRADICTIONS: _ClassVar[JobKind]
    JOB_KIND_TEAM_SUMMARY: _ClassVar[JobKind]
    JOB_KIND_ENRICH_BACKFILL: _ClassVar[JobKind]
    JOB_KIND_ALL: _ClassVar[JobKind]

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_RUNNING: _ClassVar[JobState]
    JOB_STATE_SUCCEEDED: _ClassVar[JobState]
    JOB_STATE_FAILED: _ClassVar[JobState]

class Resolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOLUTION_UNSPECIFIED: _ClassVar[Resolution]
    RESOLUTION_KEEP_BOTH: _ClassVar[Resolution]
    RESOLUTION_KEEP_NEWER: _ClassVar[Resolution]
    RESOLUTION_MERGE: _ClassVar[Resolution]
    RESOLUTION_OVERRIDE: _ClassVar[Resolution]
    RESOLUTION_SUPERSEDE: _ClassVar[Resolution]
JOB_KIND_UNSPECIFIED: JobKind
JOB_KIND_EXPIRE: JobKind
JOB_KIND_DEDUPE: JobKind
JOB_KIND_DECAY: JobKind
JOB_KIND_CONTRADICTIONS: JobKind
JOB_KIND_TEAM_SUMMARY: JobKind
JOB_KIND_ENRICH_BACKFILL: JobKind
JOB_KIND_ALL: JobKind
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_SUCCEEDED: JobState
JOB_STATE_FAILED: JobState
RESOLUTION_UNSPECIFIED: Resolution
RESOLUTION_KEEP_BOTH: Resolution
RESOLUTION_KEEP_NEWER: Resolution
RESOLUTION_MERGE: Resolution
RESOLUTION_OVERRIDE: Resolution
RESOLUTION_SUPERSEDE: Resolution

class Job(_message.Message):
    __slots__ = ("id", "kind", "state", "started_at", "finished_at", "summary", "result_json", "namespace", "done", "total", "phase", "runner")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    RUNNER_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: JobKind
    state: JobState
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    summary: str
    result_json: str
    namespace: str
    done: int
    total: int
    phase: str
    runner: str
    def __init__(self, id: _Optional[str] = ..., kind: _Optional[_Union[JobKind, str]] = ..., state: _Optional[_Union[JobState, str]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., summary: _Optional[str] = ..., result_json: _Optional[str] = ..., namespace: _Optional[str] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., phase: _Optional[str] = ..., runner: _Optional[str] = ...) -> None: ...

class RunJobRequest(_message.Message):
    __slots__ = ("caller", "kind", "options")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CALLER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    kind: JobKind
    options: _containers.ScalarMap[str, str]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., kind: _Optional[_Union[JobKind, str]] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RunJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("caller", "id")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("caller", "limit")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    limit: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class Contradiction(_message.Message):
    __slots__ = ("memory", "other", "score", "why", "kind", "rule")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    other: _common_pb2.Memory
    score: float
    why: str
    kind: str
    rule: str
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., other: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., score: _Optional[float] = ..., why: _Optional[str] = ..., kind: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...

class ListContradictionsRequest(_message.Message):
    __slots__ = ("caller", "topics", "limit")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    topics: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., topics: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ...) -> None: ...

class ListContradictionsResponse(_message.Message):
    __slots__ = ("contradictions",)
    CONTRADICTIONS_FIELD_NUMBER: _ClassVar[int]
    contradictions: _containers.RepeatedCompositeFieldContainer[Contradiction]
    def __init__(self, contradictions: _Optional[_Iterable[_Union[Contradiction, _Mapping]]] = ...) -> None: ...

class ResolveContradictionRequest(_message.Message):
    __slots__ = ("caller", "id", "other_id", "resolution", "context", "other_context", "content", "winner_id")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OTHER_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    OTHER_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    WINNER_ID_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    other_id: str
    resolution: Resolution
    context: str
    other_context: str
    content: str
    winner_id: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., other_id: _Optional[str] = ..., resolution: _Optional[_Union[Resolution, str]] = ..., context: _Optional[str] = ..., other_context: _Optional[str] = ..., content: _Optional[str] = ..., winner_id: _Optional[str] = ...) -> None: ...

class ResolveContradictionResponse(_message.Message):
    __slots__ = ("memories", "summary")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[_common_pb2.Memory]
    summary: str
    def __init__(self, memories: _Optional[_Iterable[_Union[_common_pb2.Memory, _Mapping]]] = ..., summary: _Optional[str] = ...) -> None: ...
