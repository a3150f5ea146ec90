"""Index congruence: the same test bodies against Qdrant Edge and the Qdrant server adapter (local mode)."""

from __future__ import annotations

import random
import re
import uuid
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
    CONTENT_KEY,
    CREATED_TS,
    DENSE,
    EXPIRES_TS,
    FAR,
    HANDOFF_STATUS,
    HANDOFF_TO,
    KEY,
    POINT,
    QUESTIONS,
    SPARSE,
    VALID_FROM,
    VALID_TO,
    WORLD_FROM,
    WORLD_TO,
    IndexPoint,
    IndexQuery,
    MemoryIndex,
    Position,
    point_id,
    version_point_id,
)
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_server import QdrantServerIndex
from engram.model import PACK_FILE, STATUSES, SearchFilter
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
    request = IndexQuery(namespace, flt or SearchFilter(), limit, dense=dense, sparse=BM25.query(text))
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
    hits = index.search(IndexQuery("a", SearchFilter(), 10, questions=Z)).get(QUESTIONS, [])
    assert [h.id for h in hits] == [target.id]  # the other memory has no question vectors
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)  # MaxSim: its best question is the query itself
    assert index.retrieve("a", [target.id])[0]["questions"] == ["which postgres runs staging?", "db version?"]


def test_update_questions_never_crosses_a_namespace(index: MemoryIndex) -> None:
    point = memory("team a's secret")
    index.upsert([point])

    assert index.update_questions("b", point.id, [Y], ["leaked?"]) is False
    assert index.update_questions("a", uuid7(), [Y], ["nobody"]) is False
    assert index.retrieve("a", [point.id])[0]["questions"] == []
    assert index.search(IndexQuery("a", SearchFilter(), 10, questions=Y)).get(QUESTIONS, []) == []


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
            request = IndexQuery("a", SearchFilter(), len(corpus), dense=dense, sparse=BM25.query(text))
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

    request = IndexQuery("a", SearchFilter(as_of=15.0), 10, dense=X, with_payload=True)
    assert [s.payload["content"] for s in index.search(request)[DENSE]] == ["was true"]
    request = IndexQuery("a", SearchFilter(as_of=25.0), 10, dense=X, with_payload=True)
    assert [s.payload["content"] for s in index.search(request)[DENSE]] == ["is true"]
    request = IndexQuery("a", SearchFilter(as_of=5.0), 10, dense=X, with_payload=True)
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


# --- randomized congruence: random payloads and filters, both adapters against a plain-Python reference ---------
#
# As qdrant-client's own congruence tests do: random payloads go into both adapters, random SearchFilters come out,
# and every answer (count, both listings page by page, scan, facet, search with room for every hit; and the other
# selections: versions_of, held_elsewhere, namespaces, due) must equal the reference's, which reads SearchFilter's
# documented meaning straight off the payloads (never through engram.index.filters).

ROUNDS = 40
SEED = 23  # round n runs on seed SEED * 1000 + n; a failure names its round's seed, to rerun alone in ROUND_SEEDS
ROUND_SEEDS: list[int] = []  # e.g. [23017]: only those rounds
POINTS_PER_ROUND = 60
FILTERS_PER_ROUND = 6
TIMES = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)  # few values, so listings tie and ranges hit their bounds exactly
TAGS = ("ops", "prod", "db", "ui")
TYPES = ("fact", "decision", "finding", "handoff", PACK_FILE)
TOPICS = ("infra", "release", "auth")
OWNERS = ("x@laptop", "y@phone", "z")
PROJECTS = ("engram", "atlas")
TEAMS = ("core", "web")
CONVERSATIONS = ("c1", "c2")
TARGETS = {"gemini@laptop": ["gemini@laptop", "gemini"], "cursor": ["cursor"]}  # HANDOFF_TO as the indexer writes it
HANDOFF_STATES = ("pending", "accepted", "completed")
PACKS = ("p1", "p2")
KINDS = ("supersedes", "contradicts", "context-dependent", "merged-into")
CONTENT_KEYS = ("k1", "k2", "k3")
FACET_KEYS = ("tags", "owner_agent", "memory_type", "status", "topics", "project", "team", "conversation_id",
              HANDOFF_TO, HANDOFF_STATUS)  # fmt: skip
ADAPTERS = ("Qdrant Edge", "Qdrant server")


