"""What the services of one process share: settings, health, the log connection, the embedders; and how they are
served."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2

from engram import __version__
from engram.config import Settings
from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import DiskFull, Unavailable
from engram.grpc.rpc import ErrorInterceptor, MetricsInterceptor, add_health, bind
from engram.log import Log
from engram.log.jobstore import JobStore
from engram.log.leases import Leases
from engram.log.nats import NatsCredentials, NatsLog
from engram.log.syncstore import SyncStore
from engram.process.health import DISK, LOG, MIB, DiskSpace, Health, disk_space
from engram.process.heap import Heap, freeze_startup_objects, page_out
from engram.process.natsd import LOG_STORE
from engram.v1 import readiness_pb2, readiness_pb2_grpc

log = logging.getLogger(__name__)

LIVENESS = "liveness"  # the gRPC health entry that is SERVING while the process runs

DEFAULT_GRACE_SECONDS = 5.0
DISK_CHECK_SECONDS = 1.0
# Free space a write needs whatever the reserve (ENGRAM_DISK_RESERVE_MB=0 included): one log entry of up to 4 MiB
# (nats-server's max_payload) with its block overhead. Below it nats-server cannot store the entry and answers
# nothing (measured: each write then waited 10 s for the acknowledgement that never came).
MIN_WRITE_ROOM = 8 * MIB
STORE_STALLED = (
    "The log's store does not acknowledge writes (out of space or failing); nothing was saved. The node restarts "
    "it once the disk has room: retry in a few seconds."
)
INGEST_SERVICE = "engram.v1.Ingest"


class Service(Protocol):
    """A gRPC service with a lifecycle; every service package builds one."""

    name: str  # the full gRPC service name, e.g. "engram.v1.Ingest"

    def register(self, server: grpc.aio.Server) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class DiskGuard:
    """Free space in the data dir against the reserve: writes are refused below it, and readiness says so.

    Checking is one statvfs call, cheap enough to run before every write; a background loop also checks once a
    second, so readiness recovers by itself when space comes back even if nobody writes. The reserve is never
    less than MIN_WRITE_ROOM: a disk too full for one more log entry refuses writes at once, like any reserve.
    """

    def __init__(self, path: Path, reserve_bytes: int, health: Health) -> None:
        self.path = path
        self.reserve_bytes = max(reserve_bytes, MIN_WRITE_ROOM)
        self._health = health

    def check(self) -> DiskSpace:
        space = disk_space(self.path, self.reserve_bytes)
        if space.ok:
            self._health.clear(DISK)
        else:
            detail = str(DiskFull.for_path(str(self.path), space.free_bytes, space.reserve_bytes))
            self._health.fail(DISK, detail, services=[INGEST_SERVICE])
        return space

    def require_space(self) -> None:
        """Raises DiskFull when a write now could fill the disk, and Unavailable at once while the log's store
        does not acknowledge writes (a write would wait for nothing; the node restarts the store)."""
        space = self.check()
        if not space.ok:
            raise DiskFull.for_path(str(self.path), space.free_bytes, space.reserve_bytes)
        if self._health.problem(LOG_STORE) is not None:
            raise Unavailable(STORE_STALLED, retry_after=5.0)

    async def run(self, interval: float = DISK_CHECK_SECONDS) -> None:
        while True:
            try:
                self.check()
            except OSError as e:
                log.warning("cannot check free space in %s: %s", self.path, e)
            await asyncio.sleep(interval)


class HealthLogState:
    """The log's connection state, reported as health conditions."""

    def __init__(self, health: Health) -> None:
        self._health = health

    def log_unreachable(self, detail: str) -> None:
        self._health.fail(LOG, detail)

    def log_reachable(self) -> None:
        self._health.clear(LOG)

    def log_stalled(self, detail: str) -> None:
        self._health.fail(LOG_STORE, f"{detail} (its store may be out of space or failing); writes are refused.")

    def log_acknowledging(self) -> None:
        self._health.clear(LOG_STORE)

    def log_down(self) -> bool:
        # Set by the connection's disconnect callback and by the embedded node's supervisor when nats-server
        # exits, whichever notices first; cleared once the connection is back.
        return self._health.problem(LOG) is not None


