"""The Edge index builds its vector index in a child process: the shard answers meanwhile, and writes made during
the build are in the built index once it is swapped in."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import IndexPoint, IndexQuery
from engram.index.qdrant_edge import BUILDING, EMPTY, VECTORS_DISK, EdgeIndex
from engram.index.qdrant_edge import settings as shard_settings
from engram.model import SearchFilter

pytestmark = pytest.mark.integration
DIM = 384
BM25 = Bm25Encoder()


def points(count: int, seed: int) -> list[IndexPoint]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for row in vectors:
        memory_id = uuid7()
        payload = {"id": memory_id, "namespace": "a", "status": "active", "content": f"memory {memory_id}",
                   "_created_ts": 1.0, "tags": ["t"], "metadata": {"k": "v"}}  # fmt: skip
        out.append(IndexPoint(memory_id, payload, row.tolist(), BM25.document("memory")))
    return out


def nearest(index: EdgeIndex, point: IndexPoint) -> str:
    request = IndexQuery(namespace="a", filter=SearchFilter(), limit=1, dense=point.dense)
    return index.search(request)["dense"][0].id


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of a few hundred points, so that the build makes graphs in a test."""
    monkeypatch.setattr(shard_settings, "INDEXING_KB", 32)
    monkeypatch.setattr(shard_settings, "SEGMENT_KB", 512)


def mapped_under(path: Path) -> list[str]:
    """The files under ``path`` this process has mapped (Linux)."""
    return [line for line in Path("/proc/self/maps").read_text().splitlines() if str(path) in line]


@pytest.mark.usefixtures("small_segments")
@pytest.mark.parametrize("process", [False, True], ids=["in-process", "shard-process"])
def test_a_search_answers_while_the_vector_index_builds_and_writes_meanwhile_are_kept(
    tmp_path: Path, process: bool
) -> None:
    """Either way the shard is loaded (the node's default: in a process of its own, ENGRAM_INDEX_PROCESS)."""
    index = EdgeIndex(tmp_path / "index", dim=DIM, optimize_after=1, process=process)
    first = points(2000, seed=1)
    index.upsert(first)
    index.set_applied_seq(2000)
    index.maintain()
    assert index.building and (tmp_path / f"index{BUILDING}").is_dir()

    found = nearest(index, first[7])  # answered while the child process builds
    assert index.building, "the build ended before the search answered: the test proves nothing"
    assert found == first[7].id

    later = points(50, seed=2)
    index.upsert(later)  # written during the build: replayed on the built copy when it is swapped in
    index.set_applied_seq(2050, skipped=1)
    index.finish_build(timeout=300)

    assert not index.building and not (tmp_path / f"index{BUILDING}").exists()
    assert index.count("a") == 2050 and index.applied_seq() == 2050 and index.skipped_count() == 1
    for point in (first[0], first[-1], later[0], later[-1]):
        assert nearest(index, point) == point.id
    assert index.retrieve("a", [later[3].id])[0]["metadata"] == {"k": "v"}
    if process:  # neither the shard nor the built copy was ever loaded here: their loads held another GIL
        assert mapped_under(tmp_path) == []
    index.close()
    reopened = EdgeIndex(tmp_path / "index", dim=DIM, process=process)
    assert reopened.check() is None and reopened.count("a") == 2050
    reopened.close()