def _some(rng: random.Random, values: tuple[str, ...], most: int) -> list[str]:
    return rng.sample(values, rng.randint(0, most))


def random_payload(rng: random.Random, namespace: str, memory_id: str, n: int) -> dict[str, Any]:
    """A payload shaped like the indexer's, its optional fields sometimes absent, sometimes empty."""
    kind = rng.choice(TYPES)
    valid_from = rng.choice(TIMES)
    payload: dict[str, Any] = {
        "id": memory_id, "namespace": namespace, "content": f"memory {rng.choice(TAGS)} {n}",
        "tags": _some(rng, TAGS, 3), "memory_type": kind, "topics": _some(rng, TOPICS, 2),
        "owner_agent": rng.choice(OWNERS), "status": rng.choice(("active", "active", *STATUSES)), "questions": [],
        CREATED_TS: rng.choice(TIMES), VALID_FROM: valid_from, VALID_TO: rng.choice((FAR, valid_from + 2)),
        WORLD_FROM: rng.choice((-FAR, -FAR, *TIMES[:3])), WORLD_TO: rng.choice((FAR, FAR, *TIMES[3:])),
        EXPIRES_TS: rng.choice((FAR, *TIMES)),
    }  # fmt: skip
    for key, values in (("project", PROJECTS), ("team", TEAMS), ("conversation_id", CONVERSATIONS)):
        if rng.random() < 0.8:
            payload[key] = rng.choice((*values, ""))
    if kind == "handoff":
        payload[HANDOFF_TO] = TARGETS[rng.choice(list(TARGETS))]
        payload[HANDOFF_STATUS] = rng.choice(HANDOFF_STATES)
    elif rng.random() < 0.7:
        payload |= {HANDOFF_TO: [], HANDOFF_STATUS: ""}
    if rng.random() < 0.6:
        payload["relations"] = [{"kind": k, "memory_id": memory_id, "note": ""} for k in _some(rng, KINDS, 2)]
    if rng.random() < 0.8:  # absent in an index the indexer wrote before content keys (or "": no key)
        payload[CONTENT_KEY] = rng.choice((*CONTENT_KEYS, ""))
    if kind == PACK_FILE or rng.random() < 0.3:
        payload["metadata"] = {"pack": rng.choice(PACKS)}
    elif rng.random() < 0.5:
        payload["metadata"] = {}
    return payload


