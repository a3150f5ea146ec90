"""Shared fixtures: real nats-server, real embedded nodes (subprocesses), keys, and an async test backend."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from bench.node import launch
from engram.config import Settings
from engram.keys import KeyStore
from engram.process.natsd import NatsServer

NODE_START_TIMEOUT = 120.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def machine_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """XDG_CACHE_HOME in a temp dir: a Settings that names no model cache (its default is the machine's) never
    touches the user's ~/.cache, in this process or in the nodes it starts."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("xdg-cache")
        patch.setenv("XDG_CACHE_HOME", str(path))
        yield path


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX build per test session, shared by every node the tests start."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another process listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A real nats-server with JetStream on a random loopback port and a temp store."""
    server = NatsServer.start(tmp_path / "nats-home")
    yield server
    server.stop()


def engram_env(model_cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update({"ENGRAM_MODEL_CACHE": str(model_cache), "ENGRAM_LOG_LEVEL": "WARNING", **extra})
    return env


@dataclass
class NodeHandle:
    """A running `engram serve` subprocess."""

    home: Path
    process: subprocess.Popen[bytes]
    http_url: str = ""
    grpc_address: str = ""
    nats_url: str = ""
    model_cache: Path = Path()
    settings: Settings = field(default_factory=Settings)

    @property
    def mcp_url(self) -> str:
        return f"{self.http_url}/mcp"

    @property
    def pid(self) -> int:
        """The supervisor's pid: the process started, which holds the data dir and the socket (signal this one)."""
        return self.process.pid

    @property
    def worker_pid(self) -> int:
        """The node's own pid (the supervisor's child that serves; node.json's worker_pid): measure this one."""
        return int(json.loads((self.home / "node.json").read_text())["worker_pid"])

    def create_key(self, namespace: str, agent: str, scopes: tuple[str, ...] = ("read", "write")) -> str:
        _, secret = KeyStore(self.settings.keys_path).create(namespace=namespace, agent=agent, scopes=scopes)
        return secret

    @property
    def nats_pid(self) -> int:
        return int((self.home / "run" / "nats.pid").read_text())

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)


def start_node(
    home: Path, model_cache: Path, *, port: int = 0, args: tuple[str, ...] = ("serve",), **env: str
) -> NodeHandle:
    """Starts `engram serve` (or another command running a node, e.g. `edge --upstream U`) on a free port and waits
    until /readyz answers 200."""
    process, info, _ = launch(home, engram_env(model_cache, **env), command=args, port=port, timeout=NODE_START_TIMEOUT)
    node = NodeHandle(home=home, process=process, model_cache=model_cache, settings=Settings.from_env({}, home=home))
    node.http_url, node.grpc_address, node.nats_url = info["http_url"], info["grpc_address"], info["nats_url"]
    return node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A real embedded node in dev mode (anonymous callers allowed on loopback)."""
    handle = start_node(tmp_path_factory.mktemp("node"), model_cache)
    yield handle
    assert handle.stop() == 0


@pytest.fixture
def api(node: NodeHandle) -> Iterator[httpx.Client]:
    """An HTTP client of the dev-mode node (the REST API at /v1, the probes, /events)."""
    with httpx.Client(base_url=node.http_url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def secured_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A real embedded node with dev mode off: every request needs an API key."""
    handle = start_node(tmp_path_factory.mktemp("secured"), model_cache, ENGRAM_DEV_MODE="false")
    yield handle
    assert handle.stop() == 0
