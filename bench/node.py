"""A real `engram serve` subprocess for the benchmark: start on a free port, wait until ready, measure RSS, stop."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

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
        with (home / "serve.log").open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "engram.services.node",
                    *command,
                    "--home",
                    str(home),
                    "--port",
                    str(port),
                    "--quiet",
                ],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # Ctrl-C reaches the bench only; the bench stops the node with SIGTERM
            )
        node = cls(home=home, process=process, settings=dict(settings), shared_models=shared)
        try:
            node._wait_ready(began + timeout)
        except BaseException:
            node.stop(timeout=10)
            raise
        node.started_seconds = time.monotonic() - began
        return node

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"engram serve exited with {self.process.returncode}; log:\n{self.tail_log()}")
            try:
                info = json.loads((self.home / "node.json").read_text())
            except (OSError, ValueError):
                time.sleep(POLL_SECONDS)
                continue
            if info.get("pid") == self.process.pid:
                self.http_url = str(info["http_url"])
                self.grpc_address = str(info.get("grpc_address", ""))
                try:
                    response = httpx.get(f"{self.http_url}/readyz", timeout=5)
                except httpx.HTTPError:
                    response = None
                if response is not None and response.status_code == 200:
                    self.ready = response.json()
                    return
            time.sleep(POLL_SECONDS)
        raise TimeoutError(f"engram serve did not become ready in time; log:\n{self.tail_log()}")

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
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(10)
        if self.shared_models is not None:
            harvest(self.home / "models-view", self.shared_models)
        return code

    def tail_log(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def log_problems(self) -> list[str]:
        """Lines of the node's log at WARNING or above (the node logs at WARNING in the bench)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if any(w in line for w in ("ERROR", "WARNING", "Traceback"))]


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
