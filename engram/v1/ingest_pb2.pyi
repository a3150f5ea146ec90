import datetime

from engram.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SaveMemoryRequest(_message.Message):
    __slots__ = ("caller", "memory")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    memory: _common_pb2.MemoryInput
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., memory: _Optional[_Union[_common_pb2.MemoryInput, _Mapping]] = ...) -> None: ...

class SaveMemoryResponse(_message.Message):
    __slots__ = ("memory", "version", "seq", "redactions", "duplicate_of")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_OF_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    version: int
    seq: int
    redactions: _containers.RepeatedCompositeFieldContainer[_common_pb2.Redaction]
    duplicate_of: str
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., version: _Optional[int] = ..., seq: _Optional[int] = ..., redactions: _Optional[_Iterable[_Union[_common_pb2.Redaction, _Mapping]]] = ..., duplicate_of: _Optional[str] = ...) -> None: ...

class UpdateMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "memory", "update_mask", "expected_version")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    memory: _common_pb2.MemoryInput
    update_mask: _containers.RepeatedScalarFieldContainer[str]
    expected_version: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., memory: _Optional[_Union[_common_pb2.MemoryInput, _Mapping]] = ..., update_mask: _Optional[_Iterable[str]] = ..., expected_version: _Optional[int] = ...) -> None: ...

class UpdateMemoryResponse(_message.Message):
    __slots__ = ("memory", "version", "seq", "redactions")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    version: int
    seq: int
    redactions: _containers.RepeatedCompositeFieldContainer[_common_pb2.Redaction]
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., version: _Optional[int] = ..., seq: _Optional[int] = ..., redactions: _Optional[_Iterable[_Union[_common_pb2.Redaction, _Mapping]]] = ...) -> None: ...

class DeleteMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "expected_version", "purge")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    PURGE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    expected_version: int
    purge: bool
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., expected_version: _Optional[int] = ..., purge: _Optional[bool] = ...) -> None: ...

class DeleteMemoryResponse(_message.Message):
    __slots__ = ("id", "version", "seq", "memory", "erased")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    ERASED_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    seq: int
    memory: _common_pb2.Memory
    erased: int
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ..., seq: _Optional[int] = ..., memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., erased: _Optional[int] = ...) -> None: ...

class SupersedeMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "replacement", "new_id", "expected_version")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    NEW_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    replacement: _common_pb2.MemoryInput
    new_id: str
    expected_version: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., replacement: _Optional[_Union[_common_pb2.MemoryInput, _Mapping]] = ..., new_id: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class SupersedeMemoryResponse(_message.Message):
    __slots__ = ("old_memory", "new_memory", "seq", "redactions")
    OLD_MEMORY_FIELD_NUMBER: _ClassVar[int]
    NEW_MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    old_memory: _common_pb2.Memory
    new_memory: _common_pb2.Memory
    seq: int
    redactions: _containers.RepeatedCompositeFieldContainer[_common_pb2.Redaction]
    def __init__(self, old_memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., new_memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ..., redactions: _Optional[_Iterable[_Union[_common_pb2.Redaction, _Mapping]]] = ...) -> None: ...

class UnsupersedeMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "expected_version")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    expected_version: int
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class UnsupersedeMemoryResponse(_message.Message):
    __slots__ = ("memory", "replacement", "seq")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    replacement: _common_pb2.Memory
    seq: int
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., replacement: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class UpdateHandoffRequest(_message.Message):
    __slots__ = ("caller", "id", "status", "expected_version", "note")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    status: _common_pb2.HandoffStatus
    expected_version: int
    note: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.HandoffStatus, str]] = ..., expected_version: _Optional[int] = ..., note: _Optional[str] = ...) -> None: ...

class UpdateHandoffResponse(_message.Message):
    __slots__ = ("memory", "seq")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    seq: int
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ...) -> None: ...

class ImportMemoriesRequest(_message.Message):
    __slots__ = ("caller", "memory", "line", "source_id", "dense", "dense_model")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    DENSE_FIELD_NUMBER: _ClassVar[int]
    DENSE_MODEL_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    memory: _common_pb2.MemoryInput
    line: int
    source_id: str
    dense: bytes
    dense_model: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., memory: _Optional[_Union[_common_pb2.MemoryInput, _Mapping]] = ..., line: _Optional[int] = ..., source_id: _Optional[str] = ..., dense: _Optional[bytes] = ..., dense_model: _Optional[str] = ...) -> None: ...

class ImportedItem(_message.Message):
    __slots__ = ("line", "id", "seq", "already_present")
    LINE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    ALREADY_PRESENT_FIELD_NUMBER: _ClassVar[int]
    line: int
    id: str
    seq: int
    already_present: bool
    def __init__(self, line: _Optional[int] = ..., id: _Optional[str] = ..., seq: _Optional[int] = ..., already_present: _Optional[bool] = ...) -> None: ...

