"""Conversions between the protobuf contract and the domain model, shared by servicers and gRPC clients."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, TypeVar

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.protobuf.timestamp_pb2 import Timestamp

from engram import model
from engram.v1 import common_pb2 as pb
from engram.v1 import search_pb2


def ts_to_epoch(message: Any, name: str) -> float | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return stamp.seconds + stamp.nanos / 1e9


def set_ts(message: Any, name: str, epoch: float | None) -> None:
    if epoch is not None:
        seconds = int(epoch // 1)
        getattr(message, name).FromNanoseconds(seconds * 1_000_000_000 + round((epoch - seconds) * 1e9))


# --- generic conversion -------------------------------------------------------------------------------------
#
# The proto is the wire contract and the dataclasses of engram.model are the one domain description; the
# conversion between them is derived from both, field by field, so a field added to one and not the other fails
# the first conversion (and tests/unit/test_wire.py) instead of being dropped silently. Field correspondences:
#   enum            <-> str ("action-item"; UNSPECIFIED <-> the dataclass default)
#   Timestamp       <-> float | None (epoch seconds)
#   message         <-> nested dataclass (None when absent, for optional ones)
#   repeated        <-> list
#   string x_json   <-> dict x (a JSON object, returned as given)
#   optional scalar <-> X | None (None when not set)
#   enum X_ON/X_OFF <-> bool | None (UNSPECIFIED <-> None: the server's default)
# A request's caller travels beside the dataclass that holds its options (``request_to_proto``).

_Domain = TypeVar("_Domain")
_Message = TypeVar("_Message", bound=Message)
_JSON_SUFFIX = "_json"
_TIMESTAMP = Timestamp.DESCRIPTOR.full_name


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    proto: FieldDescriptor
    name: str  # the dataclass field
    kind: str  # enum | switch | time | message | json | scalar
    repeated: bool
    nested: Any = None  # the dataclass of a message field
    optional: bool = False  # a message or scalar field that may be None
    default: Any = None  # the dataclass default of an enum field (what UNSPECIFIED means)


_PLANS: dict[tuple[Any, Any], tuple[_Field, ...]] = {}


def _plan(message_type: Any, cls: Any) -> tuple[_Field, ...]:
    """How each field of ``message_type`` maps to a field of the dataclass ``cls``; raises if they drift apart."""
    plan = _PLANS.get((message_type, cls))
    if plan is None:
        plan = _PLANS[(message_type, cls)] = _make_plan(message_type, cls)
    return plan


def _make_plan(message_type: Any, cls: Any) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    defaults = {f.name: "" if f.default is dataclasses.MISSING else f.default for f in dataclasses.fields(cls)}
    plan: list[_Field] = []
    for proto in message_type.DESCRIPTOR.fields:
        repeated = proto.is_repeated
        name = proto.name
        if name == CALLER:  # a request's caller: beside its options (request_to_proto)
            continue
        name = _DOMAIN_NAMES.get(name, name)
        if name not in hints and name.endswith(_JSON_SUFFIX) and name.removesuffix(_JSON_SUFFIX) in hints:
            plan.append(_Field(proto, name.removesuffix(_JSON_SUFFIX), "json", repeated))
            continue
        if name not in hints:
            raise TypeError(f"{message_type.__name__}.{name} has no field in {cls.__name__}: add it to engram.model")
        if proto.type == FieldDescriptor.TYPE_ENUM and hints[name] == bool | None:
            plan.append(_Field(proto, name, "switch", repeated))
        elif proto.type == FieldDescriptor.TYPE_ENUM:
            plan.append(_Field(proto, name, "enum", repeated, default=defaults[name]))
        elif proto.type == FieldDescriptor.TYPE_MESSAGE and proto.message_type.full_name == _TIMESTAMP:
            plan.append(_Field(proto, name, "time", repeated))
        elif proto.type == FieldDescriptor.TYPE_MESSAGE:
            nested = _dataclass_in(hints[name])
            optional = type(None) in typing.get_args(hints[name])
            plan.append(_Field(proto, name, "message", repeated, nested=nested, optional=optional))
        else:
            optional = proto.has_presence and type(None) in typing.get_args(hints[name])
            plan.append(_Field(proto, name, "scalar", repeated, optional=optional))
    mapped = {f.name for f in plan}
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in mapped]
    if missing:
        raise TypeError(f"{cls.__name__} fields {missing} are not in {message_type.__name__}: add them to the proto")
    return tuple(plan)


def _dataclass_in(hint: Any) -> Any:
    """The dataclass inside ``X``, ``X | None`` or ``list[X]``."""
    for candidate in (hint, *typing.get_args(hint)):
        if dataclasses.is_dataclass(candidate):
            return candidate
    raise TypeError(f"{hint} is not a dataclass (or a list or optional of one)")


def to_proto(value: Any, message_type: type[_Message]) -> _Message:
    """A domain dataclass as the proto message ``message_type``."""
    out = message_type()
    for f in _plan(message_type, type(value)):
        item = getattr(value, f.name)
        if f.kind == "json":
            if item:
                setattr(out, f.proto.name, json.dumps(item, ensure_ascii=False))
        elif f.kind == "time":
            set_ts(out, f.proto.name, item)
        elif f.kind == "enum":
            if f.repeated:
                getattr(out, f.proto.name).extend(_enum_number(f.proto.enum_type, v) for v in item)
            else:
                setattr(out, f.proto.name, _enum_number(f.proto.enum_type, item))
        elif f.kind == "switch":
            setattr(out, f.proto.name, _enum_number(f.proto.enum_type, "" if item is None else "on" if item else "off"))
        elif f.kind == "message":
            nested_type = GetMessageClass(f.proto.message_type)
            if f.repeated:
                getattr(out, f.proto.name).extend(to_proto(element, nested_type) for element in item)
            elif item is not None:
                getattr(out, f.proto.name).CopyFrom(to_proto(item, nested_type))
        elif f.repeated:
            getattr(out, f.proto.name).extend(item)
        elif item is not None or not f.optional:
            setattr(out, f.proto.name, item)
    return out


def from_proto(message: Message, cls: type[_Domain]) -> _Domain:
    """The proto ``message`` as the domain dataclass ``cls``."""
    values: dict[str, Any] = {}
    for f in _plan(type(message), cls):
        item = getattr(message, f.proto.name)
        if f.kind == "json":
            values[f.name] = json.loads(item) if item else {}
        elif f.kind == "time":
            values[f.name] = ts_to_epoch(message, f.proto.name)
        elif f.kind == "enum":
            if f.repeated:
                values[f.name] = [_enum_text(f.proto.enum_type, n) for n in item]
            else:
                values[f.name] = _enum_text(f.proto.enum_type, item) or f.default
        elif f.kind == "switch":
            values[f.name] = _SWITCH[_enum_text(f.proto.enum_type, item)]
        elif f.kind == "message":
            if f.repeated:
                values[f.name] = [from_proto(element, f.nested) for element in item]
            elif f.optional and not message.HasField(f.proto.name):
                values[f.name] = None
            else:
                values[f.name] = from_proto(item, f.nested)
        elif f.optional and not message.HasField(f.proto.name):
            values[f.name] = None
        else:
            values[f.name] = list(item) if f.repeated else item
    return cls(**values)


CALLER = "caller"
_DOMAIN_NAMES = {"filter": "flt"}  # a proto field named as a Python builtin: its name in the dataclasses
_SWITCH = {"": None, "on": True, "off": False}


def request_to_proto(caller: model.Caller, options: Any, message_type: type[_Message]) -> _Message:
    """A request message: its caller, and every other field from the dataclass ``options`` of the same names."""
    message = to_proto(options, message_type)
    message.caller.CopyFrom(caller_to_proto(caller))  # type: ignore[attr-defined]
    return message


def request_from_proto(message: Message, cls: type[_Domain]) -> tuple[model.Caller, _Domain]:
    """The caller of a request message and its other fields as the dataclass ``cls``."""
    return caller_from_proto(message.caller), from_proto(message, cls)  # type: ignore[attr-defined]


def _enum_prefix(enum: EnumDescriptor) -> str:
    return enum.values_by_number[0].name.removesuffix("_UNSPECIFIED")  # MEMORY_TYPE_UNSPECIFIED -> MEMORY_TYPE


def _enum_number(enum: EnumDescriptor, value: str) -> int:
    """ "action-item" -> MEMORY_TYPE_ACTION_ITEM's number; "" -> 0 (UNSPECIFIED). Raises ValueError."""
    if not value:
        return 0
    prefix = _enum_prefix(enum)
    found = enum.values_by_name.get(f"{prefix}_{value.upper().replace('-', '_')}")
    if found is None:
        raise ValueError(f"{value!r} is not a {enum.name}")
    return int(found.number)


