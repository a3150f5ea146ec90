"""Event names and bodies: the public contract of docs/events.md, shared by writers and readers of the log."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engram.errors import NotFound
from engram.log import LogEntry
from engram.model import Caller, Memory, format_time

if TYPE_CHECKING:  # the vectors' modules load numpy and the embedder's: imported where vectors are handled, so the
    # readers of event names (an MCP server over stdio, the CLI) start without them
    import numpy as np

    from engram.embed import Embedder
    from engram.embed.sparse import Bm25Encoder, SparseVector

MAX_SPARSE_INDEX = 2**32 - 1  # Qdrant's sparse vector indices are u32

MEMORY_SAVED = "memory_saved"
MEMORY_UPDATED = "memory_updated"
MEMORY_DELETED = "memory_deleted"
MEMORY_SUPERSEDED = "memory_superseded"
MEMORY_EXPIRED = "memory_expired"
CONSOLIDATION_COMPLETE = "consolidation_complete"
CONTRADICTION_DETECTED = "contradiction_detected"
HANDOFF_CREATED = "handoff_created"
HANDOFF_ACCEPTED = "handoff_accepted"
HANDOFF_COMPLETED = "handoff_completed"
HANDOFF_EXPIRED = "handoff_expired"  # a pending handoff nobody accepted in time became a plain memory
MEMORY_ENRICHED = "memory_enriched"  # reverse-HyDE questions were added to a memory's index entry
MEMORY_PURGED = "memory_purged"  # an admin removed a memory for good (its earlier entries are erased from the log)
MEMORY_ACCESSED = "memory_accessed"  # read counts of a batch of memories (no new version)
MEMORY_MERGED = "memory_merged"  # a memory merged into another (archived, merged-into), or the survivor of a merge
MEMORY_DECAYED = "memory_decayed"  # an idle memory of low importance moved to the cold tier, or archived
MEMORY_CONFLICT = "memory_conflict"  # two devices changed a memory while apart: the later one became head
MEMORY_UNSUPERSEDED = "memory_unsuperseded"  # a supersession undone: the old memory active again, the new one unlinked

EVENTS = (
    MEMORY_SAVED, MEMORY_UPDATED, MEMORY_DELETED, MEMORY_SUPERSEDED, MEMORY_EXPIRED, CONSOLIDATION_COMPLETE,
    CONTRADICTION_DETECTED, HANDOFF_CREATED, HANDOFF_ACCEPTED, HANDOFF_COMPLETED, HANDOFF_EXPIRED, MEMORY_ENRICHED,
    MEMORY_PURGED, MEMORY_ACCESSED, MEMORY_MERGED, MEMORY_DECAYED, MEMORY_CONFLICT, MEMORY_UNSUPERSEDED,
)  # fmt: skip
# Events that create a memory (its version 1): a save, or the creation of a handoff (a memory of type handoff).
MEMORY_CREATED_EVENTS = (MEMORY_SAVED, HANDOFF_CREATED)
# Events whose body carries a memory's new version ("memory" and "vectors"): the index applies them.
MEMORY_STATE_EVENTS = (
    MEMORY_SAVED, MEMORY_UPDATED, MEMORY_DELETED, MEMORY_SUPERSEDED, MEMORY_EXPIRED,
    HANDOFF_CREATED, HANDOFF_ACCEPTED, HANDOFF_COMPLETED, HANDOFF_EXPIRED, MEMORY_MERGED, MEMORY_DECAYED,
    CONTRADICTION_DETECTED, MEMORY_UNSUPERSEDED,
)  # fmt: skip
# Events that may change another agent's memory (newest wins): their bodies name the memory's owner (owner_agent).
OWNER_NAMED_EVENTS = (MEMORY_SUPERSEDED, MEMORY_UNSUPERSEDED)
SCHEMA_VERSION = 1
# Who writes consolidation's changes (expiry, merges, decay, ...): its agent id and source in every event body.
CONSOLIDATION_AGENT = "engram-consolidation"
CONSOLIDATION_SOURCE = "consolidation"


def event_body(
    event: str,
    memory: Memory,
    caller: Caller,
    *,
    vectors: dict[str, Any] | None = None,
    pair: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The JSON body of an event about one memory; the log adds `seq` when it appends. A supersession's events name
    its pair (superseded_id, superseding_id): ``pair`` for a memory_unsuperseded, which the memory no longer says."""
    body: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "event": event,
        "namespace": memory.namespace,
        "agent": caller.agent_id,
        "device": caller.device,
        "source": caller.source,
        "team": memory.team,
        "memory_id": memory.id,
        "version": memory.version,
        "memory_type": memory.memory_type,
        "topics": memory.topics,
        "tags": memory.tags,
        "importance": memory.importance,
        "time": format_time(memory.updated_at),
        "memory": memory.to_dict(),
    }
    if event in OWNER_NAMED_EVENTS:  # the owner is told when another agent's act changes its memory
        body["owner_agent"] = memory.owner_agent
    if event == MEMORY_SUPERSEDED:
        pair = (memory.id, memory.superseded_by)
    if pair is not None:
        body["superseded_id"], body["superseding_id"] = pair
    if vectors is not None:
        body["vectors"] = vectors
    return body


