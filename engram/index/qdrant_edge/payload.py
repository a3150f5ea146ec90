"""What Qdrant Edge stores and is asked, in its own words: packed payloads, plain vectors, filters."""

from __future__ import annotations

import json
from typing import Any

import qdrant_edge as qe

from engram.index import DENSE, INDEXED_FIELDS, KEY, SPARSE
from engram.index.filters import Condition, Filter, Match, MatchAny, Range

# qdrant-edge-py converts a payload value by value, trying bool, then each number type, then string... in turn, and
# every failed try costs a Python exception: about 12 us per string or list, 550 us for a memory's 46 fields, all of
# it holding the GIL (cProfile of a rebuild: half its time). So only the fields that filters, payload indexes,
# facets, set_payload and listings name are stored as fields; the rest travel as one JSON string (PACKED), which
# reads unpack (150 us per point with the JSON). Points stored whole before this still read as they are.
PACKED = "_packed"
TOP_LEVEL = frozenset((*INDEXED_FIELDS, KEY, "relations", "metadata", "questions", "access_count", "last_accessed_at"))

# A point's vectors as plain data (what crosses to the shard's process and back): {DENSE: [float],
# SPARSE: ([index], [value]), QUESTIONS: [[float]]}, each present only when the point has it.
Vectors = dict[str, Any]


def packed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as stored: TOP_LEVEL fields as they are, the others in one JSON string (see PACKED)."""
    stored = {k: v for k, v in payload.items() if k in TOP_LEVEL}
    rest = {k: v for k, v in payload.items() if k not in TOP_LEVEL}
    if rest:
        stored[PACKED] = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return stored


def unpacked(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as written (see packed); a field set later by set_payload wins over its packed value."""
    packed_fields = payload.pop(PACKED, None)
    if packed_fields is None:
        return payload
    out: dict[str, Any] = json.loads(packed_fields)
    out.update(payload)
    return out


def key(payload: dict[str, Any] | None, point: Any) -> str:
    """The id a search hit is known by: its KEY (the point id itself for a point stored without one)."""
    return str((payload or {}).get(KEY) or point)


def to_shard_vectors(vectors: Vectors) -> dict[str, Any]:
    """Plain vectors (see Vectors) as qdrant-edge takes them."""
    out = dict(vectors)
    if SPARSE in out:
        indices, values = out[SPARSE]
        out[SPARSE] = qe.SparseVector(list(indices), list(values))
    return out


def plain_vectors(vector: Any) -> Vectors:
    """A record's vectors as plain data (see Vectors); {} for a record read without them."""
    if not isinstance(vector, dict):
        return {}
    out = dict(vector)
    sparse = out.get(SPARSE)
    if sparse is not None:
        out[SPARSE] = (list(sparse.indices), [float(v) for v in sparse.values])
    return out


def dense(vector: Any) -> list[float]:
    return list(vector.get(DENSE) or []) if isinstance(vector, dict) else []


def query_vector(name: str, vector: Any) -> Any:
    """A query's vector as qdrant-edge takes it: the sparse one as (indices, values) becomes a SparseVector."""
    if name == SPARSE:
        indices, values = vector
        return qe.SparseVector(list(indices), list(values))
    return vector


def to_shard(flt: Filter) -> qe.Filter:
    """The filter in qdrant-edge's words."""
    return qe.Filter(must=[_condition(c) for c in flt.must], must_not=[_condition(c) for c in flt.must_not] or None)


def _condition(condition: Condition) -> qe.FieldCondition:
    match condition:
        case Match(field, value):
            return qe.FieldCondition(field, match=qe.MatchValue(value))
        case MatchAny(field, values):
            return qe.FieldCondition(field, match=qe.MatchAny(list(values)))
        case Range(field, gte, gt, lte, lt):
            return qe.FieldCondition(field, range=qe.RangeFloat(gte=gte, gt=gt, lte=lte, lt=lt))