def _enum_text(enum: EnumDescriptor, number: int) -> str:
    """MEMORY_TYPE_ACTION_ITEM's number -> "action-item"; UNSPECIFIED (or an unknown number) -> ""."""
    found = enum.values_by_number.get(number)
    if found is None or number == 0:
        return ""
    return found.name[len(_enum_prefix(enum)) + 1 :].lower().replace("_", "-")


# --- the domain's messages ----------------------------------------------------------------------------------


def memory_to_proto(memory: model.Memory) -> pb.Memory:
    return to_proto(memory, pb.Memory)


def memory_from_proto(message: pb.Memory) -> model.Memory:
    return from_proto(message, model.Memory)


def input_to_proto(draft: model.MemoryInput) -> pb.MemoryInput:
    return to_proto(draft, pb.MemoryInput)


def input_from_proto(message: pb.MemoryInput) -> model.MemoryInput:
    return from_proto(message, model.MemoryInput)


def filter_to_proto(flt: model.SearchFilter) -> search_pb2.SearchFilter:
    return to_proto(flt, search_pb2.SearchFilter)


def filter_from_proto(message: search_pb2.SearchFilter) -> model.SearchFilter:
    return from_proto(message, model.SearchFilter)


def caller_to_proto(caller: model.Caller) -> pb.CallContext:
    return pb.CallContext(
        namespace=caller.namespace, agent_id=caller.agent_id, source=caller.source, scopes=sorted(caller.scopes),
        device=caller.device, team=caller.team, agent_from_key=caller.agent_from_key,
    )  # fmt: skip


def caller_from_proto(message: pb.CallContext) -> model.Caller:
    return model.Caller(
        namespace=message.namespace,
        agent_id=message.agent_id,
        source=message.source,
        scopes=frozenset(message.scopes) or frozenset({"read", "write"}),
        device=message.device,
        team=message.team,
        agent_from_key=message.agent_from_key,
    )
