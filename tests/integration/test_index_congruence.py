"""Index congruence: the same test bodies against Qdrant Edge and the Qdrant server adapter (local mode)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from engram.config import SettingsError
from engram.embed.sparse import Bm25Encoder
from engram.errors import Unavailable
from engram.ids import uuid7
from engram.index import (
    DENSE,
    EXPIRES_TS,
    FAR,
    HANDOFF_STATUS,
    HANDOFF_TO,
    POINT,
    QUESTIONS,
    SPARSE,
    VALID_FROM,
    VALID_TO,
    WORLD_FROM,
    WORLD_TO,
    IndexPoint,
    MemoryIndex,
    Position,
    SearchRequest,
    point_id,
    version_point_id,
)
from engram.index.edge import EdgeIndex
from engram.index.server import QdrantServerIndex
from engram.model import SearchFilter
from tests.helpers.tools import free_port

pytestmark = pytest.mark.integration
DIM = 4
BM25 = Bm25Encoder()
X, Y, Z = [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]


@dataclass
class Backend:
    """One adapter under test: `open` opens (or reopens) the same storage, as a restarted service would."""

    name: str
    open: Callable[[], MemoryIndex]


@pytest.fixture(params=["edge", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "edge":
        yield Backend("edge", lambda: EdgeIndex(tmp_path / "index", dim=DIM))
        return
    # The same client stands for one server that outlives the service: reopening finds the collection.
    client = QdrantClient(location=":memory:")
    collection = f"test_{uuid7().replace('-', '')}"
    yield Backend("server", lambda: QdrantServerIndex(client, collection=collection, dim=DIM))
    client.close()


@pytest.fixture
def index(backend: Backend) -> Iterator[MemoryIndex]:
    opened = backend.open()
    yield opened
    if backend.name == "edge":  # the server backend's client is closed by its fixture
        opened.close()


def memory(
    content: str,
    *,
    namespace: str = "a",
    dense: list[float] = X,
    ts: float = 1.0,
    tags: tuple[str, ...] = (),
    owner: str = "x@laptop",
    kind: str = "fact",
    topics: tuple[str, ...] = (),
    status: str = "active",
    project: str = "",
    conversation: str = "",
    memory_id: str = "",
) -> IndexPoint:
    """An IndexPoint shaped like the indexer's: the memory's JSON form plus `_created_ts`."""
    memory_id = memory_id or uuid7()
    payload = {
        "id": memory_id, "namespace": namespace, "content": content, "tags": list(tags), "owner_agent": owner,
        "memory_type": kind, "topics": list(topics), "status": status, "project": project,
        "conversation_id": conversation, "questions": [], "_created_ts": ts,
    }  # fmt: skip
    return IndexPoint(memory_id, payload, dense, BM25.document(content))


def position(payload: dict[str, Any]) -> Position:
    """Where a page ending on this payload stopped."""
    return Position(payload["_created_ts"], payload[POINT])


def search(index: MemoryIndex, text: str, *, namespace: str = "a", flt: SearchFilter | None = None,
           dense: list[float] = X, limit: int = 10) -> dict[str, list[str]]:  # fmt: skip
    """Contents per ranked list, best first."""
    request = SearchRequest(namespace, flt or SearchFilter(), limit, dense=dense, sparse=BM25.query(text))
    return {name: [s.payload["content"] for s in ranked] for name, ranked in index.search(request).items()}


def test_upsert_then_retrieve_returns_the_payload_only_in_its_namespace(index: MemoryIndex) -> None:
    point = memory("the staging database is postgres 16", tags=("db",))
    index.upsert([point])

    assert index.retrieve("a", [point.id]) == [point.payload]
    assert index.retrieve("b", [point.id]) == []
    assert index.retrieve("a", [uuid7()]) == []


def test_the_same_id_in_two_namespaces_is_two_memories_that_never_touch(index: MemoryIndex) -> None:
    """Issue 22: an id chosen in one namespace (a device's push) once overwrote another namespace's point."""
    shared = uuid7()
    beta = memory("beta's deploy checklist", namespace="b", memory_id=shared, dense=Y)
    index.upsert([beta])
    index.upsert([memory("x", namespace="a", memory_id=shared)])
    index.set_fields("a", {shared: {"access_count": 7}})
    index.update_questions("a", shared, [Y], ["what is x?"])

    assert index.retrieve("b", [shared]) == [beta.payload]
    assert [p["content"] for p in index.retrieve("a", [shared])] == ["x"]
    assert search(index, "deploy checklist", namespace="b", dense=Y)[DENSE] == ["beta's deploy checklist"]
    index.delete_memory("a", shared)
    assert index.retrieve("a", [shared]) == []
    assert index.retrieve("b", [shared]) == [beta.payload]
    assert index.count("b") == 1
    assert index.held_elsewhere("a", shared) and not index.held_elsewhere("b", shared)
    assert not index.held_elsewhere("a", uuid7())


def test_search_returns_a_dense_and_a_bm25_list_with_the_best_match_first(index: MemoryIndex) -> None:
    index.upsert([
        memory("deploys go out on tuesdays", dense=Y),
        memory("the cat sleeps on the keyboard", dense=X),
        memory("staging deploys need a green build", dense=Z),
    ])  # fmt: skip

    lists = search(index, "when do deploys go out", dense=X)

    assert set(lists) == {DENSE, SPARSE}
    assert lists[DENSE][0] == "the cat sleeps on the keyboard"
    assert lists[SPARSE][0] == "deploys go out on tuesdays"
    assert "the cat sleeps on the keyboard" not in lists[SPARSE]  # BM25 only returns documents sharing a term


def test_a_query_of_only_stop_words_gives_no_bm25_list(index: MemoryIndex) -> None:
    index.upsert([memory("deploys go out on tuesdays")])

    assert set(search(index, "the of and")) == {DENSE}


FILTER_CORPUS = [
    memory("deploy notes", ts=10, tags=("ops", "prod"), owner="x", kind="fact", topics=("infra",),
           project="engram", conversation="c1"),
    memory("deploy plan", ts=20, tags=("ops",), owner="y", kind="decision", topics=("release",)),
    memory("deploy rollback", ts=30, tags=("ops",), owner="x", kind="finding", topics=("infra", "release"),
           status="archived"),
    memory("deploy secret", namespace="b", ts=15, tags=("ops", "prod"), owner="x", kind="fact", topics=("infra",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("namespace", "flt", "expected"),
    [
        ("a", SearchFilter(), {"deploy notes", "deploy plan"}),
        ("b", SearchFilter(), {"deploy secret"}),
        ("c", SearchFilter(), set()),
        ("a", SearchFilter(tags=["ops", "prod"]), {"deploy notes"}),
        ("a", SearchFilter(owner_agent="y"), {"deploy plan"}),
        ("a", SearchFilter(memory_types=["decision", "preference"]), {"deploy plan"}),
        ("a", SearchFilter(topics=["release", "unheard-of"]), {"deploy plan"}),
        ("a", SearchFilter(created_after=20), {"deploy plan"}),
        ("a", SearchFilter(created_before=20), {"deploy notes"}),
        ("a", SearchFilter(created_after=10, created_before=20), {"deploy notes"}),
        ("a", SearchFilter(statuses=["archived"]), {"deploy rollback"}),
        ("a", SearchFilter(statuses=["active", "archived"], topics=["release"]), {"deploy plan", "deploy rollback"}),
        ("a", SearchFilter(project="engram"), {"deploy notes"}),
        ("a", SearchFilter(conversation_id="c1"), {"deploy notes"}),
    ],
    ids=["default", "other-namespace", "empty-namespace", "tags-all-of", "owner", "types-any-of", "topics-any-of",
         "after-inclusive", "before-exclusive", "time-window", "status", "statuses-any-of", "project", "conversation"],
)  # fmt: skip
def test_every_filter_applies_to_search_recent_and_count(
    index: MemoryIndex, namespace: str, flt: SearchFilter, expected: set[str]
) -> None:
    index.upsert(FILTER_CORPUS)

    lists = search(index, "deploy", namespace=namespace, flt=flt)

    assert {name: set(contents) for name, contents in lists.items()} == {DENSE: expected, SPARSE: expected}
    assert {p["content"] for p in index.recent(namespace, flt, 10)} == expected
    assert index.count(namespace, flt) == len(expected)


def test_recent_is_newest_first_and_after_pages_on(index: MemoryIndex) -> None:
    index.upsert([memory(f"note {ts}", ts=ts) for ts in (3.0, 1.0, 5.0, 2.0, 4.0)])

    first = index.recent("a", SearchFilter(), 2)
    second = index.recent("a", SearchFilter(), 2, after=position(first[-1]))
    last = index.recent("a", SearchFilter(), 2, after=position(second[-1]))

    assert [p["content"] for p in first + second + last] == ["note 5.0", "note 4.0", "note 3.0", "note 2.0", "note 1.0"]
    assert index.recent("a", SearchFilter(), 2, after=position(last[-1])) == []


def test_count_is_exact_and_leaves_out_the_bookkeeping_point(index: MemoryIndex) -> None:
    index.upsert([memory(f"fact {i}") for i in range(70)] + [memory("old", status="archived")])
    index.set_applied_seq(71)

    assert index.count("a") == 70
    assert index.count("a", SearchFilter(statuses=["active", "archived"])) == 71
    assert index.count("b") == 0


def test_applied_seq_round_trips_and_survives_reopen(backend: Backend) -> None:
    first = backend.open()
    assert first.applied_seq() == 0
    first.upsert([memory("remember me")])
    first.set_applied_seq(41)
    first.set_applied_seq(42)
    assert first.applied_seq() == 42
    if backend.name == "edge":
        first.close()  # one process owns a shard: the restarted service opens it after the old one closed

    again = backend.open()

    assert again.applied_seq() == 42
    assert again.count("a") == 1
    if backend.name == "edge":
        again.close()


def test_reset_empties_the_index_and_leaves_it_usable(index: MemoryIndex) -> None:
    index.upsert([memory("gone soon")])
    index.set_applied_seq(9)

    index.reset()

    assert (index.count("a"), index.applied_seq(), search(index, "gone soon")) == (0, 0, {DENSE: [], SPARSE: []})
    index.upsert([memory("back again")])
    assert search(index, "back again")[SPARSE] == ["back again"]


def test_update_questions_makes_the_memory_findable_by_its_questions(index: MemoryIndex) -> None:
    target, other = memory("postgres 16 on staging", dense=X), memory("tuesday deploys", dense=X)
    index.upsert([target, other])

    updated = index.update_questions("a", target.id, [Y, Z], ["which postgres runs staging?", "db version?"])

    assert updated is True
    hits = index.search(SearchRequest("a", SearchFilter(), 10, questions=Z)).get(QUESTIONS, [])
    assert [h.id for h in hits] == [target.id]  # the other memory has no question vectors
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)  # MaxSim: its best question is the query itself
    assert index.retrieve("a", [target.id])[0]["questions"] == ["which postgres runs staging?", "db version?"]


def test_update_questions_never_crosses_a_namespace(index: MemoryIndex) -> None:
    point = memory("team a's secret")
    index.upsert([point])

    assert index.update_questions("b", point.id, [Y], ["leaked?"]) is False
    assert index.update_questions("a", uuid7(), [Y], ["nobody"]) is False
    assert index.retrieve("a", [point.id])[0]["questions"] == []
    assert index.search(SearchRequest("a", SearchFilter(), 10, questions=Y)).get(QUESTIONS, []) == []


def test_upsert_of_an_existing_id_replaces_it(index: MemoryIndex) -> None:
    first = memory("alpha version", dense=X)
    index.upsert([first])
    index.upsert([memory("beta version", dense=Y, memory_id=first.id)])

    assert index.count("a") == 1
    assert [p["content"] for p in index.retrieve("a", [first.id])] == ["beta version"]
    assert search(index, "alpha", dense=Y) == {DENSE: ["beta version"], SPARSE: []}


# Every document has a different length in BM25 terms (stop words dropped), so no two tie on a query below:
# tied scores may come back in either order, on a server as much as here.
RANKING_TEXTS = [
    "deploy api",
    "deploy deploy rollback plan api",
    "postgres upgrade version sixteen staging cluster",
    "staging cluster runs postgres redis kafka workers",
    "rollback failed deploy billing api yesterday evening after lunch",
    "redis cache eviction policy allkeys lru configured last spring quarter",
    "billing runs nightly batch cluster jobs every weekday morning before office opens",
    "api keys rotate every ninety days automatically through vault secrets engine managed centrally",
    "batch cluster deploy needs green build first plus signoff from two reviewers across teams today",
    "postgres backups verified every sunday night restore drill monthly documented runbook wiki page owners listed",
    "staging redis uses same eviction policy production cluster memory limits differ slightly larger nodes",
    "nightly batch jobs page oncall engineer failure escalation after thirty minutes silence secondary gets paged "
    "next weekday shift",
]
RANKING_QUERIES = ["deploy api", "postgres staging", "redis eviction", "nightly batch cluster", "rollback billing"]


def ranking_corpus() -> list[IndexPoint]:
    rng = np.random.default_rng(7)
    points = []
    for i, text in enumerate(RANKING_TEXTS):
        dense = rng.normal(size=DIM)
        points.append(memory(text, dense=[float(v) for v in dense / np.linalg.norm(dense)], ts=float(i)))
    return points


def test_both_adapters_rank_a_corpus_identically(tmp_path: Path) -> None:
    corpus = ranking_corpus()
    edge = EdgeIndex(tmp_path / "index", dim=DIM)
    server = QdrantServerIndex.from_url(":memory:", dim=DIM)
    rng = np.random.default_rng(11)
    try:
        for index in (edge, server):
            index.upsert(corpus)
        for text in RANKING_QUERIES:
            dense = [float(v) for v in rng.normal(size=DIM)]
            request = SearchRequest("a", SearchFilter(), len(corpus), dense=dense, sparse=BM25.query(text))
            on_edge, on_server = edge.search(request), server.search(request)
            for name in (DENSE, SPARSE):
                assert [s.id for s in on_edge[name]] == [s.id for s in on_server[name]], (text, name)
                edge_scores, server_scores = [s.score for s in on_edge[name]], [s.score for s in on_server[name]]
                assert edge_scores == pytest.approx(server_scores, rel=1e-4), (text, name)
                assert all(a > b for a, b in pairwise(edge_scores)), f"the corpus has a tie on {text!r} ({name})"
    finally:
        edge.close()
        server.close()


def test_server_index_reports_an_unreachable_url_as_unavailable_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    with pytest.raises(Unavailable, match=rf"Cannot reach Qdrant at {re.escape(url)}.*ENGRAM_QDRANT_URL"):
        QdrantServerIndex.from_url(url, dim=DIM, timeout=2)


def test_server_index_refuses_a_collection_made_for_another_dimension() -> None:
    client = QdrantClient(location=":memory:")
    try:
        QdrantServerIndex(client, collection="memories", dim=DIM)
        with pytest.raises(SettingsError, match=r"dense size 4.*384-dim.*ENGRAM_QDRANT_COLLECTION"):
            QdrantServerIndex(client, collection="memories", dim=384)
    finally:
        client.close()


# --- the lifecycle's queries ----------------------------------------------------------------------------------


def _versioned(point: IndexPoint, *, version: int, valid: tuple[float, float], team: str = "") -> IndexPoint:
    """The point with the fields the indexer adds for versions: validity, world validity, expiry, team."""
    point.payload |= {
        "version": version, "team": team, VALID_FROM: valid[0], VALID_TO: valid[1], WORLD_FROM: -FAR,
        WORLD_TO: FAR, EXPIRES_TS: FAR,
    }  # fmt: skip
    return point


def test_retrieve_points_returns_payloads_and_every_vector(index: MemoryIndex) -> None:
    point = memory("vectors come back", dense=Y)
    index.upsert([point])
    (back,) = index.retrieve_points("a", [point.id])
    assert back.payload["content"] == "vectors come back"
    assert np.allclose(back.dense, Y)
    assert sorted(back.sparse.indices) == sorted(point.sparse.indices)
    assert index.retrieve_points("other", [point.id]) == []


def test_versions_of_and_delete_memory_select_by_the_memory_id_payload(index: MemoryIndex) -> None:
    memory_id = uuid7()
    versions = []
    for n in (1, 2):
        point = _versioned(memory(f"v{n}", memory_id=memory_id), version=n, valid=(float(n), float(n + 1)))
        versions.append(IndexPoint(version_point_id(memory_id, n), point.payload, point.dense, point.sparse))
    other = memory("someone else's", memory_id=uuid7())
    index.upsert([*versions, other])
    assert sorted(p["content"] for p in index.versions_of("a", memory_id)) == ["v1", "v2"]
    assert index.versions_of("b", memory_id) == []
    index.delete_memory("a", memory_id)
    assert index.versions_of("a", memory_id) == []
    assert index.retrieve("a", [other.id])


def test_as_of_filters_on_recorded_validity(index: MemoryIndex) -> None:
    old = _versioned(memory("was true", dense=X), version=1, valid=(10.0, 20.0))
    new = _versioned(memory("is true", dense=X), version=2, valid=(20.0, 1e15))
    index.upsert([old, new])

    request = SearchRequest("a", SearchFilter(as_of=15.0), 10, dense=X, with_payload=True)
    assert [s.payload["content"] for s in index.search(request)[DENSE]] == ["was true"]
    request = SearchRequest("a", SearchFilter(as_of=25.0), 10, dense=X, with_payload=True)
    assert [s.payload["content"] for s in index.search(request)[DENSE]] == ["is true"]
    request = SearchRequest("a", SearchFilter(as_of=5.0), 10, dense=X, with_payload=True)
    assert index.search(request)[DENSE] == []


def test_facet_set_fields_and_due(index: MemoryIndex) -> None:
    points = [
        _versioned(memory("one", owner="p", kind="fact"), version=1, valid=(1.0, 1e15), team="core"),
        _versioned(memory("two", owner="p", kind="decision", status="archived"), version=1, valid=(1.0, 1e15)),
        _versioned(memory("three", owner="q", kind="fact"), version=1, valid=(1.0, 1e15), team="core"),
    ]
    points[0].payload[EXPIRES_TS] = 50.0
    points[1].payload[EXPIRES_TS] = 40.0  # archived: never due
    index.upsert(points)
    assert index.facet("a", "owner_agent") == {"p": 2, "q": 1}
    assert index.facet("a", "status") == {"active": 2, "archived": 1}
    assert index.facet("a", "team") == {"core": 2}
    assert index.facet("b", "owner_agent") == {}
    index.set_fields("a", {points[2].id: {"access_count": 7}, uuid7(): {"access_count": 1}})
    assert index.retrieve("a", [points[2].id])[0]["access_count"] == 7
    assert [p["id"] for p in index.due(60.0, 10)] == [points[0].id]
    assert index.due(45.0, 10) == []


# --- issue 8: handoff filters, the indexer's state --------------------------------------------------------------


def _handoff(content: str, target: str, status: str, *, ts: float) -> IndexPoint:
    point = memory(content, kind="handoff", ts=ts)
    point.payload |= {HANDOFF_TO: target, HANDOFF_STATUS: status}
    return point


HANDOFF_CORPUS = [
    _handoff("handoff review auth for gemini", "gemini-cli", "pending", ts=1.0),
    _handoff("handoff finish deploy for gemini", "gemini-cli", "accepted", ts=2.0),
    _handoff("handoff write docs for cursor", "cursor", "pending", ts=3.0),
    memory("handoff notes are plain memories", ts=4.0),  # not a handoff: no handoff fields at all
]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (SearchFilter(handoff_target="gemini-cli"),
         ["handoff finish deploy for gemini", "handoff review auth for gemini"]),
        (SearchFilter(handoff_statuses=["pending"]),
         ["handoff write docs for cursor", "handoff review auth for gemini"]),
        (SearchFilter(handoff_target="gemini-cli", handoff_statuses=["pending", "completed"]),
         ["handoff review auth for gemini"]),
        (SearchFilter(handoff_target="nobody"), []),
    ],
    ids=["target", "statuses-any-of", "target-and-status", "unknown-target"],
)  # fmt: skip
def test_handoff_filters_apply_to_search_recent_count_and_facet(
    index: MemoryIndex, flt: SearchFilter, expected: list[str]
) -> None:
    index.upsert(HANDOFF_CORPUS)

    lists = search(index, "handoff", flt=flt)

    assert {name: set(contents) for name, contents in lists.items()} == {DENSE: set(expected), SPARSE: set(expected)}
    assert [p["content"] for p in index.recent("a", flt, 10)] == expected
    assert index.count("a", flt) == len(expected)
    assert sum(index.facet("a", "memory_type", flt).values()) == len(expected)


def test_indexer_state_is_kept_until_replaced_survives_reopen_and_goes_with_a_reset(backend: Backend) -> None:
    state = {"layout": 2, "agents": [{"namespace": "a", "agent": "claude-code", "devices": ["laptop"]}]}
    first = backend.open()
    assert first.indexer_state() == {}
    first.upsert([memory("one memory")])
    first.set_applied_seq(7, skipped=1, state=state)
    if backend.name == "edge":
        first.close()

    again = backend.open()

    assert (again.applied_seq(), again.skipped_count(), again.indexer_state()) == (7, 1, state)
    assert again.point_count() == 1  # neither bookkeeping point counts as a memory
    again.set_applied_seq(8)  # no state given: the recorded one stays
    assert (again.applied_seq(), again.indexer_state()) == (8, state)
    again.set_applied_seq(9, state={"layout": 2})
    assert again.indexer_state() == {"layout": 2}
    again.reset()
    assert (again.applied_seq(), again.indexer_state(), again.point_count()) == (0, {}, 0)
    if backend.name == "edge":
        again.close()


def test_recent_by_last_change_orders_on_valid_from(index: MemoryIndex) -> None:
    points = [memory(f"note {n}", ts=float(n)) for n in range(4)]
    for point, changed in zip(points, (40.0, 10.0, 30.0, 30.0), strict=True):
        point.payload[VALID_FROM] = changed
    index.upsert(points)
    tied = sorted([points[2].id, points[3].id], key=lambda key: point_id("a", key))

    first = index.recent("a", SearchFilter(), 2, by=VALID_FROM)
    rest = index.recent("a", SearchFilter(), 2, Position(first[-1][VALID_FROM], first[-1][POINT]), by=VALID_FROM)

    assert [p["id"] for p in first + rest] == [points[0].id, *tied, points[1].id]
    assert [p["content"] for p in index.recent("a", SearchFilter(), 4)] == ["note 3", "note 2", "note 1", "note 0"]


def test_scan_pages_every_match_with_its_dense_vector_and_the_relation_filter_applies(index: MemoryIndex) -> None:
    flagged = memory("flagged", dense=Y)
    flagged.payload["relations"] = [{"kind": "contradicts", "memory_id": uuid7(), "note": ""}]
    index.upsert([*(memory(f"plain {i}") for i in range(5)), flagged, memory("elsewhere", namespace="b")])

    pages = list(index.scan("a", SearchFilter(), with_vectors=True, page=2))
    assert [len(p) for p in pages] == [2, 2, 2]
    scanned = {payload["content"]: dense for page in pages for payload, dense in page}
    assert set(scanned) == {*(f"plain {i}" for i in range(5)), "flagged"}
    assert scanned["flagged"] == pytest.approx(Y) and scanned["plain 0"] == pytest.approx(X)
    assert [p["content"] for page in index.scan("a", SearchFilter()) for p, _ in page] != []
    assert all(dense == [] for page in index.scan("a", SearchFilter()) for _, dense in page)

    related = SearchFilter(relation_kinds=["contradicts", "merged-into"])
    assert [p["content"] for page in index.scan("a", related) for p, _ in page] == ["flagged"]
    assert index.count("a", SearchFilter(relation_kinds=["supersedes"])) == 0


def test_namespaces_counts_the_active_memories_of_each(index: MemoryIndex) -> None:
    index.upsert([memory("one"), memory("two"), memory("gone", status="archived"), memory("three", namespace="b")])
    assert index.namespaces() == {"a": 2, "b": 1}
