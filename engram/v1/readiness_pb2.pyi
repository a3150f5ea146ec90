import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetReadinessRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Problem(_message.Message):
    __slots__ = ("condition", "detail", "since", "services", "degraded")
    CONDITION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    condition: str
    detail: str
    since: _timestamp_pb2.Timestamp
    services: _containers.RepeatedScalarFieldContainer[str]
    degraded: bool
    def __init__(self, condition: _Optional[str] = ..., detail: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., services: _Optional[_Iterable[str]] = ..., degraded: _Optional[bool] = ...) -> None: ...

class ServiceState(_message.Message):
    __slots__ = ("service", "serving")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    service: str
    serving: bool
    def __init__(self, service: _Optional[str] = ..., serving: _Optional[bool] = ...) -> None: ...

class DiskState(_message.Message):
    __slots__ = ("path", "free_bytes", "reserve_bytes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESERVE_BYTES_FIELD_NUMBER: _ClassVar[int]
    path: str
    free_bytes: int
    reserve_bytes: int
    def __init__(self, path: _Optional[str] = ..., free_bytes: _Optional[int] = ..., reserve_bytes: _Optional[int] = ...) -> None: ...

class GetReadinessResponse(_message.Message):
    __slots__ = ("services", "problems", "version", "pid", "started_at", "disk")
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    services: _containers.RepeatedCompositeFieldContainer[ServiceState]
    problems: _containers.RepeatedCompositeFieldContainer[Problem]
    version: str
    pid: int
    started_at: _timestamp_pb2.Timestamp
    disk: DiskState
    def __init__(self, services: _Optional[_Iterable[_Union[ServiceState, _Mapping]]] = ..., problems: _Optional[_Iterable[_Union[Problem, _Mapping]]] = ..., version: _Optional[str] = ..., pid: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., disk: _Optional[_Union[DiskState, _Mapping]] = ...) -> None: ...
