"""An edge node as a newcomer meets it: `engram status` shows the sync, an idle pull logs nothing at INFO, `engram
sync --now` syncs at once, a dev-mode cluster says where synced memories went, and a bad sync key's 401 says how
to make a good one."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import MagicMock

import httpx
import pytest

from engram.keys import KeyStore
from engram.services.sync.device import DeviceSync, SyncState, request_now
from tests.conftest import NodeHandle, engram_env, start_node

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"
FAST = {"ENGRAM_SYNC_INTERVAL_SECONDS": "0.2", "ENGRAM_SYNC_RETRY_FIRST_SECONDS": "0.05"}


@pytest.fixture
def nodes() -> Iterator[list[NodeHandle]]:
    started: list[NodeHandle] = []
    yield started
    for node in started:
        if node.process.poll() is None:
            node.stop(signal.SIGINT)


def engram(*args: str, model_cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENGRAM), *args], env=engram_env(model_cache), capture_output=True, text=True, timeout=90, check=False
    )


def wait_for(path: Path, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text(errors="replace") if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {path} within {timeout}s")


def test_an_edge_node_shows_its_sync_syncs_now_and_logs_only_what_moved(
    tmp_path: Path, model_cache: Path, nodes: list[NodeHandle]
) -> None:
    cluster = start_node(tmp_path / "cluster", model_cache)  # dev mode, as a newcomer's laptop cluster
    nodes.append(cluster)
    _, sync_key = KeyStore(cluster.settings.keys_path).create(
        namespace="robots", agent="", device="jetson-1", scopes=["sync"]
    )
    edge_args = ("edge", "--upstream", cluster.http_url, "--device", "jetson-1", "--key", sync_key)
    edge = start_node(tmp_path / "edge", model_cache, args=edge_args, ENGRAM_LOG_LEVEL="INFO", **FAST)
    nodes.append(edge)
    saved = httpx.post(f"{edge.http_url}/v1/memories", json={"content": "Lidar firmware 2.3 drops frames"},
                       headers={"X-Engram-Agent-ID": "robot"}, timeout=30)  # fmt: skip
    assert saved.is_success
    wait_for(edge.home / "serve.log", "sync round: 1 pushed")
    time.sleep(1.5)  # several idle rounds (one every 0.2 s)

    status = engram("status", "--home", str(edge.home), model_cache=model_cache)
    now = engram("sync", "--now", "--home", str(edge.home), model_cache=model_cache)
    cluster_status = engram("status", "--home", str(cluster.home), model_cache=model_cache)
    refused = httpx.post(f"{cluster.http_url}/v1/sync/register", json={"device": "jetson-1"},
                         headers={"Authorization": "Bearer not-a-key"}, timeout=30)  # fmt: skip
    log = (edge.home / "serve.log").read_text()

    sync_line = next(line for line in status.stdout.splitlines() if line.startswith("  sync "))
    assert f"edge of {cluster.http_url} as device jetson-1 (cluster namespace robots): last pull" in sync_line
    assert "1 pushed" in sync_line
    assert now.returncode == 0 and now.stdout.startswith(f"edge of {cluster.http_url}"), now.stderr
    assert "HTTP Request" not in log, "httpx's per-request INFO lines are off"
    assert log.count("sync round:") == 1, "idle rounds are logged at DEBUG only"
    elsewhere = next(line for line in cluster_status.stdout.splitlines() if line.startswith("  elsewhere "))
    assert "robots 1 memory" in elsewhere and "engram keys create --namespace robots" in elsewhere
    you = next(line for line in cluster_status.stdout.splitlines() if line.startswith("  you "))
    assert you.split()[1].startswith("anonymous") and you.endswith("in namespace default (dev mode, no key)")
    assert refused.status_code == 401
    assert "--device D --scopes sync" in refused.json()["detail"] and "--agent" not in refused.json()["detail"]


def test_sync_now_wakes_a_worker_waiting_out_its_back_off(tmp_path: Path) -> None:
    worker = DeviceSync(MagicMock(), MagicMock(), MagicMock(), home=tmp_path, device="d", namespace="default")

    async def wait_then_ask() -> float:
        started = time.monotonic()
        waiting = asyncio.create_task(worker._wait(300.0))  # the longest back-off
        await asyncio.sleep(0.3)
        request_now(tmp_path)
        await asyncio.wait_for(waiting, timeout=5)
        return time.monotonic() - started

    assert asyncio.run(wait_then_ask()) < 5


def test_the_sync_line_says_where_it_stands_and_what_failed() -> None:
    state = SyncState(upstream="https://hub", device="jetson-1", namespace="robots", outbox=2, pushed_total=5,
                      pulled_total=7, last_pull=100.0, last_error="the cluster cannot be reached")  # fmt: skip
    line = state.line(now=103.0)
    assert line.startswith("edge of https://hub as device jetson-1 (cluster namespace robots): last pull 3s ago")
    assert "2 to push, 5 pushed, 7 pulled" in line and "`engram sync --now` retries at once" in line
