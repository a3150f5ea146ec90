from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Event(_message.Message):
    __slots__ = ("seq", "event", "namespace", "body_json")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    BODY_JSON_FIELD_NUMBER: _ClassVar[int]
    seq: int
    event: str
    namespace: str
    body_json: bytes
    def __init__(self, seq: _Optional[int] = ..., event: _Optional[str] = ..., namespace: _Optional[str] = ..., body_json: _Optional[bytes] = ...) -> None: ...