def random_corpus(rng: random.Random, namespaces: tuple[str, str], size: int) -> list[IndexPoint]:
    """Points of two namespaces: current versions (key = memory id) and earlier ones (key = a version's id), some
    memory ids in both namespaces."""
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(size // 2)]
    points: dict[tuple[str, str], IndexPoint] = {}
    for n in range(size):
        namespace, memory_id = rng.choice((*namespaces, namespaces[0])), rng.choice(ids)
        key = memory_id if rng.random() < 0.6 else version_point_id(memory_id, rng.randint(1, 3))
        dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
        payload = random_payload(rng, namespace, memory_id, n)
        points.setdefault((namespace, key), IndexPoint(key, payload, dense, BM25.document(payload["content"])))
    return list(points.values())


def random_filter(rng: random.Random) -> SearchFilter:
    """A random combination of SearchFilter's fields, mostly of a few (more would rarely match anything)."""

    def some(values: tuple[str, ...], most: int = 2) -> list[str]:
        return rng.sample(values, rng.randint(1, most))

    after, before = sorted(rng.sample((0.5, 3.5, *TIMES), 2))
    choices: dict[str, Callable[[], Any]] = {
        "tags": lambda: some(TAGS), "owner_agent": lambda: rng.choice((*OWNERS, "nobody")),
        "memory_types": lambda: some(TYPES, 3), "topics": lambda: some(TOPICS), "statuses": lambda: some(STATUSES, 3),
        "created_after": lambda: after, "created_before": lambda: before,
        "conversation_id": lambda: rng.choice(CONVERSATIONS), "project": lambda: rng.choice(PROJECTS),
        "team": lambda: rng.choice(TEAMS), "as_of": lambda: rng.choice((2.5, *TIMES)),
        "handoff_target": lambda: rng.choice(("gemini@laptop", "gemini", "cursor", "nobody")),
        "handoff_statuses": lambda: some(HANDOFF_STATES), "relation_kinds": lambda: some(KINDS, 3),
        "pack": lambda: rng.choice(PACKS), "content_keys": lambda: some(CONTENT_KEYS),
    }  # fmt: skip
    fields = rng.sample(sorted(choices), rng.choice((0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 5)))
    return SearchFilter(**{name: choices[name]() for name in fields})


def _values(payload: dict[str, Any], key: str) -> list[Any]:
    value = payload.get(key)
    return value if isinstance(value, list) else [] if value is None else [value]


def reference_matches(payload: dict[str, Any], namespace: str, flt: SearchFilter) -> bool:
    """SearchFilter's meaning, read off one payload: tags all-of; types, topics, statuses (default: active),
    handoff statuses, relation kinds and content keys any-of; created in [after, before); as_of within both validity
    windows; pack files only for their pack or their type."""
    kind, created, at = payload["memory_type"], payload[CREATED_TS], flt.as_of
    pack = (payload.get("metadata") or {}).get("pack")
    equal = (("owner_agent", flt.owner_agent), ("conversation_id", flt.conversation_id), ("project", flt.project),
             ("team", flt.team), (HANDOFF_TO, flt.handoff_target))  # fmt: skip
    return (
        payload["namespace"] == namespace
        and payload["status"] in (flt.statuses or ["active"])
        and set(flt.tags) <= set(payload["tags"])
        and all(not wanted or wanted in _values(payload, key) for key, wanted in equal)
        and (not flt.memory_types or kind in flt.memory_types)
        and (not flt.topics or bool(set(flt.topics) & set(payload["topics"])))
        and (not flt.handoff_statuses or payload.get(HANDOFF_STATUS) in flt.handoff_statuses)
        and (not flt.relation_kinds or any(r["kind"] in flt.relation_kinds for r in payload.get("relations", [])))
        and (not flt.content_keys or payload.get(CONTENT_KEY) in flt.content_keys)
        and (pack == flt.pack if flt.pack else kind != PACK_FILE or PACK_FILE in flt.memory_types)
        and (flt.created_after is None or created >= flt.created_after)
        and (flt.created_before is None or created < flt.created_before)
        and (
            at is None
            or (payload[VALID_FROM] <= at < payload[VALID_TO] and payload[WORLD_FROM] <= at < payload[WORLD_TO])
        )
    )


@dataclass(frozen=True)
class Questions:
    """What is asked of both adapters and of the reference about one filter."""

    namespace: str
    flt: SearchFilter
    page: int  # listings and scans read this many at a time
    facet_key: str
    dense: list[float]
    limit: int  # searches: room for every point of the corpus


def _listing(index: MemoryIndex, q: Questions, by: str) -> list[str]:
    """Every key of a listing, read a page at a time."""
    keys: list[str] = []
    after: Position | None = None
    while page := index.recent(q.namespace, q.flt, q.page, after, by=by):
        assert len(page) <= q.page
        keys += [p[KEY] for p in page]
        after = Position(page[-1][by], page[-1][POINT])
    return keys


def answers(index: MemoryIndex, q: Questions) -> dict[str, Any]:
    request = IndexQuery(q.namespace, q.flt, q.limit, dense=q.dense, sparse=BM25.query("memory"))
    hits = index.search(request)
    return {
        "count": index.count(q.namespace, q.flt),
        "recent": _listing(index, q, CREATED_TS),
        "recent by update": _listing(index, q, VALID_FROM),
        "scan": sorted(p[KEY] for page in index.scan(q.namespace, q.flt, page=q.page) for p, _ in page),
        "facet": index.facet(q.namespace, q.facet_key, q.flt),
        "dense search": sorted(s.id for s in hits[DENSE]),
        "bm25 search": sorted(s.id for s in hits[SPARSE]),
    }


def reference_answers(payloads: list[dict[str, Any]], q: Questions) -> dict[str, Any]:
    matched = [p for p in payloads if reference_matches(p, q.namespace, q.flt)]
    keys = sorted(p[KEY] for p in matched)
    return {
        "count": len(matched),
        "recent": _reference_listing(matched, CREATED_TS),
        "recent by update": _reference_listing(matched, VALID_FROM),
        "scan": keys,
        "facet": _reference_facet(matched, q.facet_key),
        "dense search": keys,
        "bm25 search": keys,  # every content has the word "memory"
    }


def _reference_listing(payloads: list[dict[str, Any]], by: str) -> list[str]:
    """Newest first by `by`, ties by stored point id."""
    return [p[KEY] for p in sorted(payloads, key=lambda p: (-p[by], point_id(p["namespace"], p[KEY])))]


def _reference_facet(payloads: list[dict[str, Any]], key: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in (v for p in payloads for v in _values(p, key) if v not in (None, "")):
        counts[value] = counts.get(value, 0) + 1
    return counts


def congruent_round(indexes: tuple[MemoryIndex, MemoryIndex], seed: int) -> list[IndexPoint]:
    """One round on an empty index: a random corpus, random filters, the selections across namespaces and those of
    one memory (its purge included)."""
    rng = random.Random(seed)
    a, b = f"{seed}-a", f"{seed}-b"
    corpus = random_corpus(rng, (a, b), POINTS_PER_ROUND)
    for index in indexes:
        index.upsert(corpus)
    payloads = [{**p.payload, KEY: p.id} for p in corpus]
    for _ in range(FILTERS_PER_ROUND):
        dense = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
        namespace = rng.choice((a, a, a, b, f"{seed}-c"))
        page = rng.choice((1, 2, 3, 5, 8))
        q = Questions(namespace, random_filter(rng), page, rng.choice(FACET_KEYS), dense, len(corpus))
        expected = reference_answers(payloads, q)
        for name, index in zip(ADAPTERS, indexes, strict=True):
            got = answers(index, q)
            for what, want in expected.items():
                assert got[what] == want, f"{name}, {what} (round seed {seed}): {q}"
    at, facet_keys = rng.choice(TIMES), {a: rng.choice(FACET_KEYS), b: rng.choice(FACET_KEYS)}
    due = sorted((p["namespace"], p[KEY]) for p in payloads if p["status"] == "active" and p[EXPIRES_TS] <= at)
    active = {ns: n for ns in (a, b) if (n := sum(p["status"] == "active" for p in payloads if p["namespace"] == ns))}
    every_status = SearchFilter(statuses=list(STATUSES))
    for name, index in zip(ADAPTERS, indexes, strict=True):
        context = f"{name} (round seed {seed})"
        assert sorted((p["namespace"], p[KEY]) for p in index.due(at, len(payloads))) == due, f"due at {at}: {context}"
        assert index.namespaces() == active, f"namespaces: {context}"
        for namespace, key in facet_keys.items():  # no filter given: every status faceted, active memories counted
            faceted = [p for p in payloads if reference_matches(p, namespace, every_status)]
            assert index.facet(namespace, key) == _reference_facet(faceted, key), f"facet {key}: {context}"
            counted = sum(reference_matches(p, namespace, SearchFilter()) for p in payloads)
            assert index.count(namespace) == counted, f"count: {context}"
    memory_id = rng.choice(corpus).payload["id"]
    versions = {ns: sorted(p[KEY] for p in payloads if p["namespace"] == ns and p["id"] == memory_id) for ns in (a, b)}
    for name, index in zip(ADAPTERS, indexes, strict=True):
        context = f"{name} (round seed {seed}), memory {memory_id}"
        for namespace, other in ((a, b), (b, a)):
            assert sorted(p[KEY] for p in index.versions_of(namespace, memory_id)) == versions[namespace], context
            assert index.held_elsewhere(namespace, memory_id) == bool(versions[other]), context
        index.delete_memory(a, memory_id)  # its points in a, and only those
        assert index.versions_of(a, memory_id) == [], context
        assert sorted(p[KEY] for p in index.versions_of(b, memory_id)) == versions[b], context
        assert index.point_count() == len(payloads) - len(versions[a]), context
    return corpus


def test_random_filters_and_payloads_get_the_reference_answers_from_both_adapters(tmp_path: Path) -> None:
    edge, server = EdgeIndex(tmp_path / "index", dim=DIM), QdrantServerIndex.from_url(":memory:", dim=DIM)
    indexes = (edge, server)
    try:
        for seed in ROUND_SEEDS or [SEED * 1000 + n for n in range(ROUNDS)]:
            corpus = congruent_round(indexes, seed)
            # Empty again for the next round. Edge: a purge of every memory (a fresh shard would cost 0.2 s). The
            # server: a reset (local mode keeps deleted points, and its brute-force filters read them all).
            for namespace, memory_id in sorted({(p.payload["namespace"], p.payload["id"]) for p in corpus}):
                edge.delete_memory(namespace, memory_id)
            assert edge.point_count() == 0
            server.reset()
    finally:
        for index in indexes:
            index.close()
