"""The index port: where memories are stored for search, derived from the log and rebuildable from it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engram.model import SearchFilter

if TYPE_CHECKING:  # the shard's own process (engram.index.qdrant_edge.process) loads no embedder
    from engram.embed.sparse import SparseVector

DENSE = "dense"
CREATED_TS = "_created_ts"  # creation time as epoch seconds: range filters and recent-first order
META_ID = "00000000-0000-0000-0000-000000000001"  # the point holding the applied log sequence
# The point holding the indexer's state (the agent registry): large, so written only when the indexer says, not
# with every applied sequence. Neither bookkeeping point has a namespace: no query ever matches them.
STATE_ID = "00000000-0000-0000-0000-000000000002"
BOOKKEEPING_IDS = (META_ID, STATE_ID)
# A version's validity, as epoch seconds: recorded [VALID_FROM, VALID_TO) (when it was the current version) and
# in the world [WORLD_FROM, WORLD_TO) (valid_at, invalid_at). Open ends are +-FAR, so every point has every field
# and range filters need no "is empty" cases.
VALID_FROM = "_valid_from"
VALID_TO = "_valid_to"
WORLD_FROM = "_world_from"
WORLD_TO = "_world_to"
EXPIRES_TS = "_expires_ts"  # when the memory is due to expire (a pending handoff's deadline counts), or FAR
FAR = 1e15
HANDOFF_TO = "_handoff_to"  # a handoff's target, and its agent part for an agent@device target (handoff filters)
HANDOFF_STATUS = "_handoff_status"  # a handoff's status ("" for other memories)
RELATION_KIND = "relations[].kind"  # the kinds of a memory's relations (the relation filter)
CONTENT_KEY = "_content_key"  # engram.sameness.content_key: a save that repeats a memory finds it by this
KEYWORD_FIELDS = (
    "id", "tags", "owner_agent", "memory_type", "status", "topics", "conversation_id", "project", "team",
    HANDOFF_TO, HANDOFF_STATUS, CONTENT_KEY,
)  # fmt: skip
FLOAT_FIELDS = (CREATED_TS, VALID_FROM, VALID_TO, WORLD_FROM, WORLD_TO, EXPIRES_TS)
INDEXED_FIELDS = ("namespace", *KEYWORD_FIELDS, *FLOAT_FIELDS)  # every payload index the queries rely on
SPARSE = "bm25"
QUESTIONS = "questions"
# The orders a listing can take, by the payload field they sort on: creation time, or the time the current
# version was written (a current point's VALID_FROM), i.e. the last change.
ORDERS = {"created": CREATED_TS, "updated": VALID_FROM}
DEFAULT_ORDER = "created"
# A memory's identity is (namespace, id): the stored point id is derived from both (point_id), so nothing written
# in one namespace can overwrite, move or delete another namespace's point, whatever ids a writer chose. KEY keeps
# the id the caller knows (a memory id, or version_point_id of one of its versions) in the payload; POINT is added
# to the payloads a listing reads (the stored point id: the tie order of a listing, and its page position).
KEY = "_key"
POINT = "_point"
POINT_IDS = uuid.UUID("6f0c52c5-5a7e-4f43-9a53-3d0d6f0e5c21")  # the uuid5 namespace of point ids


class IndexDamaged(Exception):
    """The index could not be opened or fails its self-check; it is derived data, so it is rebuilt from the log."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"the index at {path} is damaged: {reason}")
        self.path = path
        self.reason = reason


@dataclass(slots=True)
class IndexPoint:
    """One memory version as the index stores it: its JSON form plus its vectors."""

    id: str
    payload: dict[str, Any]  # Memory.to_dict() plus the index-only fields below
    dense: list[float]
    sparse: SparseVector
    questions: list[list[float]] = field(default_factory=list)


@dataclass(slots=True)
class Scored:
    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Position:
    """Where a listing stopped: its last memory's time (in the listing's order: created or updated) and point id.

    Listings run newest first, ties broken by stored point id (ascending), which is a total order: the next page
    starts just after this position, so no memory sharing a timestamp with a page's last one is skipped or repeated.
    """

    ts: float
    id: str = ""  # "": before every id, so the whole group at ts comes next


@dataclass(slots=True)
class IndexQuery:
    namespace: str
    filter: SearchFilter
    limit: int
    dense: list[float] | None = None
    sparse: SparseVector | None = None
    questions: list[float] | None = None
    with_payload: bool = True  # False: ids and scores only (the caller fetches payloads of the hits it keeps)
    fields: tuple[str, ...] = ()  # without the payload: these payload fields of each hit all the same