@dataclass
class Resources:
    """Created once per process and shared, so the embedded node loads the model and connects to NATS once.

    ``local_store``: the log's store is on this machine's disk (the embedded node), so ingest guards free space.
    """

    settings: Settings
    local_store: bool = False
    health: Health = field(default_factory=Health)
    started_at: float = field(default_factory=time.time)
    _log: Log | None = None
    _embedder: Embedder | None = None
    _sparse: Bm25Encoder = field(default_factory=Bm25Encoder)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _disk: DiskGuard | None = None
    _disk_task: asyncio.Task[None] | None = None
    _heap_task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        """Bounds the C heap before the services start their threads (ENGRAM_MALLOC_ARENAS, ENGRAM_MALLOC_TRIM_MB)."""
        heap = Heap.glibc()
        if heap is None:
            return
        heap.limit_arenas(self.settings.malloc_arenas)
        if self.settings.malloc_trim_mb > 0:
            with contextlib.suppress(RuntimeError):  # no running loop: nothing is trimmed
                trimmed = heap.keep_trimmed(self.settings.malloc_trim_mb * MIB, files=self.settings.home)
                self._heap_task = asyncio.get_running_loop().create_task(trimmed, name="heap-trim")

    async def release_memory(self) -> None:
        """Hands what the process freed back to the system now: malloc's free pages and the second copies of the
        index files (Heap.release), and the pages of the index's payloads, which a job's scan read every one of
        (54 MiB at 50k memories; searches read back the few they return). For the end of work that frees much at
        once, such as a consolidation job: the trim that follows the process's growth does not see memory freed
        after it grew."""
        heap = Heap.glibc()
        if heap is not None:
            await asyncio.to_thread(heap.release, self.settings.home)
        await asyncio.to_thread(page_out, self.settings.home, ("/payload_storage/",))

    @property
    def disk(self) -> DiskGuard:
        """The guard of the data dir's free space (started with the first service that asks for it)."""
        if self._disk is None:
            self._disk = DiskGuard(self.settings.home, self.settings.disk_reserve_mb * MIB, self.health)
            with contextlib.suppress(RuntimeError):  # no running loop: checked per write only
                self._disk_task = asyncio.get_running_loop().create_task(self._disk.run(), name="disk-guard")
        return self._disk

    async def log(self) -> Log:
        async with self._lock:
            if self._log is None:
                settings = self.settings
                if not settings.nats_url:
                    raise Unavailable("No NATS address: set ENGRAM_NATS_URL or pass --nats-url.")
                self._log = await NatsLog.connect(
                    settings.nats_url,
                    stream=settings.stream,
                    state=HealthLogState(self.health),
                    replicas=settings.stream_replicas,
                    credentials=NatsCredentials(
                        settings.nats_user, settings.nats_password, str(settings.nats_creds or "") or None
                    ),
                )
            return self._log

    async def leases(self) -> Leases:
        """Leases in the log's NATS (KV), which every replica of a service shares."""
        event_log = await self.log()
        assert isinstance(event_log, NatsLog)
        return await Leases.open(event_log.jetstream, ttl=self.settings.job_lease_seconds, replicas=event_log.replicas)

    async def job_store(self) -> JobStore:
        """Consolidation jobs in the log's NATS (KV), which every replica of the service shares."""
        event_log = await self.log()
        assert isinstance(event_log, NatsLog)
        return await JobStore.open(event_log.jetstream, replicas=event_log.replicas)

    async def sync_store(self) -> SyncStore:
        """The answers given to changes pushed by edge devices, in the log's NATS (KV), shared by sync replicas."""
        event_log = await self.log()
        assert isinstance(event_log, NatsLog)
        return await SyncStore.open(event_log.jetstream, replicas=event_log.replicas)

    async def embedder(self) -> Embedder:
        async with self._lock:
            if self._embedder is None:
                from engram.models.named import Hub, check_data_dir, open_embedder, record_data_dir

                settings = self.settings
                check_data_dir(settings.home, settings.embed_model)  # before any vector of another model is made
                self._embedder = await asyncio.to_thread(
                    open_embedder, settings.embed_model, settings.model_cache_dir, precision=settings.embed_precision,
                    hub=Hub(settings.hf_endpoint, settings.hf_token), workers=settings.embed_workers or None,
                )  # fmt: skip
                record_data_dir(settings.home, settings.embed_model)
            return self._embedder

    @property
    def sparse(self) -> Bm25Encoder:
        return self._sparse

    async def close(self) -> None:
        for task in (self._disk_task, self._heap_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._disk_task = self._heap_task = None
        if self._log is not None:
            await self._log.close()
            self._log = None


class ReadinessServicer(readiness_pb2_grpc.ReadinessServicer):
    """Answers GetReadiness from the process's Health."""

    def __init__(self, resources: Resources, services: list[str]) -> None:
        self._resources = resources
        self._services = services

    async def GetReadiness(
        self, request: readiness_pb2.GetReadinessRequest, context: grpc.aio.ServicerContext
    ) -> readiness_pb2.GetReadinessResponse:
        health = self._resources.health
        response = readiness_pb2.GetReadinessResponse(
            services=[readiness_pb2.ServiceState(service=s, serving=health.ready(s)) for s in self._services],
            version=__version__,
            pid=os.getpid(),
        )
        response.started_at.FromNanoseconds(int(self._resources.started_at * 1e9))
        for problem in health.problems():
            item = response.problems.add(condition=problem.condition, detail=problem.detail, degraded=problem.degraded)
            item.services.extend(sorted(problem.services))
            item.since.FromNanoseconds(int(problem.since * 1e9))
        if self._resources._disk is not None:
            space = self._resources._disk.check()
            response.disk.path = space.path
            response.disk.free_bytes = space.free_bytes
            response.disk.reserve_bytes = space.reserve_bytes
        return response


@dataclass
class RunningServer:
    server: grpc.aio.Server
    address: str
    services: list[Service]

    async def stop(self, grace: float = DEFAULT_GRACE_SECONDS) -> None:
        await self.server.stop(grace)
        for service in reversed(self.services):
            await service.stop()


async def serve(
    services: list[Service],
    listen: str,
    *,
    resources: Resources,
    extra: list[Service] | None = None,
    on_bound: Callable[[str], None] | None = None,
) -> RunningServer:
    """Starts the services, then one gRPC server hosting all of them plus the health and readiness services (every
    call's errors translated once, engram.grpc.rpc.ErrorInterceptor; every call counted and timed under the status
    its client got, engram.grpc.rpc.MetricsInterceptor).

    on_bound receives the bound address before any service starts (the embedded node's services call each
    other through it). Each service's gRPC health follows the process's Health from then on.
    """
    server = grpc.aio.server(
        # The first interceptor is the outermost: the metrics see the status the error translation gave.
        interceptors=[MetricsInterceptor(), ErrorInterceptor()],
        options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)],
    )
    health_servicer = add_health(server)
    everything = [*services, *(extra or [])]
    names = [s.name for s in everything]
    readiness_pb2_grpc.add_ReadinessServicer_to_server(ReadinessServicer(resources, names), server)
    for service in everything:
        service.register(server)
    address = bind(server, listen)
    if on_bound is not None:
        on_bound(address)
    started: list[Service] = []
    try:
        for service in everything:
            await service.start()
            started.append(service)
        await server.start()
    except BaseException:
        for service in reversed(started):
            await service.stop()
        await server.stop(0)
        raise
    freeze_startup_objects()

    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING

    async def publish() -> None:
        for name in names:
            await health_servicer.set(name, serving if resources.health.ready(name) else not_serving)
        everything_ready = all(resources.health.ready(name) for name in names)
        await health_servicer.set("", serving if everything_ready else not_serving)

    pending: set[asyncio.Task[None]] = set()

    def changed() -> None:
        task = asyncio.get_running_loop().create_task(publish())
        pending.add(task)
        task.add_done_callback(pending.discard)

    resources.health.on_change(changed)
    await publish()
    # Liveness: SERVING for as long as the process serves at all, whatever its readiness (a search replica
    # rebuilding its index, NATS unreachable); Kubernetes restarts a pod only when this stops answering.
    await health_servicer.set(LIVENESS, serving)
    log.info("gRPC listening on %s: %s", address, ", ".join(names))
    return RunningServer(server, address, everything)
