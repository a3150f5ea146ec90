"""The memory model of DESIGN.md as plain dataclasses, with the JSON form used in the log, the index and APIs."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

# The words and time helpers live in engram.vocab (which the CLI imports without this module); named here too.
from engram.vocab import (  # noqa: F401
    COLD,
    CONFIDENCES,
    DEFAULT_LIST_LIMIT,
    DEFAULT_LIST_ORDER,
    DEFAULT_SEARCH_LIMIT,
    HANDOFF_STATUSES,
    IMPORTANCES,
    INTERNAL_TYPES,
    MEMORY_TYPES,
    PACK_FILE,
    PACK_KEY,
    RELATION_KINDS,
    SAVABLE_TYPES,
    SENSITIVITIES,
    STATUSES,
    TIME_FIELDS,
    format_time,
    parse_time,
)

# Metadata is free JSON, returned as given; nesting is bounded so that every reader (Python's json, pydantic's
# serializer, protobuf, JSON libraries of other languages) can always serve it back.
MAX_METADATA_DEPTH = 20


@dataclass(slots=True)
class Relation:
    kind: str
    memory_id: str
    note: str = ""


@dataclass(slots=True)
class Handoff:
    target_agent: str
    status: str = "pending"
    updated_at: float | None = None
    expires_at: float | None = None  # a pending handoff expires then and becomes a plain memory


@dataclass(slots=True)
class Origin:
    """Where a memory was first written: the device, and for mutations pushed by edge devices their id."""

    device: str = ""
    source_id: str = ""  # <device>:<local seq>


@dataclass(slots=True)
class MemoryVersion:
    """An earlier version of a memory: who changed it, when, from which client."""

    version: int
    content: str
    summary: str = ""
    agent_id: str = ""
    source: str = ""
    updated_at: float | None = None
    seq: int = 0
    conflict: bool = False
    status: str = "active"
    event: str = ""  # the mutation that made this version (memory_saved, memory_updated, ...)


@dataclass(slots=True)
class Memory:
    """One memory. Times are epoch seconds (UTC); JSON shows them as RFC 3339."""

    id: str
    namespace: str
    content: str
    owner_agent: str
    summary: str = ""
    memory_type: str = "general"
    confidence: str = "stated"
    topics: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    importance: str = "normal"
    source: str = ""
    team: str = ""
    project: str = ""
    conversation_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    sensitivity: str = "normal"
    created_at: float | None = None
    updated_at: float | None = None
    valid_at: float | None = None
    invalid_at: float | None = None
    expires_at: float | None = None
    version: int = 1
    history: list[MemoryVersion] = field(default_factory=list)
    status: str = "active"
    superseded_by: str = ""
    relations: list[Relation] = field(default_factory=list)
    handoff: Handoff | None = None
    questions: list[str] = field(default_factory=list)
    access_count: int = 0
    origin: Origin = field(default_factory=Origin)
    seq: int = 0
    context: str = ""  # situates the memory (e.g. the preceding turn); searched, not part of content
    last_accessed_at: float | None = None
    updated_by: str = ""  # the agent that wrote this version
    tier: str = ""  # "" (hot) or COLD: idle and of low importance, ranked lower by search (consolidation's decay)

    @property
    def is_cold(self) -> bool:
        """In the cold tier and not read since it was moved there (a read warms it up again)."""
        return self.tier == COLD and (self.last_accessed_at or 0.0) <= (self.updated_at or 0.0)

    @property
    def last_used_at(self) -> float:
        """When it was last read or written."""
        return max(self.last_accessed_at or 0.0, self.updated_at or self.created_at or 0.0)

    def search_text(self) -> str:
        """The text that is embedded, BM25-indexed and reranked: the content, preceded by its context."""
        return f"{self.context}\n{self.content}" if self.context else self.content

    def to_dict(self) -> dict[str, Any]:
        """The public JSON form (MCP, REST, events): RFC 3339 times, omitted empties for optional parts."""
        data = dataclasses.asdict(self)
        for name in TIME_FIELDS:
            data[name] = format_time(data[name])
        if self.handoff is not None:
            data["handoff"]["updated_at"] = format_time(self.handoff.updated_at)
            data["handoff"]["expires_at"] = format_time(self.handoff.expires_at)
        for version in data["history"]:
            version["updated_at"] = format_time(version["updated_at"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Memory:
        """Inverse of to_dict."""
        values = dict(data)
        values["origin"] = Origin(**(values.get("origin") or {}))
        for name in TIME_FIELDS:
            values[name] = parse_time(values.get(name))
        if values.get("handoff"):
            handoff = dict(values["handoff"])
            handoff["updated_at"] = parse_time(handoff.get("updated_at"))
            handoff["expires_at"] = parse_time(handoff.get("expires_at"))
            values["handoff"] = Handoff(**handoff)
        values["history"] = [
            MemoryVersion(**{**v, "updated_at": parse_time(v.get("updated_at"))}) for v in values.get("history", [])
        ]
        values["relations"] = [Relation(**r) for r in values.get("relations", [])]
        known = _FIELD_NAMES.get(cls)
        if known is None:
            known = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
        return cls(**{k: v for k, v in values.items() if k in known})


_FIELD_NAMES: dict[type, frozenset[str]] = {}  # per class: from_dict runs for every candidate of every search


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON-like value (a scalar is 0, {} or [] is 1), without recursion."""
    if not isinstance(value, dict | list | tuple):
        return 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]  # containers only: a search checks every hit's metadata
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return deepest


def servable_problem(data: dict[str, Any]) -> str | None:
    """Why a stored memory (its JSON form) cannot be served back to callers, or None when it can."""
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return "its metadata is not a JSON object"
    depth = json_depth(metadata or {})
    if depth > MAX_METADATA_DEPTH:
        return f"its metadata is nested {depth} levels deep (at most {MAX_METADATA_DEPTH} can be served)"
    return None


