"""Each service runs alone as its own OS process; save → search works through MCP across them."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engram.natsd import NatsServer
from tests.conftest import engram_env
from tests.helpers.mcp import call, http_client
from tests.helpers.procs import stop_process, wait_line

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


def _run(service: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "engram.services.node", "run", service, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
    )


async def test_separate_processes_save_and_search_through_mcp(tmp_path: Path, model_cache: Path) -> None:
    nats = NatsServer.start(tmp_path / "nats")
    env = engram_env(model_cache, ENGRAM_HOME=str(tmp_path / "home"))
    processes: list[subprocess.Popen[str]] = []
    try:
        ingest = _run("ingest", env, "--nats-url", nats.url, "--listen", "127.0.0.1:0")
        processes.append(ingest)
        search = _run("search", env, "--nats-url", nats.url, "--listen", "127.0.0.1:0")
        processes.append(search)
        ingest_addr = wait_line(ingest, "ready at").rsplit(" ", 1)[-1]
        search_addr = wait_line(search, "ready at").rsplit(" ", 1)[-1]
        gateway = _run("gateway", env, "--ingest-addr", ingest_addr, "--search-addr", search_addr, "--port", "0")
        processes.append(gateway)
        url = re.search(r"(http://\S+) ", wait_line(gateway, "ready at"))
        assert url is not None
        pids = {p.pid for p in processes}
        assert len(pids) == 3

        async with http_client(f"{url.group(1)}/mcp", name="cluster-test") as client:
            saved = await call(client, "save_memory", content="The staging cluster runs in eu-west-3", tags=["ops"])
            found = await call(client, "search_memory", query="where does staging run?", tags=["ops"])
        assert found["hits"][0]["memory"]["id"] == saved["id"]
        assert found["hits"][0]["memory"]["owner_agent"]
    finally:
        codes = [stop_process(process, signal.SIGTERM) for process in reversed(processes)]
        nats.stop()
    assert codes == [0, 0, 0]
