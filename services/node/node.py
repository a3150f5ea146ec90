"""The embedded node: a private nats-server, all five services on one loopback gRPC server, and the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from engram import __version__
from engram.config import Settings
from engram.connect import connect_lines
from engram.errors import DiskFull
from engram.names import device_name
from engram.process import metrics
from engram.process.health import MIB, disk_space
from engram.process.natsd import NatsServer, NatsSupervisor
from engram.process.nodeinfo import NODE_FILE, NodeInfo, attach_socket_path
from engram.process.ports import listen_socket
from engram.process.runtime import MIN_WRITE_ROOM, Resources, RunningServer, serve
from engram.services.node.owner import owner_lock
from engram.services.node.supervisor import INDEXES, Inherited
from engram.v1 import node_control_pb2, node_control_pb2_grpc

if TYPE_CHECKING:
    from engram.keys import KeyStore
    from engram.services.gateway.server import RunningGateway
    from engram.services.search.server import SearchService
    from engram.services.sync.device import DeviceSync

log = logging.getLogger(__name__)

VERSION = __version__
DEFAULT_IDLE_GRACE = 3.0
DEFAULT_FIRST_CLIENT_WAIT = 60.0
ATTACH_NAME_TIMEOUT = 5.0  # a client of the attach socket names itself at once
SUPERVISOR_MIN_FREE_MB = 64  # a nats-server stuck on a full disk is restarted only once this much is free


class NodeControl(node_control_pb2_grpc.NodeControlServicer):
    """Counts attached stdio clients; a node started for them stops when the last one leaves.

    A client attaches with the Attach stream (gRPC), or, when it should not pay for loading gRPC (`engram mcp`
    relaying to /mcp with the standard library), by holding a connection to the data dir's attach socket
    (engram.process.nodeinfo.attach_socket_path): it writes its name as one line, reads one line once it is counted,
    and is counted until it closes the connection or the node stops.
    """

    name = "engram.v1.NodeControl"

    def __init__(
        self, *, home: Path, idle_exit: bool, stop: asyncio.Event, pid: int, grace: float = DEFAULT_IDLE_GRACE
    ) -> None:
        self._home = home
        self._pid = pid  # the node's pid as node.json has it (its supervisor's, when supervised)
        self._idle_exit = idle_exit
        self._stop = stop
        self._grace = grace
        self._attached = 0
        self._idle_task: asyncio.Task[None] | None = None
        self._attach_server: asyncio.Server | None = None
        self.http_url = ""
        self.grpc_address = ""

    def register(self, server: grpc.aio.Server) -> None:
        node_control_pb2_grpc.add_NodeControlServicer_to_server(self, server)

    async def start(self) -> None:
        if self._idle_exit:
            self._schedule_idle_stop(DEFAULT_FIRST_CLIENT_WAIT)
        path = attach_socket_path(self._home)
        if path is None:
            return  # a data dir too deep for a socket path: clients attach over gRPC only
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # left by a node that did not stop cleanly; the data dir's lock is ours
        self._attach_server = await asyncio.start_unix_server(self._attach_local, path=str(path))
        path.chmod(0o600)  # the data dir's user only, as node.json's readers are

    async def stop(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        if self._attach_server is not None:
            self._attach_server.close()
            if (path := attach_socket_path(self._home)) is not None:
                path.unlink(missing_ok=True)

    async def Attach(
        self, request: node_control_pb2.AttachRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[node_control_pb2.AttachResponse]:
        self._joined(f"{request.client} (pid {request.pid})")
        try:
            yield node_control_pb2.AttachResponse(attached=self._attached)
            await self._stop.wait()  # the stream stays open until the client leaves or the node stops
        finally:
            self._left(request.client)

    async def _attach_local(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            client = (await asyncio.wait_for(reader.readline(), ATTACH_NAME_TIMEOUT))[:200].decode(errors="replace")
        except (TimeoutError, OSError, ValueError):
            writer.close()
            return
        if self._stop.is_set():
            writer.close()  # stopping: the client finds no line and starts (or waits for) another node
            return
        client = client.strip() or "local client"
        self._joined(client)
        try:
            writer.write(f"{self._attached}\n".encode())
            await writer.drain()
            left = asyncio.ensure_future(reader.read())  # EOF (b"") when the client goes
            stopping = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait({left, stopping}, return_when=asyncio.FIRST_COMPLETED)
            for task in (left, stopping):
                task.cancel()
        except OSError:
            pass
        finally:
            self._left(client)
            writer.close()

    def _joined(self, client: str) -> None:
        self._attached += 1
        if self._idle_task is not None:
            self._idle_task.cancel()
            self._idle_task = None
        log.info("client attached: %s; %d attached", client, self._attached)

    def _left(self, client: str) -> None:
        self._attached -= 1
        log.info("client detached: %s; %d attached", client, self._attached)
        if self._idle_exit and self._attached == 0:
            self._schedule_idle_stop(self._grace)

    async def GetNodeInfo(
        self, request: node_control_pb2.GetNodeInfoRequest, context: grpc.aio.ServicerContext
    ) -> node_control_pb2.GetNodeInfoResponse:
        return node_control_pb2.GetNodeInfoResponse(
            pid=self._pid, home=str(self._home), http_url=self.http_url, grpc_address=self.grpc_address,
            version=VERSION, attached=self._attached,
        )  # fmt: skip

    def _schedule_idle_stop(self, delay: float) -> None:
        async def stop_when_still_idle() -> None:
            await asyncio.sleep(delay)
            if self._attached == 0:
                log.info("no clients attached for %.0fs: stopping", delay)
                self._stop.set()

        self._idle_task = asyncio.create_task(stop_when_still_idle())


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


async def run_node(
    settings: Settings, *, idle_exit: bool = False, announce: bool = True, inherited: Inherited | None = None
) -> None:
    """Runs the embedded node until SIGINT/SIGTERM (or, with idle_exit, until no stdio client is attached).

    ``inherited``: the node runs under its supervisor (engram.services.node.supervisor), which holds the data
    dir's lock and the gateway's bound socket and passed them on; node.json then names the supervisor's pid, the
    process to signal, and the node's own as worker_pid."""
    from engram.keys import KeyStore
    from engram.services.gateway.identity import check_bind

    started = time.monotonic()
    home = settings.home
    keys = KeyStore(settings.keys_path)
    check_bind(settings, keys)
    _require_start_space(home, settings)
    stop = asyncio.Event()
    install_stop_signals(stop)
    # Metrics (ENGRAM_METRICS_LISTEN) once this process owns the data dir, so a second node says so first.
    node_pid = os.getppid() if inherited is not None else os.getpid()
    lock = owner_lock(home) if inherited is None else contextlib.nullcontext()
    with lock, metrics.serving(settings.metrics_listen):
        parts = _NodeParts.bound(settings, inherited)
        try:
            settings = settings.replace(nats_url=parts.nats.url)
            control = NodeControl(home=home, idle_exit=idle_exit, stop=stop, pid=node_pid)
            info = await parts.start(settings, keys, control, node_pid)
            if announce:
                print(banner(settings, info, time.monotonic() - started), flush=True)
            log.info("node ready in %.2fs", time.monotonic() - started)
            await stop.wait()
            log.info("stopping")
        finally:
            (home / NODE_FILE).unlink(missing_ok=True)
            await parts.stop()


