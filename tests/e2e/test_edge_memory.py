"""The edge node's index storage on real processes: a node whose index keeps its vectors in RAM, restarted with
ENGRAM_INDEX_VECTORS=disk (what `engram edge` sets), rebuilds it from the log stored on disk with int8 copies,
and still finds every memory; switching back rebuilds it again."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import NodeHandle, start_node

pytestmark = pytest.mark.e2e

FACTS = [
    "The charging dock is behind the kitchen door.",
    "The left wheel encoder drifts after an hour of driving.",
    "Lidar firmware 2.4 fixed the reflections from glass walls.",
    "The arm's gripper needs recalibration after every battery swap.",
]
READY_TIMEOUT = 60.0


def dense_storage(home: Path) -> dict[str, object]:
    vectors: dict[str, object] = json.loads((home / "index" / "edge_config.json").read_text())["vectors"]["dense"]
    return vectors


def search(node: NodeHandle, query: str) -> list[str]:
    """The contents found for ``query``, once the index has caught up (reads answer 503 while it rebuilds)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        answer = httpx.post(f"{node.http_url}/v1/memories:search", json={"query": query, "limit": 3}, timeout=30)
        if answer.status_code != 503 or time.monotonic() > deadline:
            answer.raise_for_status()
            return [hit["memory"]["content"] for hit in answer.json()["hits"]]
        time.sleep(0.1)


def test_switching_the_vector_storage_rebuilds_the_index_from_the_log_and_keeps_every_memory(
    tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "node"
    node = start_node(home, model_cache)
    try:
        for fact in FACTS:
            assert httpx.post(f"{node.http_url}/v1/memories", json={"content": fact}, timeout=30).is_success
        assert search(node, "where does the robot charge")[0] == FACTS[0]
    finally:
        assert node.stop() == 0
    assert dense_storage(home)["memory"] == "cached" and dense_storage(home).get("quantization_config") is None

    node = start_node(home, model_cache, ENGRAM_INDEX_VECTORS="disk")
    try:
        assert search(node, "where does the robot charge")[0] == FACTS[0]
        assert search(node, "gripper calibration")[0] == FACTS[3]
        stats = httpx.get(f"{node.http_url}/v1/stats", timeout=30).json()
        assert stats["total"] == len(FACTS)
    finally:
        assert node.stop() == 0
    storage = dense_storage(home)
    assert storage["memory"] == "cold" and storage["quantization_config"]
    assert (home / "index.damaged").is_dir()  # the shard stored the other way, kept aside until the next rebuild

    node = start_node(home, model_cache)
    try:
        assert search(node, "glass walls")[0] == FACTS[2]
    finally:
        assert node.stop() == 0
    assert dense_storage(home)["memory"] == "cached"
