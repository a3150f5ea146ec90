"""Qdrant server adapter: one collection on a Qdrant server (cluster mode), or qdrant-client's local mode."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Self

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from engram.config import SettingsError
from engram.errors import Unavailable
from engram.index import (
    BOOKKEEPING_IDS,
    CREATED_TS,
    DENSE,
    FLOAT_FIELDS,
    KEY,
    KEYWORD_FIELDS,
    META_ID,
    POINT,
    QUESTIONS,
    SPARSE,
    STATE_ID,
    IndexPoint,
    IndexQuery,
    Position,
    Scored,
    filters,
    keyed,
    point_id,
    stored_point,
)
from engram.index.filters import Condition, Filter, Match, MatchAny, Range, conditions
from engram.index.listing import recent_page
from engram.model import STATUSES, SearchFilter

DEFAULT_COLLECTION = "engram_memories"
DEFAULT_TIMEOUT_SECONDS = 10
LOCAL_URL = ":memory:"
# Statuses that mean "the server is there but cannot serve now": worth a retry, unlike a 400 (a bug).
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
AUTH_STATUSES = frozenset({401, 403})


class QdrantServerIndex:
    """MemoryIndex on a Qdrant server collection: point ids from (namespace, key), the same layout as EdgeIndex.

    With a local-mode client (":memory:" or a path) it is the in-process stand-in the tests use: local mode
    is not thread-safe, so calls then hold one lock; against a server they run concurrently.
    """

    def __init__(self, client: QdrantClient, *, collection: str = DEFAULT_COLLECTION, dim: int) -> None:
        self._client = client
        self._collection = collection
        self._dim = dim
        self._address = _address(client)
        self._local = _is_local(client)
        self._lock: AbstractContextManager[Any] = threading.Lock() if self._local else nullcontext()
        self._ensure_collection()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        dim: int,
        timeout: int = DEFAULT_TIMEOUT_SECONDS,
    ) -> Self:
        """Connects to `http(s)://host:6333`, or ":memory:" for qdrant-client's in-process local mode.

        Raises Unavailable when the server cannot be reached or refuses the API key, and SettingsError when the
        collection exists with another dense size than `dim`.
        """
        if url == LOCAL_URL:
            client = QdrantClient(location=LOCAL_URL)
        else:
            # The library's own version check runs in a background thread and can only warn; reachability
            # is checked here instead, synchronously, by the first request (which raises Unavailable).
            client = QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
        try:
            return cls(client, collection=collection, dim=dim)
        except BaseException:
            client.close()
            raise

    # -- the MemoryIndex port -------------------------------------------------------------------------

    def upsert(self, points: list[IndexPoint]) -> None:
        if not points:
            return  # the server rejects an empty batch
        structs = [
            models.PointStruct(
                id=point_id(p.payload["namespace"], p.id), vector=_vectors(p), payload={**p.payload, KEY: p.id}
            )
            for p in points
        ]
        with self._call():
            self._client.upsert(self._collection, structs, wait=True)

    def retrieve(self, namespace: str, ids: list[str]) -> list[dict[str, Any]]:
        points: list[Any] = [point_id(namespace, key) for key in ids]
        with self._call():
            records = self._client.retrieve(self._collection, points, with_payload=True, with_vectors=False)
        return keyed([r.payload for r in records if r.payload], namespace)

    def retrieve_points(self, namespace: str, ids: list[str], *, dense_only: bool = False) -> list[IndexPoint]:
        points: list[Any] = [point_id(namespace, key) for key in ids]
        with self._call():
            records = self._client.retrieve(
                self._collection, points, with_payload=True, with_vectors=[DENSE] if dense_only else True
            )
        return [
            stored_point(str(r.payload.get(KEY) or r.id), r.payload, r.vector if isinstance(r.vector, dict) else {})
            for r in records
            if r.payload and r.payload.get("namespace") == namespace
        ]

    def versions_of(self, namespace: str, memory_id: str) -> list[dict[str, Any]]:
        return self._scroll_every(to_qdrant(filters.memory_points(namespace, memory_id)))

    def delete_memory(self, namespace: str, memory_id: str) -> None:
        condition = to_qdrant(filters.memory_points(namespace, memory_id))
        with self._call():
            self._client.delete(self._collection, points_selector=models.FilterSelector(filter=condition), wait=True)

    def erase_deleted(self) -> None:
        """Nothing to do here: the Qdrant server's own optimizers vacuum deleted points, on its machine."""

    def set_fields(self, namespace: str, fields: dict[str, dict[str, Any]]) -> None:
        present = {p["id"] for p in self.retrieve(namespace, list(fields))}  # keys are memory ids here
        operations: list[models.UpdateOperation] = [
            models.SetPayloadOperation(set_payload=models.SetPayload(payload=values, points=[point_id(namespace, key)]))
            for key, values in fields.items()
            if key in present
        ]
        if operations:
            with self._call():
                self._client.batch_update_points(self._collection, operations, wait=True)

    def facet(self, namespace: str, key: str, flt: SearchFilter | None = None) -> dict[str, int]:
        condition = _filter(namespace, flt or SearchFilter(statuses=list(STATUSES)))
        if self._local:  # local mode has no facet API: count by scrolling (tests only)
            counts: dict[str, int] = {}
            for payload in self._scroll_every(condition):
                values = payload.get(key)
                for value in values if isinstance(values, list) else [values]:
                    if value not in (None, ""):
                        counts[str(value)] = counts.get(str(value), 0) + 1
            return counts
        with self._call():
            response = self._client.facet(self._collection, key, facet_filter=condition, limit=10_000, exact=True)
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.value not in (None, "")}

    def _scroll_every(self, condition: models.Filter) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset: Any = None
        while True:
            with self._call():
                records, offset = self._client.scroll(
                    self._collection, scroll_filter=condition, limit=256, offset=offset, with_payload=True
                )
            out.extend(r.payload for r in records if r.payload)
            if offset is None:
                return out

    def namespaces(self) -> dict[str, int]:
        active = to_qdrant(filters.ACTIVE)
        if self._local:  # local mode has no facet API: count by scrolling (tests only)
            counts: dict[str, int] = {}
            for payload in self._scroll_every(active):
                counts[str(payload["namespace"])] = counts.get(str(payload["namespace"]), 0) + 1
            return counts
        with self._call():
            response = self._client.facet(self._collection, "namespace", facet_filter=active, limit=100_000, exact=True)
        return {str(hit.value): int(hit.count) for hit in response.hits if hit.value not in (None, "")}

    def due(self, at: float, limit: int) -> list[dict[str, Any]]:
        condition = to_qdrant(filters.due(at))
        with self._call():
            records, _ = self._client.scroll(self._collection, scroll_filter=condition, limit=limit, with_payload=True)
        return [r.payload for r in records if r.payload]

    def search(self, request: IndexQuery) -> dict[str, list[Scored]]:
        """One ranked list per vector given in the request, all in one round trip (a query batch)."""
        queries = _queries(request)
        if not queries:
            return {}
        flt = _filter(request.namespace, request.filter)
        batch = [
            models.QueryRequest(
                query=models.NearestQuery(nearest=vector),
                using=name,
                filter=flt,
                limit=request.limit,
                with_payload=True if request.with_payload else [KEY, *request.fields],
            )
            for name, vector in queries
        ]
        with self._call():
            responses = self._client.query_batch_points(self._collection, batch)
        return {
            name: [
                Scored(str((p.payload or {}).get(KEY) or p.id), float(p.score), p.payload or {})
                for p in response.points
            ]
            for (name, _), response in zip(queries, responses, strict=True)
        }

    def recent(
        self, namespace: str, flt: SearchFilter, limit: int, after: Position | None = None, *, by: str = CREATED_TS
    ) -> list[dict[str, Any]]:
        """Newest first by the time field `by`, ties by id; `after` pages on from the last page's last memory."""
        condition = conditions(namespace, flt)

        def by_time(older_than: float | None, size: int) -> list[dict[str, Any]]:
            bounded = to_qdrant(condition if older_than is None else condition.also(Range(by, lt=older_than)))
            return self._scroll(bounded, size, order_by=models.OrderBy(key=by, direction=models.Direction.DESC))

        def at_time(ts: float, from_point: str, size: int) -> list[dict[str, Any]]:
            tied = to_qdrant(condition.also(Range(by, gte=ts, lte=ts)))
            return self._scroll(tied, size, offset=from_point or None)  # no order_by: Qdrant scrolls in id order

        return recent_page(by_time, at_time, limit, after, by=by)

    def _scroll(
        self, condition: models.Filter, limit: int, *, order_by: models.OrderBy | None = None, offset: str | None = None
    ) -> list[dict[str, Any]]:
        with self._call():
            records, _ = self._client.scroll(
                self._collection, scroll_filter=condition, limit=limit, order_by=order_by, offset=offset,
                with_payload=True,
            )  # fmt: skip
        return [{**r.payload, POINT: str(r.id)} for r in records if r.payload]

    def scan(
        self, namespace: str, flt: SearchFilter, *, with_vectors: bool = False, page: int = 256
    ) -> Iterator[list[tuple[dict[str, Any], list[float]]]]:
        condition = _filter(namespace, flt)
        offset: Any = None
        while True:
            with self._call():
                records, offset = self._client.scroll(
                    self._collection, scroll_filter=condition, limit=page, offset=offset, with_payload=True,
                    with_vectors=[DENSE] if with_vectors else False,
                )  # fmt: skip
            yield [(r.payload, _dense(r.vector) if with_vectors else []) for r in records if r.payload]
            if offset is None:
                return

    def count(self, namespace: str, flt: SearchFilter | None = None) -> int:
        with self._call():
            result = self._client.count(self._collection, count_filter=_filter(namespace, flt), exact=True)
        return int(result.count)

    def held_elsewhere(self, namespace: str, memory_id: str) -> bool:
        condition = to_qdrant(filters.held_elsewhere(namespace, memory_id))
        with self._call():
            return int(self._client.count(self._collection, count_filter=condition, exact=True).count) > 0

    def update_questions(self, namespace: str, id: str, questions: list[list[float]], texts: list[str]) -> bool:
        """Sets a memory's reverse-HyDE question vectors and their texts; False when it is not in namespace.

        An empty list removes the question vectors.
        """
        if not self.retrieve(namespace, [id]):
            return False
        point = point_id(namespace, id)
        payload = models.SetPayloadOperation(
            set_payload=models.SetPayload(payload={"questions": texts}, points=[point])
        )
        with self._call():  # one request: vectors and texts change together
            self._client.batch_update_points(self._collection, [_questions_op(point, questions), payload], wait=True)
        return True

    def point_count(self) -> int:
        with self._call():
            total = self._client.count(self._collection, exact=True).count
            bookkeeping = self._client.retrieve(
                self._collection, list(BOOKKEEPING_IDS), with_payload=False, with_vectors=False
            )
        return int(total) - len(bookkeeping)

    def check(self) -> str | None:
        """A Qdrant server checks its own storage; the payload indexes are (re)created when missing."""
        if not self._local:
            with self._call():
                info = self._client.get_collection(self._collection)
            self._ensure_payload_indexes(info.payload_schema)
        return None

    def applied_seq(self) -> int:
        return int(self._meta().get("applied_seq", 0))

    def holds_questions(self) -> bool:
        return True  # not recorded here: a Qdrant server's collection is searched for them always

    def skipped_count(self) -> int:
        return int(self._meta().get("skipped", 0))

    def indexer_state(self) -> dict[str, Any]:
        return dict(self._meta(STATE_ID).get("state") or {})

    def _meta(self, point_id: str = META_ID) -> dict[str, Any]:
        with self._call():
            records = self._client.retrieve(self._collection, [point_id], with_payload=True, with_vectors=False)
        return dict(records[0].payload) if records and records[0].payload else {}

    def set_applied_seq(self, seq: int, *, skipped: int = 0, state: dict[str, Any] | None = None) -> None:
        # Points with no vectors (named vectors are optional per point): they never show in a search, have no
        # namespace so no filter matches them, and ride the same WAL as the points they cover, written after them.
        points = [] if state is None else [models.PointStruct(id=STATE_ID, vector={}, payload={"state": state})]
        points.append(models.PointStruct(id=META_ID, vector={}, payload={"applied_seq": seq, "skipped": skipped}))
        with self._call():
            self._client.upsert(self._collection, points, wait=True)

    def reset(self) -> None:
        """Drops the collection and creates it empty (the index is rebuilt from the log)."""
        with self._call():
            self._client.delete_collection(self._collection)
        self._ensure_collection()

    def maintain(self) -> None:
        """Nothing to do: a Qdrant server optimizes its segments in the background."""

    def flush(self) -> None:
        """Nothing to do: every write waits until the server has applied it (wait=True), and it owns its WAL."""

    def close(self) -> None:
        with self._lock:
            self._client.close()

    # -- collection setup -----------------------------------------------------------------------------

    def _ensure_collection(self) -> None:
        with self._call():
            exists = self._client.collection_exists(self._collection)
        if not exists:
            self._create_collection()
        with self._call():
            info = self._client.get_collection(self._collection)
        self._check_dim(info)
        if not self._local:
            # Local mode ignores payload indexes (and warns that it does): filters there are brute force.
            self._ensure_payload_indexes(info.payload_schema)

    def _create_collection(self) -> None:
        sparse = {SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
        try:
            with self._call():
                self._client.create_collection(
                    self._collection, vectors_config=self._vector_params(), sparse_vectors_config=sparse
                )
        except UnexpectedResponse as e:
            if e.status_code != 409:  # 409: another replica created it first, which is as good
                raise

    def _vector_params(self) -> dict[str, models.VectorParams]:
        maxsim = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
        return {
            DENSE: models.VectorParams(size=self._dim, distance=models.Distance.COSINE),
            QUESTIONS: models.VectorParams(size=self._dim, distance=models.Distance.COSINE, multivector_config=maxsim),
        }

    def _check_dim(self, info: models.CollectionInfo) -> None:
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE) if isinstance(vectors, dict) else None
        if dense is None or dense.size != self._dim:
            found = f"dense size {dense.size}" if dense else "no 'dense' vector"
            raise SettingsError(
                f"Qdrant collection '{self._collection}' at {self._address} has {found}, but the embedder makes "
                f"{self._dim}-dim vectors. Point ENGRAM_QDRANT_COLLECTION at a new collection (it is rebuilt "
                "from the log) or delete this one."
            )

    def _ensure_payload_indexes(self, existing: dict[str, Any]) -> None:
        wanted: dict[str, models.PayloadSchemaParams | models.PayloadSchemaType] = {
            # is_tenant: the server co-locates each namespace's points, so per-namespace queries stay fast.
            "namespace": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
            **dict.fromkeys(KEYWORD_FIELDS, models.PayloadSchemaType.KEYWORD),
            # range filters and order_by need them on a server
            **dict.fromkeys(FLOAT_FIELDS, models.PayloadSchemaType.FLOAT),
        }
        for name, schema in wanted.items():
            if name not in existing:
                with self._call():
                    self._client.create_payload_index(self._collection, name, field_schema=schema, wait=True)

    # -- errors ---------------------------------------------------------------------------------------

    @contextmanager
    def _call(self) -> Iterator[None]:
        """Holds the lock (local mode) and turns transport and server failures into Unavailable."""
        with self._lock:
            try:
                yield
            except ResponseHandlingException as e:
                raise Unavailable(self._unreachable(e.source)) from e
            except UnexpectedResponse as e:
                if e.status_code in AUTH_STATUSES:
                    raise Unavailable(
                        f"Qdrant at {self._address} refused the API key ({e.status_code}). Check ENGRAM_QDRANT_API_KEY."
                    ) from e
                if e.status_code in RETRYABLE_STATUSES:
                    raise Unavailable(
                        f"Qdrant at {self._address} cannot serve right now ({e.status_code} {e.reason_phrase}). "
                        "Check the server's health and logs; retrying later may succeed."
                    ) from e
                raise

    def _unreachable(self, cause: Exception) -> str:
        if isinstance(cause, httpx.TimeoutException):
            return (
                f"Qdrant at {self._address} did not answer in time ({type(cause).__name__}). "
                "Check the server's load and the network, or raise the timeout."
            )
        if isinstance(cause, httpx.TransportError):
            return (
                f"Cannot reach Qdrant at {self._address} ({cause or type(cause).__name__}). Check that the "
                "server is running and that ENGRAM_QDRANT_URL names its REST port (6333 by default)."
            )
        return (
            f"Qdrant at {self._address} sent a response this client cannot read ({cause}). "
            "Check that the server's version matches qdrant-client's (same major, minor within one)."
        )


