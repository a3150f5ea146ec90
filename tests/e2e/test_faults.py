"""Fault tests on real processes: the log's server killed under writes, a full disk, a damaged index, an
unservable entry in the log, Ctrl-C. Each checks that every acknowledged write stays readable and that the node
recovers by itself (no restart) where it can."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from engram.ids import uuid7
from engram.log.events import MEMORY_SAVED, event_body
from engram.log.nats import NatsLog
from engram.model import Caller, Memory
from tests.conftest import NodeHandle, engram_env, start_node
from tests.e2e.conftest import SmallDisk
from tests.helpers.procs import pid_alive, wait_gone
from tests.helpers.rest import list_all_ids

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MIB = 1024 * 1024


def _wait(condition, timeout: float = 30.0, interval: float = 0.05) -> float:  # type: ignore[no-untyped-def]
    """Waits until condition() is true; returns how long it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "condition not met in time"
        time.sleep(interval)
    return time.monotonic() - started


@dataclass
class Writer:
    """Saves memories in a loop on a thread, recording what was acknowledged and how failures looked."""

    client: httpx.Client
    acked: dict[str, int] = field(default_factory=dict)  # id -> seq
    failures: list[tuple[int, float, str | None, str]] = field(default_factory=list)  # status, seconds, retry-after
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                response = self.client.post("/v1/memories", json={"content": f"fault test memory {i}"})
            except httpx.TransportError as e:
                self.failures.append((0, time.monotonic() - started, None, repr(e)))
                continue
            # 200: stored already, as the same content (duplicate_of); a save in flight when nats-server died can find
            # its own first attempt stored once the log is back, and then answers with that memory.
            if response.status_code in (200, 201):
                body = response.json()
                self.acked[body["id"]] = body["seq"]
            else:
                detail = response.json().get("detail", "")
                self.failures.append(
                    (response.status_code, time.monotonic() - started, response.headers.get("retry-after"), detail)
                )
                time.sleep(0.02)
            i += 1

    def finish(self) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(30)


def _assert_all_readable(client: httpx.Client, acked: dict[str, int]) -> None:
    newest = max(acked.values())
    listed = list_all_ids(client, newest)
    assert len(listed) == len(set(listed)), "a memory is listed twice"
    missing = set(acked) - set(listed)
    assert not missing, f"{len(missing)} acknowledged memories are missing"


def test_killed_nats_server_is_restarted_and_no_acknowledged_write_is_lost(tmp_path: Path, model_cache: Path) -> None:
    node = start_node(tmp_path / "home", model_cache)
    client = httpx.Client(base_url=node.http_url, timeout=30)
    writer = Writer(client)
    try:
        writer.start()
        _wait(lambda: len(writer.acked) >= 30)
        old_nats = node.nats_pid
        os.kill(old_nats, signal.SIGKILL)
        # The supervisor restarts nats-server on the same port, sometimes before the probes below have run (then
        # they were not "during the outage"): holding the port keeps the log down until they are done.
        with _holding_port(int(node.nats_url.rsplit(":", 1)[1])):
            down = _wait(lambda: client.get("/readyz").status_code == 503, timeout=5, interval=0.01)
            readyz = client.get("/readyz").json()
            # Writes that start while the log is down are refused at once, saying when to retry.
            probes = []
            for _ in range(5):
                started = time.monotonic()
                response = client.post("/v1/memories", json={"content": "during the outage"})
                probes.append((response.status_code, time.monotonic() - started, response.headers.get("retry-after")))
        recovered = _wait(lambda: client.get("/readyz").status_code == 200, timeout=30)
        acked_at_recovery = len(writer.acked)
        _wait(lambda: len(writer.acked) >= acked_at_recovery + 30)  # writes flow again, same node process
        writer.finish()

        assert node.process.poll() is None and node.nats_pid != old_nats and not pid_alive(old_nats)
        assert down < 2.0 and recovered < 15.0
        assert "log" in {p["condition"] for p in readyz["problems"]}, readyz
        refused = [p for p in probes if p[0] == 503]
        assert refused, f"no write was refused during the outage: {probes}"
        assert all(p[0] in (201, 503) for p in probes), probes  # 201: nats was already back
        assert all(seconds < 1.0 and retry_after for _, seconds, retry_after in refused), refused
        # Saves in flight when the server died wait for it to come back and are stored exactly once.
        assert all(f[0] == 503 for f in writer.failures), writer.failures[:5]
        _assert_all_readable(client, writer.acked)
    finally:
        writer.stop.set()
        client.close()
        assert node.stop() == 0


