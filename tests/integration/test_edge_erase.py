"""A purge leaves nothing on disk: Qdrant Edge keeps deleted points in its WAL and segments, so after a delete the
shard is rewritten into a fresh one (erase_deleted) that holds every other point, its vectors and the bookkeeping,
on a real shard in a temp dir; an interrupted rewrite is finished or cleaned up by the next call or open."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import DENSE, QUESTIONS, SPARSE, IndexPoint, IndexQuery
from engram.index.qdrant_edge import ERASE_PENDING, ERASING, REWRITING, EdgeIndex, move_aside
from engram.index.qdrant_edge import settings as shard_settings
from engram.model import SearchFilter

pytestmark = pytest.mark.integration
DIM = 384
BM25 = Bm25Encoder()


def point(content: str, rng: np.random.Generator, *, memory_id: str = "", version: int = 1) -> IndexPoint:
    vector = rng.standard_normal(DIM).astype(np.float32)
    vector /= np.linalg.norm(vector)
    memory_id = memory_id or uuid7()
    payload = {
        "id": memory_id, "namespace": "a", "status": "active", "content": content, "version": version,
        "tags": [content.split()[-1]], "_created_ts": 1.0,
    }  # fmt: skip
    questions = [vector.tolist()] if version > 1 else []
    return IndexPoint(memory_id, payload, vector.tolist(), BM25.document(content), questions)


def files_holding(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of a few hundred points, so that optimize() moves points into indexed segments in a test."""
    monkeypatch.setattr(shard_settings, "INDEXING_KB", 32)
    monkeypatch.setattr(shard_settings, "SEGMENT_KB", 512)


@pytest.mark.usefixtures("small_segments")
@pytest.mark.parametrize("process", [False, True], ids=["in-process", "shard-process"])
def test_a_deleted_memory_leaves_no_byte_in_the_shard_and_the_rest_is_kept(tmp_path: Path, process: bool) -> None:
    rng = np.random.default_rng(7)
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM, optimize_after=1, process=process)
    token = f"zq{uuid.uuid4().hex[:12]}"
    secret = point(f"the vault code is {token}", rng)
    kept = [point(f"memory number {n} w{n}", rng, version=1 + n % 2) for n in range(600)]  # some with questions
    index.upsert([secret, *kept[:300]])
    index.maintain()  # optimize: the secret's first version now sits in an indexed segment
    index.finish_build()
    second = point(f"the vault code is still {token}", rng, memory_id=secret.id, version=2)
    index.upsert([second, *kept[300:]])
    index.set_applied_seq(700, skipped=2, state={"layout": 3, "agents": {"x": 1}})
    index.flush()
    assert files_holding(path, token), "the test proves nothing if the token was never on disk"

    index.delete_memory("a", secret.id)
    assert (path / ERASE_PENDING).exists()
    assert files_holding(path, token), "a delete alone leaves the data in the WAL and the segments"
    index.erase_deleted()

    assert files_holding(tmp_path, token) == []
    assert not (path / ERASE_PENDING).exists()
    assert index.point_count() == 600
    assert (index.applied_seq(), index.skipped_count(), index.indexer_state()["agents"]) == (700, 2, {"x": 1})
    probe = kept[123]
    found = index.search(
        IndexQuery(namespace="a", filter=SearchFilter(), limit=1, dense=probe.dense, sparse=probe.sparse)
    )
    assert found[DENSE][0].id == probe.id and found[SPARSE][0].id == probe.id
    asked = IndexQuery(namespace="a", filter=SearchFilter(), limit=1, questions=probe.dense)
    assert index.search(asked)[QUESTIONS][0].id == probe.id  # its question vectors came along (n % 2 == 1)
    assert index.retrieve("a", [kept[5].id])[0]["tags"] == ["w5"]
    assert index.count("a", SearchFilter(tags=["w7"])) == 1  # the payload indexes came along
    assert index.check() is None
    index.close()

    reopened = EdgeIndex(path, dim=DIM, process=process)
    assert reopened.point_count() == 600 and reopened.applied_seq() == 700
    reopened.upsert([point("after the rewrite wlast", rng)])
    assert reopened.point_count() == 601
    reopened.close()


def test_nothing_is_rewritten_when_nothing_was_deleted(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    index.upsert([point("one w1", rng)])
    index.delete_memory("a", uuid7())  # not there
    segments = sorted(p.name for p in (tmp_path / "index" / "segments").iterdir())
    index.erase_deleted()
    assert sorted(p.name for p in (tmp_path / "index" / "segments").iterdir()) == segments
    index.close()


def test_a_damaged_copy_kept_aside_is_removed_with_the_purged_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM)
    token = f"zq{uuid.uuid4().hex[:12]}"
    secret = point(f"secret {token}", rng)
    index.upsert([secret, point("other w2", rng)])
    index.close()
    move_aside(path)  # as a start that found the shard damaged does; the rebuild from the log follows
    index = EdgeIndex(path, dim=DIM)
    index.upsert([secret, point("other w2", rng)])
    index.delete_memory("a", secret.id)
    index.erase_deleted()
    assert files_holding(tmp_path, token) == []
    index.close()


def test_an_interrupted_rewrite_is_finished_by_the_next_call_and_leftovers_removed(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM)
    token = f"zq{uuid.uuid4().hex[:12]}"
    secret = point(f"secret {token}", rng)
    index.upsert([secret, point("other w3", rng)])
    index.delete_memory("a", secret.id)
    index.close()  # a crash before the copy: the marker stays with the shard
    (tmp_path / f"index{REWRITING}").mkdir()  # and a half-written copy
    (tmp_path / f"index{ERASING}").mkdir()

    index = EdgeIndex(path, dim=DIM)
    assert not (tmp_path / f"index{REWRITING}").exists() and not (tmp_path / f"index{ERASING}").exists()
    index.erase_deleted()
    assert files_holding(tmp_path, token) == [] and index.point_count() == 1
    index.close()