@dataclass(slots=True)
class _NodeParts:
    """What a running node holds, started in order and stopped in the reverse order (the parts started so far)."""

    http_socket: socket.socket
    nats: NatsServer
    resources: Resources | None = None
    supervisor: asyncio.Task[None] | None = None
    grpc_server: RunningServer | None = None
    gateway: RunningGateway | None = None
    device_sync: DeviceSync | None = None

    @classmethod
    def bound(cls, settings: Settings, inherited: Inherited | None) -> _NodeParts:
        """The gateway's socket bound before anything starts (a taken port is one line, not a half-started node),
        then the private nats-server."""
        if inherited is None:
            http_socket = listen_socket(settings.host, settings.port)
        else:
            http_socket = socket.socket(fileno=inherited.socket_fd)
        try:
            return cls(http_socket, NatsServer.start(settings.home))
        except BaseException:
            http_socket.close()
            raise

    async def start(self, settings: Settings, keys: KeyStore, control: NodeControl, pid: int) -> NodeInfo:
        """Starts the services, their gRPC server and the gateway, then writes node.json; returns what it says."""
        from engram.services.gateway.server import GatewayDeps
        from engram.services.gateway.server import build_server as build_gateway

        self.resources = resources = Resources(settings, local_store=True)
        resources.disk.check()  # start guarding the data dir's free space now
        room = max(settings.disk_reserve_mb, SUPERVISOR_MIN_FREE_MB) * MIB
        self.supervisor = asyncio.create_task(
            NatsSupervisor(self.nats, resources.health, disk_ok=lambda: disk_space(settings.home, room).ok).run(),
            name="nats-supervisor",
        )
        self.grpc_server, search = await _serve_services(settings, resources, control)
        address = self.grpc_server.address
        deps = GatewayDeps(
            address, address, keys, sock=self.http_socket, consolidation_addr=address, sync_addr=address,
            event_log=await resources.log(), searcher=search.reader if settings.search_in_process else None,
        )  # fmt: skip
        self.gateway = await build_gateway(settings, deps)
        control.http_url, control.grpc_address = self.gateway.url, address
        info = NodeInfo(pid, self.gateway.url, address, str(settings.home), self.nats.url, settings.dev)
        _write_node_file(settings.home, info)
        if settings.upstream:
            self.device_sync = await _start_device_sync(settings, resources, address)
        return info

    async def stop(self) -> None:
        """In order: stop taking requests, stop the services, close the log connection, then the log itself."""
        if self.device_sync is not None:
            await self.device_sync.stop()
        if self.gateway is not None:
            await self.gateway.stop()
        else:
            self.http_socket.close()
        if self.grpc_server is not None:
            await self.grpc_server.stop(grace=1.0)
        if self.gateway is not None:
            await self.gateway.close()
        if self.supervisor is not None:
            self.supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.supervisor
        if self.resources is not None:
            await self.resources.close()
        self.nats.stop()


