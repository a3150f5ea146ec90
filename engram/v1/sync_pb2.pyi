from engram.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegisterDeviceRequest(_message.Message):
    __slots__ = ("caller", "device")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    device: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., device: _Optional[str] = ...) -> None: ...

class RegisterDeviceResponse(_message.Message):
    __slots__ = ("device", "cursor")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    device: str
    cursor: int
    def __init__(self, device: _Optional[str] = ..., cursor: _Optional[int] = ...) -> None: ...

class Change(_message.Message):
    __slots__ = ("source_id", "event", "body_json", "seq", "parent")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    event: str
    body_json: bytes
    seq: int
    parent: str
    def __init__(self, source_id: _Optional[str] = ..., event: _Optional[str] = ..., body_json: _Optional[bytes] = ..., seq: _Optional[int] = ..., parent: _Optional[str] = ...) -> None: ...

class PushChangesRequest(_message.Message):
    __slots__ = ("caller", "device", "changes", "restore", "agents")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    device: str
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    restore: bool
    agents: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., device: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ..., restore: _Optional[bool] = ..., agents: _Optional[_Iterable[str]] = ...) -> None: ...

class PushResult(_message.Message):
    __slots__ = ("source_id", "accepted", "seq", "reason", "version", "conflict", "duplicate", "redacted")
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    source_id: str
    accepted: bool
    seq: int
    reason: str
    version: int
    conflict: bool
    duplicate: bool
    redacted: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, source_id: _Optional[str] = ..., accepted: _Optional[bool] = ..., seq: _Optional[int] = ..., reason: _Optional[str] = ..., version: _Optional[int] = ..., conflict: _Optional[bool] = ..., duplicate: _Optional[bool] = ..., redacted: _Optional[_Iterable[str]] = ...) -> None: ...

class PushChangesResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[PushResult]
    def __init__(self, results: _Optional[_Iterable[_Union[PushResult, _Mapping]]] = ...) -> None: ...

class PullChangesRequest(_message.Message):
    __slots__ = ("caller", "device", "cursor", "limit")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    device: str
    cursor: int
    limit: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., device: _Optional[str] = ..., cursor: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class PullChangesResponse(_message.Message):
    __slots__ = ("changes", "cursor", "has_more", "last_seq")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    cursor: int
    has_more: bool
    last_seq: int
    def __init__(self, changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ..., cursor: _Optional[int] = ..., has_more: _Optional[bool] = ..., last_seq: _Optional[int] = ...) -> None: ...
