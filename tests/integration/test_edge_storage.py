"""Where the Edge index keeps its vectors: in memory (exact) or on disk with int8 copies in memory (edge devices);
a shard stored otherwise than the settings ask is reported, so the indexer rebuilds it from the log."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from engram.embed.sparse import Bm25Encoder
from engram.ids import uuid7
from engram.index import DENSE, QUESTIONS, IndexPoint, IndexQuery
from engram.index.qdrant_edge import CONFIG_FILE, VECTORS_DISK, VECTORS_RAM, EdgeIndex
from engram.index.qdrant_edge import settings as shard_settings
from engram.model import SearchFilter
from engram.process.heap import drop_sequential_copies

pytestmark = pytest.mark.integration
DIM = 384
BM25 = Bm25Encoder()
MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")  # a mapping's first line in /proc/<pid>/smaps


def points(count: int, seed: int) -> list[IndexPoint]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    out = []
    for n, row in enumerate(vectors):
        memory_id = uuid7()
        payload = {"id": memory_id, "namespace": "a", "status": "active", "content": f"memory {n}", "_created_ts": 1.0}
        questions = [row.tolist()] if n % 10 == 0 else []  # a few memories have question vectors
        out.append(IndexPoint(memory_id, payload, row.tolist(), BM25.document(f"memory {n}"), questions))
    return out


def nearest(index: EdgeIndex, point: IndexPoint, using: str = DENSE) -> str:
    vector = point.dense if using == DENSE else [point.dense]
    request = IndexQuery(namespace="a", filter=SearchFilter(), limit=1, **{using: vector})
    return index.search(request)[using][0].id


def stored(path: Path) -> dict[str, dict[str, object]]:
    vectors: dict[str, dict[str, object]] = json.loads((path / CONFIG_FILE).read_text())["vectors"]
    return vectors


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of a few hundred points, so that optimize() builds graphs (and int8 copies) in a test."""
    monkeypatch.setattr(shard_settings, "INDEXING_KB", 32)
    monkeypatch.setattr(shard_settings, "SEGMENT_KB", 512)


@pytest.mark.usefixtures("small_segments")
def test_vectors_on_disk_are_searched_through_int8_copies_and_every_point_is_found(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", dim=DIM, optimize_after=1, vectors=VECTORS_DISK)
    batch = points(600, seed=1)
    for start in range(0, len(batch), 100):
        index.upsert(batch[start : start + 100])
        index.maintain()
        index.finish_build()
    config = stored(tmp_path / "index")
    assert config[DENSE]["memory"] == "cold" and config[DENSE]["quantization_config"]
    assert config[QUESTIONS]["memory"] == "cold"
    for point in batch[::37]:
        assert nearest(index, point) == point.id
    assert nearest(index, batch[0], QUESTIONS) == batch[0].id
    assert index.check() is None
    index.close()
    reopened = EdgeIndex(tmp_path / "index", dim=DIM, vectors=VECTORS_DISK)
    assert reopened.check() is None and reopened.count("a") == 600
    reopened.close()


def test_question_vectors_stay_on_disk_when_dense_ones_are_in_memory(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", dim=DIM)
    config = stored(tmp_path / "index")
    assert config[DENSE]["memory"] == "cached" and config[DENSE].get("quantization_config") is None
    assert config[QUESTIONS]["memory"] == "cold"
    index.close()


@pytest.mark.parametrize(("before", "after"), [(VECTORS_RAM, VECTORS_DISK), (VECTORS_DISK, VECTORS_RAM)])
def test_a_shard_stored_otherwise_asks_for_a_rebuild_and_reset_stores_it_as_asked(
    tmp_path: Path, before: str, after: str
) -> None:
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM, vectors=before)
    first = points(50, seed=2)
    index.upsert(first)
    index.close()

    index = EdgeIndex(path, dim=DIM, vectors=after)
    problem = index.check()
    assert problem is not None and "other storage settings" in problem and "dense" in problem
    assert index.count("a") == 50  # loaded as it was stored: reads still work until the rebuild
    index.close()
    index = EdgeIndex(path, dim=DIM, vectors=after)  # not rewritten by a load: still reported after a restart
    assert index.check() == problem

    index.reset()  # what the indexer does with a problem: start over, then apply the log again
    assert index.check() is None and index.count("a") == 0
    index.upsert(first)
    assert nearest(index, first[7]) == first[7].id
    index.close()
    assert EdgeIndex(path, dim=DIM, vectors=after).check() is None


def test_a_shard_from_before_the_storage_settings_is_rebuilt(tmp_path: Path) -> None:
    """Question vectors used to be read into memory whole (Qdrant's default, no placement recorded)."""
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM)
    index.close()
    config = json.loads((path / CONFIG_FILE).read_text())
    for params in config["vectors"].values():
        params.pop("memory")
    (path / CONFIG_FILE).write_text(json.dumps(config))

    index = EdgeIndex(path, dim=DIM)
    assert index.check() == "built with other storage settings: its questions vectors in RAM, now on disk"
    index.close()


def test_an_unknown_vector_storage_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="vectors must be one of"):
        EdgeIndex(tmp_path / "index", dim=DIM, vectors="tape")


def resident_kib(root: Path, part: str) -> int:
    """Resident KiB of this process's mappings of files under ``root`` whose path contains ``part``."""
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if MAPPING.match(line):
            current = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
        elif line.startswith("Rss:") and current.startswith(str(root)) and part in current:
            total += int(line.split()[1])
    return total


def test_a_loaded_shard_hands_back_the_pages_its_load_read_and_still_filters_on_them(tmp_path: Path) -> None:
    """A load reads every payload index file whole (78 MiB for an appendable segment, however few points it
    holds); the index hands those pages back, and filters on the indexed fields still work."""
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM)
    batch = points(100, seed=4)
    index.upsert(batch)
    index.close()

    index = EdgeIndex(path, dim=DIM)
    assert resident_kib(path, "/payload_index/") < 8 * 1024
    assert index.count("a") == 100
    assert index.versions_of("a", batch[3].id)[0]["content"] == "memory 3"  # the id index answers
    index.close()


def sequential_kib(root: Path) -> int:
    """Resident KiB of this process's mappings of files under ``root`` opened for sequential reads (VmFlags sr)."""
    total, current, rss = 0, "", 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if MAPPING.match(line):
            current = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
        elif line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("VmFlags:") and current.startswith(str(root)) and "sr" in line.split():
            total += rss
    return total


@pytest.mark.usefixtures("small_segments")
def test_vectors_a_scan_read_through_the_second_mapping_are_resident_once_after_a_drop(tmp_path: Path) -> None:
    """Qdrant maps an indexed segment's vectors twice, for random and for sequential reads; a scan with vectors
    fills the second, so the same pages count twice in the resident set until its copies are dropped. The index
    answers as before (the pages are the file's, read back when used)."""
    path = tmp_path / "index"
    index = EdgeIndex(path, dim=DIM, optimize_after=1, vectors=VECTORS_RAM)
    batch = points(600, seed=5)
    for start in range(0, len(batch), 200):
        index.upsert(batch[start : start + 200])
        index.maintain()
        index.finish_build()
    scanned = [vector for page in index.scan("a", SearchFilter(), with_vectors=True) for _, vector in page]
    assert len(scanned) == 600 and sequential_kib(path) > 0
    assert drop_sequential_copies(path) > 0
    assert sequential_kib(path) == 0
    for point in batch[::37]:
        assert nearest(index, point) == point.id
    again = [vector for page in index.scan("a", SearchFilter(), with_vectors=True) for _, vector in page]
    assert again == scanned
    index.close()
