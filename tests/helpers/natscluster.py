"""A NATS JetStream cluster of real nats-server processes on loopback, as the Helm chart's NATS runs: three servers
routed to each other, file storage, one account for Engram's services and users whose permissions the chart gives
(a services user; an events reader per namespace that may only subscribe to that namespace's events)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from engram.process.natsd import nats_server_binary
from tests.helpers.tools import free_ports

SERVICES_USER = ("engram", "services-secret")


@dataclass(frozen=True, slots=True)
class EventsReader:
    """A user for a subscriber outside the cluster: it reads one namespace's events, nothing else."""

    user: str
    password: str
    namespace: str


@dataclass
class NatsNode:
    name: str
    port: int
    config: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [str(nats_server_binary()), "-c", str(self.config)], stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )

    def kill(self) -> None:
        """SIGKILL: the node dies as a crashed pod does, with no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class NatsCluster:
    root: Path
    nodes: list[NatsNode] = field(default_factory=list)
    readers: tuple[EventsReader, ...] = ()

    @classmethod
    def start(cls, root: Path, *, size: int = 3, readers: tuple[EventsReader, ...] = ()) -> NatsCluster:
        """Starts ``size`` routed JetStream servers and waits until the cluster has a JetStream leader."""
        ports = free_ports(2 * size)
        client_ports, route_ports = ports[:size], ports[size:]
        routes = [f"nats-route://127.0.0.1:{p}" for p in route_ports]
        cluster = cls(root, readers=readers)
        for i in range(size):
            home = root / f"n{i}"
            (home / "store").mkdir(parents=True, exist_ok=True)
            config = home / "nats.conf"
            config.write_text(_config(f"n{i}", client_ports[i], route_ports[i], routes, home / "store", readers))
            cluster.nodes.append(NatsNode(f"n{i}", client_ports[i], config, home / "nats.log"))
        for node in cluster.nodes:
            node.start()
        cluster.wait_ready()
        return cluster

    @property
    def url(self) -> str:
        """Every server, comma separated: what ENGRAM_NATS_URL holds in the cluster."""
        return ",".join(node.url for node in self.nodes)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every running server answers /healthz?js-enabled-only... with JetStream ready (a meta leader)."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while True:
                if node.process is not None and node.process.poll() is not None:
                    raise AssertionError(f"nats-server {node.name} exited; see {node.log}")
                if _jetstream_ready(node):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"nats-server {node.name} has no JetStream leader; see {node.log}")
                time.sleep(0.1)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _jetstream_ready(node: NatsNode) -> bool:
    """The server's own health check (monitoring port): JetStream enabled, current and with a meta leader."""
    import urllib.error
    import urllib.request

    monitor = json.loads(node.config.with_suffix(".monitor").read_text())["port"]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/healthz", timeout=1) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _config(name: str, port: int, route_port: int, routes: list[str], store: Path,
            readers: tuple[EventsReader, ...]) -> str:  # fmt: skip
    (monitor,) = free_ports(1)
    Path(store.parent / "nats.monitor").write_text(json.dumps({"port": monitor}))
    user, password = SERVICES_USER
    users = [f"{{ user: {json.dumps(user)}, password: {json.dumps(password)} }}"]
    for reader in readers:
        # Subscribe to one namespace's events only: no publishing, no JetStream API (which would read the stream).
        permissions = (
            f'{{ publish: {{ deny: [">"] }}, subscribe: {{ allow: ["engram.events.{reader.namespace}.>"] }} }}'
        )
        users.append(
            f"{{ user: {json.dumps(reader.user)}, password: {json.dumps(reader.password)}, "
            f"permissions: {permissions} }}"
        )
    return (
        "\n".join(
            [
                f"server_name: {name}",
                f"listen: 127.0.0.1:{port}",
                f"http: 127.0.0.1:{monitor}",
                f"jetstream {{ store_dir: {json.dumps(str(store))}, max_file_store: 1GB, max_memory_store: 64MB }}",
                f"cluster {{ name: engram, listen: 127.0.0.1:{route_port}, routes: [{', '.join(routes)}] }}",
                "max_payload: 4MB",
                f"accounts {{ ENGRAM: {{ jetstream: enabled, users: [ {', '.join(users)} ] }} }}",
            ]
        )
        + "\n"
    )
