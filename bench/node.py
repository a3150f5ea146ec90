"""A real `engram serve` subprocess for the benchmark: start on a free port, wait until ready, measure RSS, stop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

DEFAULT_MODEL_CACHE = Path(__file__).resolve().parent / ".cache" / "models"  # shared by every bench node
DEFAULT_START_TIMEOUT = 600.0  # the first start builds the ONNX model into the cache
DEFAULT_STOP_TIMEOUT = 60.0
POLL_SECONDS = 0.1
BASE_ENV = {"ENGRAM_LOG_LEVEL": "WARNING"}
# The search service keeps its persistent query-embedding cache inside the model cache. A node that found its
# queries there would skip query embedding, so each node sees the shared models but a cache of its own.
PRIVATE_CACHE_PREFIXES = ("query-cache",)


def node_env(model_cache: Path, overrides: Mapping[str, str]) -> dict[str, str]:
    """The ENGRAM_* settings a bench node runs with: inherited ones, then the bench defaults, then overrides."""
    settings = {k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")}
    settings.pop("ENGRAM_HOME", None)  # every bench node has its own --home
    settings.update(BASE_ENV)
    settings["ENGRAM_MODEL_CACHE"] = str(model_cache)
    settings.update(overrides)
    return settings


def launch(
    home: Path,
    env: Mapping[str, str],
    *,
    command: Sequence[str] = ("serve",),
    port: int = 0,
    timeout: float = DEFAULT_START_TIMEOUT,
    new_session: bool = False,
) -> tuple[subprocess.Popen[bytes], dict[str, Any], dict[str, Any]]:
    """Starts `python -m engram.services.node <command> --home H --port P --quiet` with ``env`` as its whole
    environment and its output appended to H/serve.log; returns the process, its node.json record and /readyz's
    answer once node.json names the process and /readyz says 200. The one node launcher of the bench and the tests
    (tests/conftest.py): a process that exits or is not ready by ``timeout`` raises, with the log's tail, and is
    stopped."""
    home.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "engram.services.node", *command, "--home", str(home), "--port", str(port), "--quiet"]
    with (home / "serve.log").open("ab") as log:
        # new_session: Ctrl-C reaches the bench only, and the bench stops the node with SIGTERM
        process = subprocess.Popen(
            argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=new_session
        )
    try:
        info, ready = _wait_ready(home, process, time.monotonic() + timeout)
    except BaseException:
        _stop(process, timeout=10)
        raise
    return process, info, ready


def _wait_ready(home: Path, process: subprocess.Popen[bytes], deadline: float) -> tuple[dict[str, Any], dict[str, Any]]:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"engram serve exited with {process.returncode}; log:\n{_tail(home / 'serve.log')}")
        try:
            info: dict[str, Any] = json.loads((home / "node.json").read_text())
        except (OSError, ValueError):
            time.sleep(POLL_SECONDS)
            continue
        if info.get("pid") == process.pid:
            try:
                response = httpx.get(f"{info['http_url']}/readyz", timeout=5)
            except httpx.HTTPError:
                response = None
            if response is not None and response.status_code == 200:
                return info, response.json()
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"engram serve did not become ready in time; log:\n{_tail(home / 'serve.log')}")


def _stop(process: subprocess.Popen[bytes], *, timeout: float) -> int | None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds; returns the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(10)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class Node:
    """A running `engram serve` child process with its own data dir."""

    home: Path
    process: subprocess.Popen[bytes]
    settings: dict[str, str]
    http_url: str = ""
    grpc_address: str = ""
    started_seconds: float = 0.0
    ready: dict[str, Any] = field(default_factory=dict)
    shared_models: Path | None = None

    @property
    def mcp_url(self) -> str:
        return f"{self.http_url}/mcp"

    @property
    def log_path(self) -> Path:
        return self.home / "serve.log"

    @classmethod
    def start(
        cls,
        home: Path,
        settings: Mapping[str, str],
        *,
        timeout: float = DEFAULT_START_TIMEOUT,
        command: Sequence[str] = ("serve",),
        port: int = 0,
    ) -> Node:
        """Starts `engram serve --port 0` (or ``command``, e.g. edge --upstream U, on ``port``) in ``home``; returns
        once node.json names it and /readyz says 200."""
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
        env.update(settings)
        shared = Path(settings["ENGRAM_MODEL_CACHE"]) if "ENGRAM_MODEL_CACHE" in settings else None
        if shared is not None:
            env["ENGRAM_MODEL_CACHE"] = str(model_view(shared, home / "models-view"))
        began = time.monotonic()
        process, info, ready = launch(home, env, command=command, port=port, timeout=timeout, new_session=True)
        node = cls(home=home, process=process, settings=dict(settings), shared_models=shared)
        node.http_url, node.grpc_address, node.ready = str(info["http_url"]), str(info.get("grpc_address", "")), ready
        node.started_seconds = time.monotonic() - began
        return node

    def admin_key(self) -> str:
        """A new key of the node's default namespace with the admin scope (callers name themselves); its secret."""
        from engram.config import Settings
        from engram.keys import KeyStore

        keys = KeyStore(Settings.from_env({}, home=self.home).keys_path)
        _, secret = keys.create(namespace="default", scopes=("read", "write", "admin"))
        return secret

    def readyz(self) -> dict[str, Any]:
        response = httpx.get(f"{self.http_url}/readyz", timeout=10)
        body: dict[str, Any] = response.json()
        return body

    def rss(self) -> dict[str, int]:
        """Resident memory in bytes: the node (the supervisor's worker, which serves), its supervisor, its
        nats-server, and the total of the whole process tree."""
        tree = _descendants(self.process.pid)
        per_pid = {pid: _vm_rss(pid) for pid in tree}
        nats_pid = self.nats_pid()
        worker = self.worker_pid()
        result = {
            "node": per_pid.get(worker, 0), "supervisor": per_pid.get(self.process.pid, 0), "nats": 0,
            "total": sum(per_pid.values()),
        }  # fmt: skip
        if nats_pid is not None:
            result["nats"] = per_pid.get(nats_pid) or _vm_rss(nats_pid)
            if nats_pid not in per_pid:  # not a child of the node (should not happen): count it anyway
                result["total"] += result["nats"]
        return result

    def worker_pid(self) -> int:
        """The pid of the node itself (node.json's worker_pid; the process started is its supervisor)."""
        try:
            return int(json.loads((self.home / "node.json").read_text())["worker_pid"])
        except (OSError, ValueError, KeyError):
            return self.process.pid

    def nats_pid(self) -> int | None:
        try:
            return int((self.home / "run" / "nats.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self, *, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds; returns the exit code."""
        code = _stop(self.process, timeout=timeout)
        if self.shared_models is not None:
            harvest(self.home / "models-view", self.shared_models)
        return code

    def stop_into(self, out: dict[str, Any]) -> None:
        """Stops the node (``stop``) and records in ``out`` its exit code and its log's first 20 problem lines."""
        problems = self.log_problems()
        if problems:
            out["node_log_problems"] = problems[:20]
        out["node_exit_code"] = self.stop()

    def tail_log(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)

    def log_problems(self) -> list[str]:
        """Lines of the node's log at WARNING or above (the node logs at WARNING in the bench)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if any(w in line for w in ("ERROR", "WARNING", "Traceback"))]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a node that must be told its port, or an address nothing listens on)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def model_view(shared: Path, view: Path) -> Path:
    """A model cache dir for one node: links to everything in ``shared`` except the private caches."""
    shared.mkdir(parents=True, exist_ok=True)
    view.mkdir(parents=True, exist_ok=True)
    for entry in shared.iterdir():
        link = view / entry.name
        if not entry.name.startswith(PRIVATE_CACHE_PREFIXES) and not link.exists():
            link.symlink_to(entry.resolve())
    return view


def harvest(view: Path, shared: Path) -> None:
    """Moves what a node built into its view (a model the shared cache did not have) into the shared cache."""
    if not view.is_dir():
        return
    for entry in view.iterdir():
        if entry.is_symlink() or entry.name.startswith(PRIVATE_CACHE_PREFIXES):
            continue
        target = shared / entry.name
        if not target.exists():
            shutil.move(str(entry), str(target))


def _vm_rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    """The pid and every process below it (from /proc/<pid>/task/*/children)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                pending.extend(int(child) for child in (task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    return found