async def _serve_services(
    settings: Settings, resources: Resources, control: NodeControl
) -> tuple[RunningServer, SearchService]:
    """The four services on one loopback gRPC server, each told the address of the others (this same server)."""
    from engram.services.consolidation.server import build_service as build_consolidation
    from engram.services.ingest.server import build_service as build_ingest
    from engram.services.search.server import build_service as build_search
    from engram.services.sync.server import build_service as build_sync

    consolidation = await build_consolidation(settings, resources)
    ingest = await build_ingest(settings, resources)
    sync = await build_sync(settings, resources)
    search = await build_search(settings, resources)

    def bound(address: str) -> None:
        # Consolidation writes through ingest, and ingest reads current versions from search: all here.
        consolidation.ingest_addr = address
        consolidation.search_addr = address
        ingest.search_addr = address
        sync.search_addr = address

    services = [ingest, search, consolidation, sync]
    server = await serve(services, "127.0.0.1:0", resources=resources, extra=[control], on_bound=bound)
    return server, search


async def _start_device_sync(settings: Settings, resources: Resources, grpc_address: str) -> DeviceSync:
    """The sync worker of an edge node (`engram edge`): pushes this device's changes and pulls the cluster's."""
    from engram.grpc.clients import SearchClient
    from engram.services.sync.device import DeviceSync, Upstream

    worker = DeviceSync(
        await resources.log(), SearchClient(grpc_address), Upstream(settings.upstream, settings.upstream_key),
        home=settings.home, device=device_name(settings.device), namespace=settings.sync_namespace,
        upstream_url=settings.upstream, batch=settings.sync_batch, interval=settings.sync_interval_seconds,
        retry_first=settings.sync_retry_first_seconds, retry_max=settings.sync_retry_max_seconds,
    )  # fmt: skip
    worker.start()
    log.info("syncing with %s as device %s", settings.upstream, worker.state.device)
    return worker


def _require_start_space(home: Path, settings: Settings) -> None:
    """Refuses to start with too little free space: loading the search indexes fills in parts of their memory-mapped
    files (engram.index.qdrant_edge.load_room), and a mapped file that cannot grow on a full disk kills the process
    (SIGBUS) instead of failing cleanly; after that the reserve must still be free for writes."""
    if settings.qdrant_url:
        load = 0  # the indexes live in a Qdrant server, not in the data dir
    else:
        from engram.index.qdrant_edge import load_room

        load = sum(load_room(home / name) for name in INDEXES)
    reserve = max(settings.disk_reserve_mb * MIB, MIN_WRITE_ROOM)
    space = disk_space(home, load + reserve)
    if not space.ok:
        raise DiskFull(
            f"only {space.free_bytes // MIB} MiB free in {home}; the node needs at least {space.reserve_bytes // MIB} "
            f"MiB there to start: {load // MIB} MiB that its search index takes as it loads (its memory-mapped files "
            f"fill in) and the {reserve // MIB} MiB kept free for writes (ENGRAM_DISK_RESERVE_MB).",
            hint="Free some space there (or move the data dir to a larger disk: ENGRAM_HOME), then start again.",
        )


def _write_node_file(home: Path, info: NodeInfo) -> None:
    tmp = home / f"{NODE_FILE}.tmp"
    record = {
        "pid": info.pid, "worker_pid": os.getpid(), "http_url": info.http_url, "grpc_address": info.grpc_address,
        "home": info.home, "mcp_url": info.mcp_url, "nats_url": info.nats_url, "dev": info.dev,
    }  # fmt: skip
    tmp.write_text(json.dumps(record))
    os.replace(tmp, home / NODE_FILE)


def banner(settings: Settings, info: NodeInfo, seconds: float) -> str:
    mode = "dev mode: anonymous callers allowed on loopback" if settings.dev else "API keys required"
    return "\n".join(
        [
            f"Engram {VERSION} is running (started in {seconds:.1f}s).",
            f"  MCP (streamable HTTP)  {info.mcp_url}",
            f"  REST API               {info.http_url}/v1   (docs: {info.http_url}/docs)",
            f"  Web console            {info.http_url}/console",
            f"  Data dir               {info.home}",
            f"  Auth                   {mode}",
            "",
            *connect_lines(info.mcp_url, info.home, keys_required=not settings.dev),
            "Press Ctrl-C to stop.",
        ]
    )