@contextlib.contextmanager
def _holding_port(port: int, timeout: float = 2.0) -> Iterator[None]:
    """Listens on 127.0.0.1:port (once its killed owner has let go of it), so nothing else can, until the end."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            holder.bind(("127.0.0.1", port))
            holder.listen(1)
            break
        except OSError as e:
            if e.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                holder.close()
                raise
            time.sleep(0.001)
    try:
        yield
    finally:
        holder.close()


def test_full_disk_refuses_writes_fast_and_recovers_without_a_restart(small_disk: SmallDisk, model_cache: Path) -> None:
    node = start_node(small_disk.path / "home", model_cache, ENGRAM_DISK_RESERVE_MB=str(small_disk.reserve_mb))
    client = httpx.Client(base_url=node.http_url, timeout=30)
    try:
        acked = {}
        for i in range(20):
            saved = client.post("/v1/memories", json={"content": f"before the disk filled {i}"}).json()
            acked[saved["id"]] = saved["seq"]
        small_disk.fill(leave_mib=small_disk.reserve_mb - 40)

        started = time.monotonic()
        refused = client.post("/v1/memories", json={"content": "while the disk is full"})
        assert time.monotonic() - started < 1.0
        assert refused.status_code == 507, refused.text
        assert "Disk full" in refused.json()["detail"] and refused.headers.get("retry-after")
        _wait(lambda: client.get("/readyz").status_code == 503, timeout=5)
        assert "Disk full" in client.get("/readyz").json()["detail"]
        found = client.post("/v1/memories:search", json={"query": "before the disk filled"})
        assert found.status_code == 200 and found.json()["hits"], "reads stop while the disk is full"

        small_disk.release()
        _wait(lambda: client.get("/readyz").status_code == 200, timeout=10)
        after = client.post("/v1/memories", json={"content": "after space came back"})
        assert after.status_code == 201
        acked[after.json()["id"]] = after.json()["seq"]
        _assert_all_readable(client, acked)
        home = node.home
    finally:
        client.close()
        assert node.stop() == 0

    # Too little space to start: refused with a message, not a crash (a mapped file would die with SIGBUS).
    small_disk.fill(leave_mib=small_disk.reserve_mb - 40)
    result = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "serve", "--home", str(home), "--port", "0", "--quiet"],
        env=engram_env(model_cache, ENGRAM_DISK_RESERVE_MB=str(small_disk.reserve_mb)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "Disk full" in result.stderr and "needs at least" in result.stderr and "Traceback" not in result.stderr


DAMAGES = {
    "segments deleted": lambda index: [shutil.rmtree(p) for p in (index / "segments").iterdir()],
    "config corrupted": lambda index: (index / "edge_config.json").write_text("{not json"),
    "wal corrupted": lambda index: [p.write_bytes(os.urandom(256)) for p in (index / "wal").iterdir()],
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_index_is_moved_aside_and_rebuilt_from_the_log(
    damage: str, tmp_path: Path, model_cache: Path
) -> None:
    home = tmp_path / "home"
    node = start_node(home, model_cache)
    with httpx.Client(base_url=node.http_url, timeout=30) as client:
        acked = {}
        for i in range(40):
            saved = client.post("/v1/memories", json={"content": f"memory {i} with token tok{i:03d}x"}).json()
            acked[saved["id"]] = saved["seq"]
    assert node.stop() == 0

    DAMAGES[damage](home / "index")
    node = start_node(home, model_cache)  # waits for /readyz 200: the rebuild is done
    try:
        with httpx.Client(base_url=node.http_url, timeout=30) as client:
            _assert_all_readable(client, acked)
            hit = client.post("/v1/memories:search", json={"query": "tok017x", "sources": ["bm25"]}).json()["hits"][0]
            assert hit["memory"]["content"] == "memory 17 with token tok017x"
            status = client.get("/v1/status").json()
            assert status["index"]["lag"] == 0 and status["index"]["memories"] == 40
        assert (home / "index.damaged").is_dir()
        assert "moving it aside and rebuilding it from the log" in (home / "serve.log").read_text()
    finally:
        assert node.stop() == 0


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_an_unservable_entry_already_in_the_log_never_breaks_reads(node: NodeHandle) -> None:
    import base64

    import numpy as np

    with httpx.Client(base_url=node.http_url, timeout=30) as client:
        refused = client.post("/v1/memories", json={"content": "deep", "metadata": _nested(300)})
        assert refused.status_code == 400 and "nested" in refused.json()["detail"]
        good = client.post("/v1/memories", json={"content": "a readable memory about lighthouses"}).json()

        # An entry an older version accepted: appended straight to the node's log.
        deep = Memory(id=uuid7(), namespace="default", content="lighthouses deep", owner_agent="a")
        deep.metadata = _nested(300)
        vectors = {
            "dense": base64.b64encode(np.full(384, 0.05, dtype="<f4").tobytes()).decode(),
            "sparse": {"indices": [1, 2], "values": [1.0, 1.0]},
        }
        body = event_body(MEMORY_SAVED, deep, Caller("default", "a"), vectors=vectors)

        async def append() -> int:
            log = await NatsLog.connect(node.nats_url)
            try:
                return (await log.append("default", MEMORY_SAVED, body, msg_id=f"{deep.id}:1")).seq
            finally:
                await log.close()

        seq = asyncio.run(append())
        listed = client.get("/v1/memories", params={"min_seq": seq, "limit": 100})
        assert listed.status_code == 200
        assert good["id"] in {m["id"] for m in listed.json()["memories"]}
        assert client.post("/v1/memories:search", json={"query": "lighthouses"}).status_code == 200
        assert client.get(f"/v1/memories/{deep.id}").status_code == 404
        ready = client.get("/readyz")  # set aside and reported: degraded, still serving
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        assert any(p["condition"] == "index_quarantine" and f"log sequence {seq}" in p["detail"]
                   for p in ready.json()["problems"])  # fmt: skip


def test_ctrl_c_in_a_terminal_stops_everything_in_order_without_a_traceback(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    process = subprocess.Popen(
        [sys.executable, "-m", "engram.services.node", "serve", "--home", str(home), "--port", "0"],
        env=engram_env(model_cache, ENGRAM_LOG_LEVEL="INFO"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # like a terminal: its own process group, which Ctrl-C signals as a whole
    )
    try:
        _wait(lambda: (home / "node.json").exists(), timeout=120)
        nats_pid = int((home / "run" / "nats.pid").read_text())
        url = json.loads((home / "node.json").read_text())["http_url"]
        _wait(lambda: httpx.get(f"{url}/readyz").status_code == 200, timeout=60)
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0
    assert "Traceback" not in output and "Error" not in output, output[-2000:]
    assert wait_gone(nats_pid, 10)


def test_a_full_disk_without_a_reserve_refuses_writes_at_once_and_recovers(
    small_disk: SmallDisk, model_cache: Path
) -> None:
    """With no reserve (ENGRAM_DISK_RESERVE_MB=0) a disk filled to the last byte refuses writes at once with the
    reserve's message (they waited 10 s each for the log's acknowledgement), and nothing has to restart."""
    if not small_disk.mounted:
        pytest.skip("needs a disk that can really be filled (a tmpfs the test mounts as root)")
    node = start_node(small_disk.path / "home", model_cache, ENGRAM_DISK_RESERVE_MB="0")
    client = httpx.Client(base_url=node.http_url, timeout=60)
    try:
        acked = {}
        for i in range(10):
            saved = client.post("/v1/memories", json={"content": f"before {i}"}).json()
            acked[saved["id"]] = saved["seq"]
        old_nats = node.nats_pid
        small_disk.fill(leave_mib=0)
        assert small_disk.free() < MIB
        for _ in range(3):
            started = time.monotonic()
            refused = client.post("/v1/memories", json={"content": "x" * 20000})
            assert time.monotonic() - started < 1.0
            assert refused.status_code == 507, refused.text
            detail = refused.json()["detail"]
            assert "Disk full" in detail and "ENGRAM_DISK_RESERVE_MB" in detail and refused.headers.get("retry-after")
        assert "Disk full" in client.get("/readyz").json()["detail"]

        small_disk.release()
        _wait(lambda: client.get("/readyz").status_code == 200, timeout=10)
        after = client.post("/v1/memories", json={"content": "after space came back"})
        assert after.status_code == 201, after.text
        assert node.nats_pid == old_nats and node.process.poll() is None  # nothing restarted
        acked[after.json()["id"]] = after.json()["seq"]
        _assert_all_readable(client, acked)
    finally:
        client.close()
        assert node.stop() == 0


def test_a_log_stuck_on_a_full_disk_is_restarted_once_space_is_back(small_disk: SmallDisk, model_cache: Path) -> None:
    """Something else writing to the log while the disk is full (the node itself refuses to) leaves nats-server
    connected but not acknowledging writes; writes are then refused at once, and once space is back the node
    restarts it by itself."""
    if not small_disk.mounted:
        pytest.skip("needs a disk that can really be filled (a tmpfs the test mounts as root)")
    node = start_node(small_disk.path / "home", model_cache, ENGRAM_DISK_RESERVE_MB="0")
    client = httpx.Client(base_url=node.http_url, timeout=60)
    try:
        acked = {}
        for i in range(10):
            saved = client.post("/v1/memories", json={"content": f"before {i}"}).json()
            acked[saved["id"]] = saved["seq"]
        old_nats = node.nats_pid
        small_disk.fill(leave_mib=0)
        assert not asyncio.run(_publish_outside(node.nats_url)), "the full disk took the message"
        small_disk.release()
        # The first write finds the store stuck (it may or may not be stored); the node restarts nats-server.
        answers = []
        while not answers or answers[-1][0] != 201:
            started = time.monotonic()
            response = client.post("/v1/memories", json={"content": "after space came back"})
            answers.append((response.status_code, time.monotonic() - started, response.json().get("detail", "")))
            assert len(answers) < 200, answers[:5]
            time.sleep(0.1)
        assert all(code == 503 for code, _, _ in answers[:-1]), answers
        assert all(seconds < 1.0 for _, seconds, _ in answers[1:]), answers  # refused at once while stuck
        _wait(lambda: client.get("/readyz").status_code == 200, timeout=30)
        assert node.nats_pid != old_nats and node.process.poll() is None  # the log restarted, not the node
        saved = response.json()
        acked[saved["id"]] = saved["seq"]
        _assert_all_readable(client, acked)
    finally:
        client.close()
        assert node.stop() == 0


async def _publish_outside(nats_url: str) -> bool:
    """Messages published to the node's log by another client; whether nats-server acknowledged them."""
    import nats
    import nats.errors

    connection = await nats.connect(nats_url)
    body = b'{"event": "noop", "pad": "%s"}' % (b"x" * MIB)  # more than a block's spare room
    try:
        for _ in range(3):
            await connection.jetstream().publish("engram.events.outside.noop", body, timeout=3)
        return True
    except nats.errors.TimeoutError:
        return False
    finally:
        await connection.close()