def _dense(vector: Any) -> list[float]:
    return [float(x) for x in vector.get(DENSE) or []] if isinstance(vector, dict) else []


def to_qdrant(flt: Filter) -> models.Filter:
    """The filter in qdrant-client's words."""
    must: list[models.Condition] = [_condition(c) for c in flt.must]
    must_not: list[models.Condition] = [_condition(c) for c in flt.must_not]
    return models.Filter(must=must, must_not=must_not or None)


def _condition(condition: Condition) -> models.FieldCondition:
    match condition:
        case Match(key, value):
            return models.FieldCondition(key=key, match=models.MatchValue(value=value))
        case MatchAny(key, values):
            return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))
        case Range(key, gte, gt, lte, lt):
            return models.FieldCondition(key=key, range=models.Range(gte=gte, gt=gt, lte=lte, lt=lt))


def _filter(namespace: str, flt: SearchFilter | None) -> models.Filter:
    return to_qdrant(conditions(namespace, flt))


def _vectors(point: IndexPoint) -> dict[str, Any]:
    vectors: dict[str, Any] = {
        DENSE: point.dense,
        SPARSE: models.SparseVector(indices=point.sparse.indices, values=point.sparse.values),
    }
    if point.questions:
        vectors[QUESTIONS] = point.questions
    return vectors


