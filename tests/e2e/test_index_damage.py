"""Damage to the search index's files, on real nodes: truncated under a running node (its memory-mapped pages vanish:
SIGBUS), truncated while it was stopped, and a start on a disk too full for the index to load. The node restarts
itself and rebuilds the index from the log, or refuses the start saying how much room it needs; every
acknowledged memory stays readable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import engram_env, start_node
from tests.e2e.conftest import MIB, SmallDisk
from tests.helpers.rest import list_all_ids

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _wait(condition: Callable[[], bool], timeout: float) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "condition not met in time"
        time.sleep(0.1)
    return time.monotonic() - started


def _ready(client: httpx.Client) -> bool:
    try:
        return client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False


def _save(client: httpx.Client, count: int) -> dict[str, int]:
    acked = {}
    for n in range(count):
        saved = client.post("/v1/memories", json={"content": f"memory {n} with token tok{n:03d}x"}).json()
        acked[saved["id"]] = saved["seq"]
    return acked


def _assert_served(client: httpx.Client, acked: dict[str, int]) -> None:
    assert set(acked) <= set(list_all_ids(client, max(acked.values())))
    hit = client.post("/v1/memories:search", json={"query": "tok017x", "sources": ["bm25"]}).json()["hits"][0]
    assert hit["memory"]["content"] == "memory 17 with token tok017x"


def _truncate(home: Path, pattern: str) -> list[Path]:
    files = sorted((home / "index").glob(pattern))
    assert files, f"no {pattern} in the index"
    for path in files:
        os.truncate(path, 0)
    return files


DENSE_VECTORS = "segments/*/vector_storage-dense/vectors/chunk_*.mmap"
PAYLOADS = "segments/*/payload_storage/page_*.dat"


def test_an_index_file_truncated_under_a_running_node_is_rebuilt_after_its_supervisor_restarts_it(
    tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "home"
    node = start_node(home, model_cache)
    client = httpx.Client(base_url=node.http_url, timeout=30)
    try:
        acked = _save(client, 40)
        assert len(list_all_ids(client, max(acked.values()))) == 40
        worker = json.loads((home / "node.json").read_text())["worker_pid"]
        _truncate(home, DENSE_VECTORS)

        with pytest.raises(httpx.TransportError):  # the node process dies touching the vanished pages
            client.post("/v1/memories:search", json={"query": "memory with token"})
        took = _wait(lambda: _ready(client), timeout=90)  # the same URL: the supervisor holds its socket

        info = json.loads((home / "node.json").read_text())
        assert node.process.poll() is None and info["pid"] == node.pid and info["worker_pid"] != worker
        _assert_served(client, acked)
        after = client.post("/v1/memories", json={"content": "after the restart"})
        assert after.status_code == 201
        assert (home / "index.damaged").is_dir()
        log = (home / "serve.log").read_text()
        assert "died of SIGBUS" in log and "rebuilds them from the log" in log
        print(f"\nready again {took:.1f}s after the crash")
    finally:
        client.close()
        assert node.stop() == 0


@pytest.mark.parametrize("pattern", [DENSE_VECTORS, PAYLOADS], ids=["dense vectors", "payloads"])
def test_index_files_truncated_while_the_node_was_stopped_are_found_at_start_and_rebuilt(
    pattern: str, tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "home"
    node = start_node(home, model_cache)
    with httpx.Client(base_url=node.http_url, timeout=30) as client:
        acked = _save(client, 40)
        assert len(list_all_ids(client, max(acked.values()))) == 40
    assert node.stop() == 0
    _truncate(home, pattern)

    node = start_node(home, model_cache)  # ready: the index was rebuilt
    try:
        with httpx.Client(base_url=node.http_url, timeout=30) as client:
            _assert_served(client, acked)
        assert (home / "index.damaged").is_dir()
        assert "its files cannot be read" in (home / "serve.log").read_text()
    finally:
        assert node.stop() == 0


def test_a_start_on_a_disk_too_full_for_the_index_to_load_is_refused_with_the_room_it_needs(
    small_disk: SmallDisk, model_cache: Path
) -> None:
    """Loading the index fills in parts of its memory-mapped files: with less room the process died of SIGBUS
    (tested by hand: 12 MiB free, 29 MiB needed). The start is refused instead, saying how much, where, what to do."""
    if not small_disk.mounted:
        pytest.skip("needs a disk that can really be filled (a tmpfs the test mounts as root)")
    home = small_disk.path / "home"
    node = start_node(home, model_cache, ENGRAM_DISK_RESERVE_MB="0")
    with httpx.Client(base_url=node.http_url, timeout=120) as client:
        lines = "\n".join(json.dumps({"content": f"memory {n} with token tok{n:03d}x"}) for n in range(1500))
        imported = client.post(
            "/v1/memories:import", content=lines.encode(), headers={"Content-Type": "application/x-ndjson"}
        ).json()
        assert len(list_all_ids(client, imported["last_seq"])) == 1500
    assert node.stop() == 0
    small_disk.fill(leave_mib=12)

    command = [sys.executable, "-m", "engram.services.node", "serve", "--home", str(home), "--port", "0", "--quiet"]
    env = engram_env(model_cache, ENGRAM_DISK_RESERVE_MB="0")
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr[-2000:]
    message = result.stderr
    assert "Disk full" in message and f"in {home}" in message and "needs at least" in message, message
    assert "search index takes as it loads" in message and "ENGRAM_HOME" in message, message
    assert "Traceback" not in message and "Bus error" not in message, message
    assert small_disk.free() >= 11 * MIB  # nothing was loaded

    small_disk.release()
    node = start_node(home, model_cache, ENGRAM_DISK_RESERVE_MB="0")
    try:
        with httpx.Client(base_url=node.http_url, timeout=30) as client:
            assert client.get("/v1/status").json()["index"]["memories"] == 1500
    finally:
        assert node.stop() == 0