@pytest.mark.usefixtures("small_segments")
def test_closing_during_a_build_stops_it_and_leaves_the_index_whole(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", dim=DIM, optimize_after=1)
    batch = points(1000, seed=3)
    index.upsert(batch)
    index.maintain()
    index.close()
    assert not (tmp_path / f"index{BUILDING}").exists()
    reopened = EdgeIndex(tmp_path / "index", dim=DIM)
    assert reopened.count("a") == 1000 and nearest(reopened, batch[5]) == batch[5].id
    reopened.close()


@pytest.mark.usefixtures("small_segments")
@pytest.mark.parametrize("process", [False, True], ids=["in-process", "shard-process"])
def test_builds_follow_one_another_while_writes_go_on_and_leave_nothing_behind(tmp_path: Path, process: bool) -> None:
    """The built copy is loaded and swapped in by a thread of its own while the writer goes on; a second build runs
    on the swapped-in shard, and closing leaves only the shard itself."""
    index = EdgeIndex(tmp_path / "index", dim=DIM, optimize_after=1, process=process)
    written: list[IndexPoint] = []
    for round_ in range(2):
        batch = points(1000, seed=10 + round_)
        index.upsert(batch)
        written += batch
        index.maintain()
        assert index.building
        build = index._build
        assert build is not None
        build.process.wait(300)
        seq = len(written)
        while index.building:  # the writer goes on while the copy is loaded and caught up, in small batches
            more = points(5, seed=100 + seq)
            index.upsert(more)
            written += more
            seq += 5
            index.set_applied_seq(seq)  # which starts the swap once the child has ended
            assert seq < len(written) + 10_000
        assert index.count("a") == len(written)
        for point in (batch[0], written[-1]):
            assert nearest(index, point) == point.id
    index.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["index", f"index{EMPTY}"]
    reopened = EdgeIndex(tmp_path / "index", dim=DIM)
    assert reopened.check() is None and reopened.count("a") == len(written)
    assert nearest(reopened, written[-1]) == written[-1].id
    reopened.close()


def test_a_shard_starting_over_copies_the_kept_empty_one_made_with_the_same_settings(tmp_path: Path) -> None:
    """The first shard created is kept empty beside the index (EMPTY); a reset copies it rather than creating the
    payload indexes again, unless it was made with other settings."""
    from engram.index.qdrant_edge import EMPTY_KIND

    index = EdgeIndex(tmp_path / "index", dim=DIM)
    kind = (tmp_path / f"index{EMPTY}" / EMPTY_KIND).read_text()
    index.upsert(points(10, seed=20))
    index.reset()
    assert index.count("a") == 0 and index.check() is None
    assert not (tmp_path / "index" / EMPTY_KIND).exists()
    index.close()

    (tmp_path / f"index{EMPTY}" / EMPTY_KIND).write_text("made otherwise")
    other = EdgeIndex(tmp_path / "index", dim=DIM, vectors=VECTORS_DISK)
    other.reset()  # the kept one does not fit: created anew, and kept in its place
    assert other.check() is None and other.count("a") == 0
    assert (tmp_path / f"index{EMPTY}" / EMPTY_KIND).read_text() != kind
    other.upsert(points(5, seed=21))
    assert other.count("a") == 5
    other.close()


def test_a_search_asks_for_questions_only_once_a_point_holds_some(tmp_path: Path) -> None:
    """Until an LLM adds questions to a memory, the questions retriever would scan for nothing: holds_questions
    says so, and remembers it across a restart."""
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    batch = points(3, seed=30)
    index.upsert(batch)
    index.set_applied_seq(3)
    assert not index.holds_questions()
    index.close()
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    assert not index.holds_questions()
    assert index.update_questions("a", batch[0].id, [batch[1].dense], ["what is it?"])
    assert index.holds_questions()
    index.set_applied_seq(4)
    index.close()
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    assert index.holds_questions()
    index.reset()
    assert not index.holds_questions()
    index.close()


def test_a_replayed_write_is_one_of_the_shards_writes_and_nothing_else(tmp_path: Path) -> None:
    """The writes recorded during a build cross to the built copy pickled (ShardCore.apply): a recorded write is
    applied as the live one was, and a pickled call that is not a write (a close, a read) is refused."""
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    core = index._shard.core  # in the test's process (process=False by default)
    stored = (uuid7(), {"note": "kept"})
    core.apply([pickle.dumps(("write_raw", ([stored],)))])
    assert core.raw(stored[0]) == {"note": "kept"}
    for refused in ("close", "flush", "retrieve", "__init__"):
        with pytest.raises(ValueError, match="not a write of the shard"):
            core.apply([pickle.dumps((refused, ()))])
    assert core.raw(stored[0]) == {"note": "kept"}  # still open: the close was not called
    index.close()