def _questions_op(id: str, questions: list[list[float]]) -> models.UpdateOperation:
    if not questions:
        return models.DeleteVectorsOperation(delete_vectors=models.DeleteVectors(points=[id], vector=[QUESTIONS]))
    update = models.UpdateVectors(points=[models.PointVectors(id=id, vector={QUESTIONS: questions})])
    return models.UpdateVectorsOperation(update_vectors=update)


def _queries(request: IndexQuery) -> list[tuple[str, Any]]:
    queries: list[tuple[str, Any]] = []
    if request.dense is not None:
        queries.append((DENSE, request.dense))
    if request.sparse is not None and request.sparse.indices:  # an all-stop-word query has no terms
        queries.append((SPARSE, models.SparseVector(indices=request.sparse.indices, values=request.sparse.values)))
    if request.questions is not None:
        # Sent as a one-vector multivector: what a MaxSim field takes on every server version.
        queries.append((QUESTIONS, [request.questions]))
    return queries


def _is_local(client: QdrantClient) -> bool:
    options = client.init_options
    return options.get("location") == LOCAL_URL or options.get("path") is not None


def _address(client: QdrantClient) -> str:
    """Where the client points, for error messages (never the API key)."""
    options = client.init_options
    for key in ("url", "host", "location", "path"):
        if options.get(key):
            return str(options[key])
    return "localhost:6333"
