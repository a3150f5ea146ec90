from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class AttachRequest(_message.Message):
    __slots__ = ("client", "pid")
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    client: str
    pid: int
    def __init__(self, client: _Optional[str] = ..., pid: _Optional[int] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = ("attached",)
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    attached: int
    def __init__(self, attached: _Optional[int] = ...) -> None: ...

class GetNodeInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetNodeInfoResponse(_message.Message):
    __slots__ = ("pid", "home", "http_url", "grpc_address", "version", "attached")
    PID_FIELD_NUMBER: _ClassVar[int]
    HOME_FIELD_NUMBER: _ClassVar[int]
    HTTP_URL_FIELD_NUMBER: _ClassVar[int]
    GRPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ATTACHED_FIELD_NUMBER: _ClassVar[int]
    pid: int
    home: str
    http_url: str
    grpc_address: str
    version: str
    attached: int
    def __init__(self, pid: _Optional[int] = ..., home: _Optional[str] = ..., http_url: _Optional[str] = ..., grpc_address: _Optional[str] = ..., version: _Optional[str] = ..., attached: _Optional[int] = ...) -> None: ...