def memory_vectors(
    embedder: Embedder, sparse: Bm25Encoder, memories: list[Memory], given: Sequence[np.ndarray | None] = ()
) -> list[dict[str, Any]]:
    """The "vectors" of each memory's event body: its dense and BM25 vectors, with their model ids. ``given``: a
    dense vector already made (and checked: engram.embed.given) per memory, None where the embedder makes it."""
    # Dense embeds the content alone: context dilutes its meaning. BM25 also indexes the context, whose exact words
    # often name what the content only refers to, but as a weaker field than the content (measured in docs/search.md).
    rows = list(given) or [None] * len(memories)
    missing = [memory.content for memory, row in zip(memories, rows, strict=True) if row is None]
    made = iter(embedder.embed(missing) if missing else ())
    dense = [row if row is not None else next(made) for row in rows]
    out = []
    for memory, row in zip(memories, dense, strict=True):
        terms = sparse.fields(memory.content, memory.context)
        out.append(
            {
                "model": embedder.model_id,
                "dense": encode_dense(row),
                "sparse_model": sparse.model_id,
                "sparse": {"indices": terms.indices, "values": terms.values},
            }
        )
    return out


def encode_dense(row: np.ndarray) -> str:
    """A dense vector as event bodies carry it (little-endian float32, base64)."""
    import numpy as np

    return base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode()


def decode_dense(vectors: dict[str, Any]) -> list[float]:
    """The dense vector of an event body (little-endian float32, base64)."""
    import numpy as np

    return np.frombuffer(base64.b64decode(vectors["dense"]), dtype="<f4").tolist()


def decode_questions(vectors: dict[str, Any]) -> list[list[float]]:
    import numpy as np

    return [np.frombuffer(base64.b64decode(q), dtype="<f4").tolist() for q in vectors.get("questions", [])]


def decode_sparse(vectors: dict[str, Any]) -> SparseVector:
    from engram.embed.sparse import SparseVector

    sparse = vectors.get("sparse") or {}
    indices, values = list(sparse.get("indices", [])), [float(v) for v in sparse.get("values", [])]
    # What Qdrant cannot take is refused here, before it reaches the index: a sparse vector with fewer values than
    # indices makes Qdrant Edge's Rust code panic mid-write, and an index beyond u32 overflows.
    if len(indices) != len(values) or len(set(indices)) != len(indices):
        raise ValueError(f"a sparse vector needs one value per distinct index ({len(indices)} and {len(values)})")
    if not all(type(i) is int and 0 <= i <= MAX_SPARSE_INDEX for i in indices):
        raise ValueError("a sparse vector's indices are whole numbers from 0 to 2**32-1")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("a sparse vector's values are finite numbers")
    return SparseVector(indices, values)


def newer_than(namespace: str, memory_id: str, version: int) -> Callable[[LogEntry], bool]:
    """Flags an entry that wrote a newer version of the memory (or purged it) than the one a change is based on.

    A memory is (namespace, id): an entry about the same id in another namespace is another memory."""

    def stale(entry: LogEntry) -> bool:
        body = entry.body
        if body.get("memory_id") != memory_id or body.get("namespace") != namespace:
            return False
        return body.get("event") == MEMORY_PURGED or ("memory" in body and int(body.get("version", 0)) > version)

    return stale


def state_in(entry: LogEntry, memory_id: str) -> Memory:
    if entry.body.get("event") == MEMORY_PURGED or "memory" not in entry.body:
        raise NotFound(memory_id)
    memory = Memory.from_dict(entry.body["memory"])
    memory.seq = entry.seq
    return memory
