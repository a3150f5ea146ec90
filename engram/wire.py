"""Conversions between the protobuf contract and the domain model, shared by servicers and gRPC clients."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from engram import model
from engram.v1 import common_pb2 as pb
from engram.v1 import search_pb2

_ENUMS: dict[str, Any] = {
    "MEMORY_TYPE": pb.MemoryType,
    "CONFIDENCE": pb.Confidence,
    "IMPORTANCE": pb.Importance,
    "SENSITIVITY": pb.Sensitivity,
    "STATUS": pb.Status,
    "RELATION_KIND": pb.RelationKind,
    "HANDOFF_STATUS": pb.HandoffStatus,
}


def enum_to_str(prefix: str, number: int) -> str:
    """MEMORY_TYPE_ACTION_ITEM → "action-item"; UNSPECIFIED → ""."""
    name = _ENUMS[prefix].Name(number)
    suffix = name[len(prefix) + 1 :]
    return "" if suffix == "UNSPECIFIED" else suffix.lower().replace("_", "-")


def str_to_enum(prefix: str, value: str) -> Any:
    """ "action-item" → MEMORY_TYPE_ACTION_ITEM; "" → UNSPECIFIED. Raises ValueError for unknown values."""
    if not value:
        return 0
    return int(_ENUMS[prefix].Value(f"{prefix}_{value.upper().replace('-', '_')}"))


def ts_to_epoch(message: Any, name: str) -> float | None:
    if not message.HasField(name):
        return None
    stamp: Timestamp = getattr(message, name)
    return stamp.seconds + stamp.nanos / 1e9


def set_ts(message: Any, name: str, epoch: float | None) -> None:
    if epoch is not None:
        seconds = int(epoch // 1)
        getattr(message, name).FromNanoseconds(seconds * 1_000_000_000 + round((epoch - seconds) * 1e9))


def memory_to_proto(memory: model.Memory) -> pb.Memory:
    out = pb.Memory(
        id=memory.id,
        namespace=memory.namespace,
        content=memory.content,
        summary=memory.summary,
        memory_type=str_to_enum("MEMORY_TYPE", memory.memory_type),
        confidence=str_to_enum("CONFIDENCE", memory.confidence),
        topics=memory.topics,
        tags=memory.tags,
        importance=str_to_enum("IMPORTANCE", memory.importance),
        owner_agent=memory.owner_agent,
        source=memory.source,
        team=memory.team,
        project=memory.project,
        conversation_id=memory.conversation_id,
        metadata_json=json.dumps(memory.metadata, ensure_ascii=False) if memory.metadata else "",
        sensitivity=str_to_enum("SENSITIVITY", memory.sensitivity),
        version=memory.version,
        status=str_to_enum("STATUS", memory.status),
        superseded_by=memory.superseded_by,
        questions=memory.questions,
        access_count=memory.access_count,
        origin=pb.Origin(device=memory.origin_device, source_id=memory.origin_source_id),
        seq=memory.seq,
        context=memory.context,
    )
    for name in model.TIME_FIELDS:
        set_ts(out, name, getattr(memory, name))
    for version in memory.history:
        item = out.history.add(
            version=version.version, content=version.content, summary=version.summary,
            agent_id=version.agent_id, source=version.source, seq=version.seq, conflict=version.conflict,
        )  # fmt: skip
        set_ts(item, "updated_at", version.updated_at)
    for relation in memory.relations:
        out.relations.add(
            kind=str_to_enum("RELATION_KIND", relation.kind), memory_id=relation.memory_id, note=relation.note
        )
    if memory.handoff is not None:
        out.handoff.target_agent = memory.handoff.target_agent
        out.handoff.status = str_to_enum("HANDOFF_STATUS", memory.handoff.status)
        set_ts(out.handoff, "updated_at", memory.handoff.updated_at)
    return out


def memory_from_proto(message: pb.Memory) -> model.Memory:
    memory = model.Memory(
        id=message.id,
        namespace=message.namespace,
        content=message.content,
        owner_agent=message.owner_agent,
        summary=message.summary,
        memory_type=enum_to_str("MEMORY_TYPE", message.memory_type) or "general",
        confidence=enum_to_str("CONFIDENCE", message.confidence) or "stated",
        topics=list(message.topics),
        tags=list(message.tags),
        importance=enum_to_str("IMPORTANCE", message.importance) or "normal",
        source=message.source,
        team=message.team,
        project=message.project,
        conversation_id=message.conversation_id,
        metadata=json.loads(message.metadata_json) if message.metadata_json else {},
        sensitivity=enum_to_str("SENSITIVITY", message.sensitivity) or "normal",
        version=message.version,
        status=enum_to_str("STATUS", message.status) or "active",
        superseded_by=message.superseded_by,
        questions=list(message.questions),
        access_count=message.access_count,
        origin_device=message.origin.device,
        origin_source_id=message.origin.source_id,
        seq=message.seq,
        context=message.context,
    )
    for name in model.TIME_FIELDS:
        setattr(memory, name, ts_to_epoch(message, name))
    memory.history = [
        model.MemoryVersion(
            version=v.version,
            content=v.content,
            summary=v.summary,
            agent_id=v.agent_id,
            source=v.source,
            updated_at=ts_to_epoch(v, "updated_at"),
            seq=v.seq,
            conflict=v.conflict,
        )
        for v in message.history
    ]
    memory.relations = [
        model.Relation(enum_to_str("RELATION_KIND", r.kind), r.memory_id, r.note) for r in message.relations
    ]
    if message.HasField("handoff"):
        memory.handoff = model.Handoff(
            message.handoff.target_agent,
            enum_to_str("HANDOFF_STATUS", message.handoff.status) or "pending",
            ts_to_epoch(message.handoff, "updated_at"),
        )
    return memory


def input_to_proto(draft: model.MemoryInput) -> pb.MemoryInput:
    out = pb.MemoryInput(
        content=draft.content,
        summary=draft.summary,
        memory_type=str_to_enum("MEMORY_TYPE", draft.memory_type),
        confidence=str_to_enum("CONFIDENCE", draft.confidence),
        topics=draft.topics,
        tags=draft.tags,
        importance=str_to_enum("IMPORTANCE", draft.importance),
        team=draft.team,
        project=draft.project,
        conversation_id=draft.conversation_id,
        metadata_json=draft.metadata_json,
        sensitivity=str_to_enum("SENSITIVITY", draft.sensitivity),
        handoff_target=draft.handoff_target,
        context=draft.context,
    )
    for name in ("valid_at", "invalid_at", "expires_at"):
        set_ts(out, name, getattr(draft, name))
    return out


def input_from_proto(message: pb.MemoryInput) -> model.MemoryInput:
    return model.MemoryInput(
        content=message.content,
        summary=message.summary,
        memory_type=enum_to_str("MEMORY_TYPE", message.memory_type),
        confidence=enum_to_str("CONFIDENCE", message.confidence),
        topics=list(message.topics),
        tags=list(message.tags),
        importance=enum_to_str("IMPORTANCE", message.importance),
        team=message.team,
        project=message.project,
        conversation_id=message.conversation_id,
        metadata_json=message.metadata_json,
        sensitivity=enum_to_str("SENSITIVITY", message.sensitivity),
        valid_at=ts_to_epoch(message, "valid_at"),
        invalid_at=ts_to_epoch(message, "invalid_at"),
        expires_at=ts_to_epoch(message, "expires_at"),
        handoff_target=message.handoff_target,
        context=message.context,
    )


def filter_to_proto(flt: model.SearchFilter) -> search_pb2.SearchFilter:
    out = search_pb2.SearchFilter(
        tags=flt.tags,
        owner_agent=flt.owner_agent,
        memory_types=[str_to_enum("MEMORY_TYPE", t) for t in flt.memory_types],
        topics=flt.topics,
        statuses=[str_to_enum("STATUS", s) for s in flt.statuses],
        conversation_id=flt.conversation_id,
        project=flt.project,
    )
    set_ts(out, "created_after", flt.created_after)
    set_ts(out, "created_before", flt.created_before)
    return out


def filter_from_proto(message: search_pb2.SearchFilter) -> model.SearchFilter:
    return model.SearchFilter(
        tags=list(message.tags),
        owner_agent=message.owner_agent,
        memory_types=[enum_to_str("MEMORY_TYPE", t) for t in message.memory_types],
        created_after=ts_to_epoch(message, "created_after"),
        created_before=ts_to_epoch(message, "created_before"),
        topics=list(message.topics),
        statuses=[enum_to_str("STATUS", s) for s in message.statuses],
        conversation_id=message.conversation_id,
        project=message.project,
    )


def caller_to_proto(caller: model.Caller) -> pb.CallContext:
    return pb.CallContext(
        namespace=caller.namespace, agent_id=caller.agent_id, source=caller.source, scopes=sorted(caller.scopes)
    )


def caller_from_proto(message: pb.CallContext) -> model.Caller:
    return model.Caller(
        namespace=message.namespace,
        agent_id=message.agent_id,
        source=message.source,
        scopes=frozenset(message.scopes) or frozenset({"read", "write"}),
    )