class MemoryIndex(Protocol):
    """Implemented by the Qdrant Edge adapter (embedded, edge) and the Qdrant server adapter (cluster).

    The search service keeps two: the current version of every memory (key = memory id), and the earlier versions
    (key = version_point_id(memory id, version), payload "id" = the memory id). Every method takes and answers keys;
    the stored point id is point_id(namespace, key), so namespaces never share a point.
    """

    def upsert(self, points: list[IndexPoint]) -> None: ...

    def retrieve(self, namespace: str, ids: list[str]) -> list[dict[str, Any]]: ...

    def retrieve_points(self, namespace: str, ids: list[str], *, dense_only: bool = False) -> list[IndexPoint]:
        """Points with their payloads and vectors (to move a replaced version into the versions index); with
        ``dense_only``, only their dense vectors (a search's candidates: each other vector costs a copy)."""
        ...

    def versions_of(self, namespace: str, memory_id: str) -> list[dict[str, Any]]:
        """Payloads whose "id" is memory_id (on the versions index: every earlier version), in any order."""
        ...

    def delete_memory(self, namespace: str, memory_id: str) -> None:
        """Removes every point whose "id" is memory_id (a purge)."""
        ...

    def erase_deleted(self) -> None:
        """After delete_memory: makes sure no file of the index keeps what was deleted (Qdrant Edge rewrites its
        shard; a Qdrant server is left to its own housekeeping). Cheap when nothing was deleted."""
        ...

    def set_fields(self, namespace: str, fields: dict[str, dict[str, Any]]) -> None:
        """Sets payload fields of existing points: {point id: {field: value}} (access counts)."""
        ...

    def facet(self, namespace: str, key: str, flt: SearchFilter | None = None) -> dict[str, int]:
        """How many points have each value of a keyword field (every status unless flt says otherwise)."""
        ...

    def namespaces(self) -> dict[str, int]:
        """Every namespace with active memories, and how many."""
        ...

    def due(self, at: float, limit: int) -> list[dict[str, Any]]:
        """Active points of every namespace whose EXPIRES_TS is at or before ``at``, up to limit."""
        ...

    def update_questions(self, namespace: str, id: str, questions: list[list[float]], texts: list[str]) -> bool:
        """Sets a memory's question vectors and their texts; False when the memory is not in namespace."""
        ...

    def search(self, request: IndexQuery) -> dict[str, list[Scored]]:
        """One ranked list per vector given in the request, keyed by vector name."""
        ...

    def recent(
        self, namespace: str, flt: SearchFilter, limit: int, after: Position | None = None, *, by: str = CREATED_TS
    ) -> list[dict[str, Any]]:
        """Up to `limit` payloads newest first by the float field `by` (one of ORDERS' fields), ties by id,
        starting just after `after` (see listing.py)."""
        ...

    def count(self, namespace: str, flt: SearchFilter | None = None) -> int: ...

    def held_elsewhere(self, namespace: str, memory_id: str) -> bool:
        """Whether a namespace other than ``namespace`` holds a memory with this id (a device's chosen id is
        refused then: its owner never sees which namespace)."""
        ...

    def scan(
        self, namespace: str, flt: SearchFilter, *, with_vectors: bool = False, page: int = 256
    ) -> Iterator[list[tuple[dict[str, Any], list[float]]]]:
        """Every payload matching flt, a page at a time, each with its dense vector ([] without with_vectors)."""
        ...

    def point_count(self) -> int:
        """Memories held, in every namespace (the index's own bookkeeping not counted)."""
        ...

    def check(self) -> str | None:
        """What is structurally wrong with the index (e.g. a payload index is missing), or None."""
        ...

    def applied_seq(self) -> int: ...

    def holds_questions(self) -> bool:
        """Whether any point may hold question vectors (False: a search needs no questions retriever)."""
        ...

    def skipped_count(self) -> int:
        """How many memory-creating entries up to applied_seq were skipped as unservable (not in the index)."""
        ...

    def indexer_state(self) -> dict[str, Any]:
        """What the indexer derived from the log besides points (e.g. the agent registry), as last given to
        set_applied_seq; {} when none was recorded."""
        ...

    def set_applied_seq(self, seq: int, *, skipped: int = 0, state: dict[str, Any] | None = None) -> None:
        """Records the last applied log sequence, written after the points it covers; with ``state`` (JSON
        values), first records that too (else the state recorded before stays). A restart resumes from both."""
        ...

    def reset(self) -> None: ...

    def maintain(self) -> None:
        """Housekeeping when the indexer is idle (e.g. building the vector index); cheap when nothing to do."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def stored_point(point_id: str, payload: dict[str, Any], vectors: dict[str, Any]) -> IndexPoint:
    """An IndexPoint from what an adapter read back: named vectors, the sparse one as indices and values (or an object
    with both)."""
    from engram.embed.sparse import SparseVector

    sparse = vectors.get(SPARSE)
    return IndexPoint(
        id=point_id,
        payload=dict(payload),
        dense=list(vectors.get(DENSE) or []),
        sparse=SparseVector([], []) if sparse is None else SparseVector(*_indices_values(sparse)),
        questions=[list(q) for q in vectors.get(QUESTIONS) or []],
    )


def _indices_values(sparse: Any) -> tuple[list[int], list[float]]:
    indices, values = sparse if isinstance(sparse, tuple) else (sparse.indices, sparse.values)
    return list(indices), [float(v) for v in values]


def point_id(namespace: str, key: str) -> str:
    """The stored point id of ``key`` (a memory id, or a version's id) in ``namespace``: deterministic, so replays
    overwrite, and never the same for two namespaces."""
    return str(uuid.uuid5(POINT_IDS, f"{namespace}\0{key}"))


def keyed(payloads: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """The payloads of ``namespace`` among those read back, as they were given (a check: point ids already keep
    namespaces apart)."""
    return [{k: v for k, v in p.items() if k != KEY} for p in payloads if p.get("namespace") == namespace]


def version_point_id(memory_id: str, version: int) -> str:
    """The versions index's point id of one version of a memory (deterministic, so replays overwrite)."""
    return str(uuid.uuid5(uuid.UUID(memory_id), str(version)))