@dataclass(slots=True)
class MemoryInput:
    """What a caller may set when saving a memory (or changing one: then only the named fields count)."""

    content: str = ""
    summary: str = ""
    memory_type: str = ""
    confidence: str = ""
    topics: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    importance: str = ""
    team: str = ""
    project: str = ""
    conversation_id: str = ""
    metadata_json: str = ""
    sensitivity: str = ""
    valid_at: float | None = None
    invalid_at: float | None = None
    expires_at: float | None = None
    handoff_target: str = ""
    context: str = ""


# A MemoryInput field is written once, above; where it goes is derived from it. Each is stored in the Memory field
# of the same name (input_of, the ingest writer), except:
JSON_SUFFIX = "_json"  # X_json carries the memory's X (a JSON object) as JSON text, as the wire does
INPUT_ONLY = ("handoff_target",)  # not a value of the memory: it makes a new memory a handoff (Memory.handoff)
# The inputs an update may not change; every other input may (ingest's update mask, the gateway's update request).
FIXED_INPUTS = (
    "handoff_target",  # a handoff is made when it is saved; its target accepts and completes it (their own calls)
    "conversation_id",  # the conversation a memory was said in: its successors' context was derived from it
)


def stored_name(name: str) -> str:
    """The Memory field (and the gateway's request field) that holds the MemoryInput field ``name``."""
    return name.removesuffix(JSON_SUFFIX)


def _stored_inputs() -> tuple[str, ...]:
    memory_fields = {f.name for f in dataclasses.fields(Memory)}
    names = tuple(f.name for f in dataclasses.fields(MemoryInput) if f.name not in INPUT_ONLY)
    missing = [name for name in names if stored_name(name) not in memory_fields]
    if missing:
        raise TypeError(f"MemoryInput fields {missing} have no field in Memory: add them (or list them in INPUT_ONLY)")
    return names


STORED_INPUTS = _stored_inputs()  # the MemoryInput fields a memory holds (as stored_name)
UPDATABLE = tuple(f.name for f in dataclasses.fields(MemoryInput) if f.name not in FIXED_INPUTS)


@dataclass(slots=True)
class SearchFilter:
    """Filters shared by search and list; empty means no constraint (statuses default to active)."""

    tags: list[str] = field(default_factory=list)  # all of
    owner_agent: str = ""
    memory_types: list[str] = field(default_factory=list)  # any of
    created_after: float | None = None
    created_before: float | None = None
    topics: list[str] = field(default_factory=list)  # any of
    statuses: list[str] = field(default_factory=list)
    conversation_id: str = ""
    project: str = ""
    as_of: float | None = None  # the memories as they were then (search only)
    team: str = ""
    handoff_target: str = ""  # handoffs addressed to this agent
    handoff_statuses: list[str] = field(default_factory=list)  # handoffs in any of these states
    relation_kinds: list[str] = field(default_factory=list)  # memories with a relation of any of these kinds
    pack: str = ""  # the memories of this expert pack (files and captures); "": pack files are left out
    content_keys: list[str] = field(default_factory=list)  # any of (engram.sameness: a save's duplicate lookup)


# A search and a listing are each one object from the gateway to the reader: the gateway's request builds it
# (schemas/requests.py), the search client sends it and the servicer reads it back by the wire's derived conversion
# (engram.grpc.wire, which fails when it and SearchMemoriesRequest drift), and the reader takes it whole. A new
# option is a field here, in the proto and in the gateway's request, and its use in the reader (docs/design.md).
@dataclass(slots=True)
class SearchQuery:
    """One search: the query, how many hits, the filter and the options of the pipeline."""

    query: str
    limit: int = DEFAULT_SEARCH_LIMIT
    flt: SearchFilter = field(default_factory=SearchFilter)  # the proto's filter
    min_seq: int = 0  # wait (bounded) until the index has applied this log sequence
    explain: bool = False
    rerank: bool | None = None  # None: the server's default
    sources: list[str] = field(default_factory=list)  # retrievers; empty: all
    min_relevance: float | None = None  # the relevance floor (dense cosine); None: the server's, 0: none


@dataclass(slots=True)
class ListQuery:
    """One page of a listing, newest first."""

    limit: int = DEFAULT_LIST_LIMIT
    flt: SearchFilter = field(default_factory=SearchFilter)  # the proto's filter
    page_token: str = ""
    min_seq: int = 0
    order: str = DEFAULT_LIST_ORDER  # "created": newest created first; "updated": most recently changed first


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller, as resolved by the gateway: agent ``agent_id`` on ``device``, in ``team``."""

    namespace: str
    agent_id: str
    source: str = ""
    scopes: frozenset[str] = frozenset({"read", "write"})
    device: str = ""
    team: str = ""
    # True when agent_id is the agent the API key is bound to (proven), False when the caller named itself
    # (a shared key, dev mode): such a name is trusted to own writes, but a read by it names no new agent.
    agent_from_key: bool = False

    @property
    def identity(self) -> str:
        """``agent@device`` (the agent alone when the device is unknown)."""
        return f"{self.agent_id}@{self.device}" if self.device else self.agent_id


def input_of(memory: Memory) -> MemoryInput:
    """The memory's current values as an input, so that an update is validated and scrubbed as a whole."""
    values: dict[str, Any] = {}
    for name in STORED_INPUTS:
        value = getattr(memory, stored_name(name))
        if name.endswith(JSON_SUFFIX):
            value = json.dumps(value, ensure_ascii=False) if value else ""
        elif isinstance(value, list):
            value = list(value)
        values[name] = value
    return MemoryInput(**values)
