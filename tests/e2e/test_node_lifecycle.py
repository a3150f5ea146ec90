"""`engram serve`: one command starts everything; SIGTERM or Ctrl-C stops everything it started."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import engram_env, start_node
from tests.helpers.procs import stop_process, wait_gone, wait_line

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_signal_stops_node_and_its_nats_server(tmp_path: Path, model_cache: Path, sig: int) -> None:
    node = start_node(tmp_path / "home", model_cache)
    nats_pid = node.nats_pid
    assert httpx.get(f"{node.http_url}/healthz").status_code == 200

    assert node.stop(sig) == 0

    assert wait_gone(nats_pid, timeout=10), "the private nats-server outlived the node"
    assert not (node.home / "node.json").exists()


def test_banner_says_where_mcp_listens_and_how_to_connect(tmp_path: Path, model_cache: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "engram.services.node", "serve", "--home", str(tmp_path), "--port", "0"],
        env=engram_env(model_cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = wait_line(process, "MCP (streamable HTTP)")
        assert line.endswith("/mcp")
        console = wait_line(process, "Web console")
        assert console.split()[-1] == line.split()[-1].removesuffix("/mcp") + "/console"
        assert "claude mcp add" in wait_line(process, "Claude Code (HTTP)")
    finally:
        assert stop_process(process, signal.SIGINT) == 0


def test_non_loopback_bind_without_keys_refuses_to_start(tmp_path: Path, model_cache: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "engram.services.node",
            "serve",
            "--home",
            str(tmp_path),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        env=engram_env(model_cache),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "engram keys create" in result.stderr
    assert not (tmp_path / "run" / "nats.pid").exists(), "nothing should start before the check"


def test_second_node_for_the_same_data_dir_is_refused(tmp_path: Path, model_cache: Path) -> None:
    node = start_node(tmp_path / "home", model_cache)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "engram.services.node", "serve", "--home", str(node.home), "--port", "0"],
            env=engram_env(model_cache),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1
        assert "already runs" in result.stderr and str(node.pid) in result.stderr
    finally:
        assert node.stop() == 0


def test_a_node_with_unwritten_read_counts_stops_at_once(tmp_path: Path, model_cache: Path) -> None:
    """Stopping writes the read counts gathered so far to the log while the indexer follows it: the indexer must
    still stop (it once swallowed its cancellation when that entry arrived with it)."""
    node = start_node(tmp_path / "home", model_cache)  # counts are written every 10 s: some are pending at stop
    agent = {"X-Engram-Agent-ID": "owner"}
    with httpx.Client(base_url=node.http_url, timeout=60, headers=agent) as api:
        saved = api.post("/v1/memories", json={"content": "The deploy target is Heroku"}).json()
        assert api.patch(f"/v1/memories/{saved['id']}", json={"content": "It is Fly.io"}).status_code == 200
        assert api.get(f"/v1/memories/{saved['id']}").json()["version"] == 2
        assert api.post("/v1/memories:search", json={"query": "deploy target"}).status_code == 200
    assert node.stop(timeout=20) == 0