class ImportRejection(_message.Message):
    __slots__ = ("line", "reason")
    LINE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    line: int
    reason: str
    def __init__(self, line: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class ImportMemoriesResponse(_message.Message):
    __slots__ = ("imported", "rejected", "last_line", "last_seq", "items", "redactions", "already_present", "stopped", "stopped_code")
    IMPORTED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    LAST_LINE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    ALREADY_PRESENT_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    STOPPED_CODE_FIELD_NUMBER: _ClassVar[int]
    imported: int
    rejected: _containers.RepeatedCompositeFieldContainer[ImportRejection]
    last_line: int
    last_seq: int
    items: _containers.RepeatedCompositeFieldContainer[ImportedItem]
    redactions: _containers.RepeatedCompositeFieldContainer[_common_pb2.Redaction]
    already_present: int
    stopped: str
    stopped_code: str
    def __init__(self, imported: _Optional[int] = ..., rejected: _Optional[_Iterable[_Union[ImportRejection, _Mapping]]] = ..., last_line: _Optional[int] = ..., last_seq: _Optional[int] = ..., items: _Optional[_Iterable[_Union[ImportedItem, _Mapping]]] = ..., redactions: _Optional[_Iterable[_Union[_common_pb2.Redaction, _Mapping]]] = ..., already_present: _Optional[int] = ..., stopped: _Optional[str] = ..., stopped_code: _Optional[str] = ...) -> None: ...

class EnrichMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "questions", "model")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    QUESTIONS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    questions: _containers.RepeatedScalarFieldContainer[str]
    model: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., questions: _Optional[_Iterable[str]] = ..., model: _Optional[str] = ...) -> None: ...

class EnrichMemoryResponse(_message.Message):
    __slots__ = ("seq",)
    SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    def __init__(self, seq: _Optional[int] = ...) -> None: ...

class ExpireMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "expected_version", "at")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    expected_version: int
    at: _timestamp_pb2.Timestamp
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., expected_version: _Optional[int] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExpireMemoryResponse(_message.Message):
    __slots__ = ("memory", "seq", "expired")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    seq: int
    expired: bool
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ..., expired: _Optional[bool] = ...) -> None: ...

class MergeMemoriesRequest(_message.Message):
    __slots__ = ("caller", "ids", "into_id", "replacement", "force", "note")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    INTO_ID_FIELD_NUMBER: _ClassVar[int]
    REPLACEMENT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    ids: _containers.RepeatedScalarFieldContainer[str]
    into_id: str
    replacement: _common_pb2.MemoryInput
    force: bool
    note: str
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., ids: _Optional[_Iterable[str]] = ..., into_id: _Optional[str] = ..., replacement: _Optional[_Union[_common_pb2.MemoryInput, _Mapping]] = ..., force: _Optional[bool] = ..., note: _Optional[str] = ...) -> None: ...

class MergeMemoriesResponse(_message.Message):
    __slots__ = ("survivor", "merged", "seq", "redactions")
    SURVIVOR_FIELD_NUMBER: _ClassVar[int]
    MERGED_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    REDACTIONS_FIELD_NUMBER: _ClassVar[int]
    survivor: _common_pb2.Memory
    merged: _containers.RepeatedCompositeFieldContainer[_common_pb2.Memory]
    seq: int
    redactions: _containers.RepeatedCompositeFieldContainer[_common_pb2.Redaction]
    def __init__(self, survivor: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., merged: _Optional[_Iterable[_Union[_common_pb2.Memory, _Mapping]]] = ..., seq: _Optional[int] = ..., redactions: _Optional[_Iterable[_Union[_common_pb2.Redaction, _Mapping]]] = ...) -> None: ...

class RelateMemoriesRequest(_message.Message):
    __slots__ = ("caller", "id", "other_id", "kind", "note", "replace_kinds")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OTHER_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    REPLACE_KINDS_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    other_id: str
    kind: str
    note: str
    replace_kinds: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., other_id: _Optional[str] = ..., kind: _Optional[str] = ..., note: _Optional[str] = ..., replace_kinds: _Optional[_Iterable[str]] = ...) -> None: ...

class RelateMemoriesResponse(_message.Message):
    __slots__ = ("memory", "seq", "changed")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    seq: int
    changed: bool
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ..., changed: _Optional[bool] = ...) -> None: ...

class DecayMemoryRequest(_message.Message):
    __slots__ = ("caller", "id", "expected_version", "archive", "idle_since")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    ARCHIVE_FIELD_NUMBER: _ClassVar[int]
    IDLE_SINCE_FIELD_NUMBER: _ClassVar[int]
    caller: _common_pb2.CallContext
    id: str
    expected_version: int
    archive: bool
    idle_since: _timestamp_pb2.Timestamp
    def __init__(self, caller: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., id: _Optional[str] = ..., expected_version: _Optional[int] = ..., archive: _Optional[bool] = ..., idle_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DecayMemoryResponse(_message.Message):
    __slots__ = ("memory", "seq", "changed")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    memory: _common_pb2.Memory
    seq: int
    changed: bool
    def __init__(self, memory: _Optional[_Union[_common_pb2.Memory, _Mapping]] = ..., seq: _Optional[int] = ..., changed: _Optional[bool] = ...) -> None: ...
