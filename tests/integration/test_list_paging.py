"""Listing pages in a total order (created or updated time desc, id asc) on both index adapters, whatever the
ties."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from engram.embed.sparse import Bm25Encoder
from engram.index import CREATED_TS, POINT, VALID_FROM, IndexPoint, MemoryIndex, Position, point_id
from engram.index.listing import order_key
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_server import QdrantServerIndex
from engram.model import SearchFilter

pytestmark = pytest.mark.integration
DIM = 4
BM25 = Bm25Encoder()
BACKENDS = ("edge", "server")
# Memories per creation time: one group larger than every page size, groups of 300, 50, 7 and 2, and singles.
TIE_GROUPS = [450, 300, 50, 50, 50, *[7] * 10, *[2] * 50, *[1] * 530]
BASE_TS = 1_763_900_000.0  # creation times like the indexer's: epoch seconds with a fraction
KEPT_TAG = "kept"


def corpus(groups: list[int], *, seed: int) -> list[IndexPoint]:
    """One point per memory, random ids (so id order says nothing of time), tie groups in random order.

    The time of the last change (VALID_FROM) has tie groups of the same sizes, formed independently of the
    creation time's: a listing by last change cuts across the creation groups.
    """
    rng = random.Random(seed)
    order = list(range(len(groups)))
    rng.shuffle(order)
    points = []
    for slot, size in zip(order, groups, strict=True):
        ts = BASE_TS + slot * 0.001
        for _ in range(size):
            memory_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            tags = [KEPT_TAG] if rng.random() < 0.4 else []
            status = "archived" if rng.random() < 0.05 else "active"  # left out by the default filter
            points.append(point(memory_id, ts, tags=tags, status=status))
    rng.shuffle(points)
    changed = iter(points)
    for slot, size in zip(order, groups, strict=True):
        for _ in range(size):
            next(changed).payload[VALID_FROM] = BASE_TS + 3600 + slot * 0.001
    return points


def point(memory_id: str, ts: float, *, namespace: str = "a", tags: list[str] | None = None,
          status: str = "active") -> IndexPoint:  # fmt: skip
    payload = {
        "id": memory_id, "namespace": namespace, "content": f"memory {memory_id}", "tags": tags or [],
        "owner_agent": "x@laptop", "memory_type": "fact", "topics": [], "status": status, "project": "",
        "conversation_id": "", "questions": [], "_created_ts": ts,
    }  # fmt: skip
    return IndexPoint(memory_id, payload, [1.0, 0.0, 0.0, 0.0], BM25.document("memory"))


def open_index(name: str, path: Path) -> MemoryIndex:
    if name == "edge":
        return EdgeIndex(path, dim=DIM)
    return QdrantServerIndex(QdrantClient(location=":memory:"), collection="paging", dim=DIM)


def fill(index: MemoryIndex, points: list[IndexPoint]) -> None:
    for start in range(0, len(points), 200):
        index.upsert(points[start : start + 200])


def page_through(
    index: MemoryIndex, flt: SearchFilter, limit: int, namespace: str = "a", *, by: str = CREATED_TS
) -> list[str]:
    """Every id the listing gives, page by page, as a client following next_page_token would."""
    ids: list[str] = []
    after: Position | None = None
    while True:
        page = index.recent(namespace, flt, limit, after, by=by)
        assert len(page) <= limit
        ids.extend(p["id"] for p in page)
        if len(page) < limit:
            return ids
        after = Position(page[-1][by], page[-1][POINT])


def expected(points: list[IndexPoint], flt: SearchFilter, *, by: str = CREATED_TS) -> list[str]:
    kept = [
        {**p.payload, POINT: point_id(p.payload["namespace"], p.id)}
        for p in points
        if p.payload["status"] == "active" and set(flt.tags) <= set(p.payload["tags"])
    ]
    return [p["id"] for p in sorted(kept, key=lambda payload: order_key(payload, by))]


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[IndexPoint], dict[str, MemoryIndex]]]:
    """1,600 memories in tie groups of up to 450, in both adapters."""
    points = corpus(TIE_GROUPS, seed=6)
    indexes = {name: open_index(name, tmp_path_factory.mktemp(name) / "index") for name in BACKENDS}
    for index in indexes.values():
        fill(index, points)
    yield points, indexes
    for index in indexes.values():
        index.close()


def test_the_corpus_has_1600_memories_in_the_tie_groups_wanted() -> None:
    points = corpus(TIE_GROUPS, seed=6)
    sizes: dict[float, int] = {}
    for p in points:
        sizes[p.payload["_created_ts"]] = sizes.get(p.payload["_created_ts"], 0) + 1

    assert len(points) == 1600
    assert sorted(sizes.values(), reverse=True)[:5] == [450, 300, 50, 50, 50]
    assert len({p.id for p in points}) == 1600


@pytest.mark.parametrize(
    ("backend", "limit"),
    [*((backend, limit) for backend in BACKENDS for limit in (100, 37)), ("edge", 7), ("edge", 1),
     pytest.param("server", 7, marks=pytest.mark.slow)],  # ~14 s: local mode filters every point in Python
)  # fmt: skip
def test_paging_gives_every_memory_once_in_time_then_id_order(
    tied: tuple[list[IndexPoint], dict[str, MemoryIndex]], backend: str, limit: int
) -> None:
    points, indexes = tied
    want = expected(points, SearchFilter())

    listed = page_through(indexes[backend], SearchFilter(), limit)

    assert len(listed) == len(set(listed)) == len(want) == indexes[backend].count("a")
    assert listed == want


@pytest.mark.parametrize("limit", [100, 37])
def test_both_adapters_page_a_tag_filter_identically(
    tied: tuple[list[IndexPoint], dict[str, MemoryIndex]], limit: int
) -> None:
    points, indexes = tied
    flt = SearchFilter(tags=[KEPT_TAG])

    on_edge, on_server = (page_through(indexes[name], flt, limit) for name in BACKENDS)

    assert on_edge == on_server == expected(points, flt)
    assert len(on_edge) == indexes["edge"].count("a", flt)


@pytest.mark.parametrize(("backend", "limit"), [(backend, limit) for backend in BACKENDS for limit in (100, 37)])
def test_paging_by_last_change_gives_every_memory_once_in_change_time_then_id_order(
    tied: tuple[list[IndexPoint], dict[str, MemoryIndex]], backend: str, limit: int
) -> None:
    points, indexes = tied
    want = expected(points, SearchFilter(), by=VALID_FROM)

    listed = page_through(indexes[backend], SearchFilter(), limit, by=VALID_FROM)

    assert len(listed) == len(set(listed)) == len(want)
    assert listed == want
    assert listed != expected(points, SearchFilter())  # the two orders differ on this corpus


def test_both_adapters_page_a_tag_filter_by_last_change_identically(
    tied: tuple[list[IndexPoint], dict[str, MemoryIndex]],
) -> None:
    points, indexes = tied
    flt = SearchFilter(tags=[KEPT_TAG])

    on_edge, on_server = (page_through(indexes[name], flt, 37, by=VALID_FROM) for name in BACKENDS)

    assert on_edge == on_server == expected(points, flt, by=VALID_FROM)


@pytest.mark.parametrize("backend", BACKENDS)
def test_page_size_one_walks_every_tie_group_one_memory_at_a_time(backend: str, tmp_path: Path) -> None:
    points = corpus([60, 25, 7, 7, 2, 2, *[1] * 40], seed=61)  # the same shapes, smaller: 2 to 3 queries a page
    index = open_index(backend, tmp_path / "index")
    try:
        fill(index, points)

        for by in (CREATED_TS, VALID_FROM):
            assert page_through(index, SearchFilter(), 1, by=by) == expected(points, SearchFilter(), by=by)
    finally:
        index.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namespace_whose_memories_all_share_one_timestamp_pages_by_point_id(backend: str, tmp_path: Path) -> None:
    points = [point(str(uuid.uuid4()), BASE_TS) for _ in range(250)]
    points += [point(str(uuid.uuid4()), BASE_TS, namespace="b") for _ in range(30)]  # same time, other tenant
    index = open_index(backend, tmp_path / "index")
    try:
        fill(index, points)

        listed = page_through(index, SearchFilter(), 37)

        assert listed == sorted((p.id for p in points[:250]), key=lambda key: point_id("a", key))
    finally:
        index.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_page_resumes_after_its_last_memory_even_once_that_memory_is_gone(backend: str, tmp_path: Path) -> None:
    points = corpus([20, 5, 1, 1], seed=62)
    index = open_index(backend, tmp_path / "index")
    try:
        fill(index, points)
        want = expected(points, SearchFilter())
        first = index.recent("a", SearchFilter(), 10)
        last = first[-1]
        gone = next(p for p in points if p.id == last["id"])
        gone.payload["status"] = "archived"
        index.upsert([gone])  # archived between two pages

        rest = index.recent("a", SearchFilter(), 100, Position(last["_created_ts"], last[POINT]))

        assert [p["id"] for p in first + rest] == want
    finally:
        index.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_position_without_an_id_resumes_with_its_whole_timestamp_group(backend: str, tmp_path: Path) -> None:
    """What a pre-v1 token (a bare created time) means: repeat that group rather than skip part of it."""
    points = corpus([5, 4, 3], seed=63)
    index = open_index(backend, tmp_path / "index")
    try:
        fill(index, points)
        want = expected(points, SearchFilter())
        created = {p.id: p.payload["_created_ts"] for p in points}
        middle = created[want[6]]

        rest = index.recent("a", SearchFilter(), 100, Position(middle))

        assert [p["id"] for p in rest] == [i for i in want if created[i] <= middle]
    finally:
        index.close()
