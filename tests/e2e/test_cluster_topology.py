"""Each service runs alone as its own OS process; save → search works through MCP across them."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engram.grpc.clients import IngestClient, SearchClient
from engram.model import Caller, MemoryInput
from engram.process.natsd import NatsServer
from tests.conftest import engram_env
from tests.helpers.mcp import call, http_client
from tests.helpers.procs import stop_process, wait_line
from tests.helpers.tools import free_ports

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
        search = _run("search", env, "--nats-url", nats.url, "--listen", "127.0.0.1:0")
        processes.append(search)
        search_addr = wait_line(search, "ready at").rsplit(" ", 1)[-1]
        # Ingest reads the current version of a memory from search before changing it.
        ingest = _run("ingest", env, "--nats-url", nats.url, "--listen", "127.0.0.1:0", "--search-addr", search_addr)
        processes.append(ingest)
        ingest_addr = wait_line(ingest, "ready at").rsplit(" ", 1)[-1]
        gateway = _run("gateway", env, "--ingest-addr", ingest_addr, "--search-addr", search_addr, "--port", "0")
        processes.append(gateway)
        url = re.search(r"(http://\S+) ", wait_line(gateway, "ready at"))
        assert url is not None
        pids = {p.pid for p in processes}
        assert len(pids) == 3

        async with http_client(f"{url.group(1)}/mcp", name="cluster-test") as client:
            saved = await call(client, "save_memory", content="The staging cluster runs in eu-west-3", tags=["ops"])
            found = await call(client, "search_memory", query="where does staging run?", tags=["ops"])
        assert found["hits"][0]["id"] == saved["id"]
        assert found["hits"][0]["owner_agent"]
        who = Caller(namespace="default", agent_id=found["hits"][0]["owner_agent"], source="test")
        ingest_client, search_client = IngestClient(ingest_addr), SearchClient(search_addr)
        try:
            updated = await ingest_client.update(
                who, saved["id"], MemoryInput(content="The staging cluster runs in eu-central-1"), ["content"]
            )
            history = await search_client.history(who, saved["id"], min_seq=updated.seq)
        finally:
            await ingest_client.close()
            await search_client.close()
        assert [v.content for v in history.versions] == [
            "The staging cluster runs in eu-west-3",
            "The staging cluster runs in eu-central-1",
        ]
    finally:
        codes = [stop_process(process, signal.SIGTERM) for process in reversed(processes)]
        nats.stop()
    assert codes == [0, 0, 0]


def test_a_service_waiting_for_nats_says_so_and_stops_on_sigterm(tmp_path: Path, model_cache: Path) -> None:
    """In a cluster a service may start before NATS answers: it waits, says what it waits for, and a SIGTERM (or
    Ctrl-C) while it waits ends it at once, cleanly."""
    (port,) = free_ports(1)  # nothing listens there
    env = engram_env(model_cache, ENGRAM_HOME=str(tmp_path / "home"))
    process = subprocess.Popen(
        [sys.executable, "-m", "engram.services.node", "run", "ingest", "--nats-url", f"nats://127.0.0.1:{port}"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert f"waiting for NATS at nats://127.0.0.1:{port}" in line, line
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
