"""The Helm chart's cluster, on loopback: a 3-node NATS JetStream cluster (stream replicas 3, the chart's accounts),
2 gateways, 2 ingest, 2 search (each its own Qdrant Edge shard), 1 consolidation and 1 sync, each its own OS process
started with the settings the chart passes (`engram run <service>`, ENGRAM_* variables, the replicas of a service
behind one gRPC target, as a headless Service gives them).

Under a bounded write and read load, one NATS node, one ingest replica and one search replica are killed (SIGKILL,
as a node failure kills a pod) and restarted; afterwards every acknowledged write is found, exactly once, on every
search replica. What the clients saw during each fault is recorded, printed, and written to $ENGRAM_CLUSTER_REPORT
when that is set. The other tests prove what several replicas must get right: ingest replicas appending to one memory
at once, read-your-writes and cursors whichever gateway and search replica answer, SSE resuming on the other gateway,
and NATS credentials that let an outside subscriber read only its own namespace's events."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
import nats
import nats.errors
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engram.grpc.clients import IngestClient, SearchClient
from engram.keys import KeyStore
from engram.model import Caller, MemoryInput, SearchFilter
from engram.services.gateway.sse.streams import EventParser
from tests.conftest import engram_env
from tests.helpers.mcp import call, http_client
from tests.helpers.natscluster import SERVICES_USER, EventsReader, NatsCluster, NatsNode
from tests.helpers.procs import stop_process, wait_line
from tests.helpers.tools import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

NAMESPACE = "team-a"
READER = EventsReader("events-team-a", "reader-secret", NAMESPACE)
LOAD_TAG = "fault-load"
WRITERS = 2
WRITE_PAUSE = 0.05  # per writer: at most ~20 writes a second each, a bounded load for two cores
FAULT_SECONDS = 4.0  # how long a killed component stays down
SETTLE_SECONDS = 4.0  # load on the restored cluster before the next fault
START_TIMEOUT = 240.0


@dataclass
class Service:
    """One `engram run <service>` process at a fixed address, so a restart comes back where its clients look."""

    name: str
    args: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        with open(self.log, "a") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "engram.services.node", "run", *self.args],
                env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip

    def wait_ready(self) -> None:
        assert self.process is not None
        try:
            wait_line(self.process, "ready at", timeout=START_TIMEOUT)
        except AssertionError as e:
            raise AssertionError(f"{self.name} did not start: {e}\n{self.log.read_text()[-3000:]}") from e

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process, signal.SIGKILL)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                stop_process(self.process, signal.SIGTERM, timeout=20)
            self.kill()


@dataclass
class Cluster:
    nats: NatsCluster
    services: dict[str, Service]
    gateways: list[str]  # base URLs
    ingest: list[str]  # one address per replica
    search: list[str]
    key: str

    def restart(self, name: str) -> None:
        service = self.services[name]
        service.start()
        service.wait_ready()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    nats_cluster = NatsCluster.start(root / "nats", readers=(READER,))
    keys = KeyStore(root / "keys.json")
    _, key = keys.create(namespace=NAMESPACE, agent="loadgen", device="ci")
    grpc_ports = free_ports(6)
    ingest = [f"127.0.0.1:{p}" for p in grpc_ports[0:2]]
    search = [f"127.0.0.1:{p}" for p in grpc_ports[2:4]]
    consolidation, sync = (f"127.0.0.1:{p}" for p in grpc_ports[4:6])
    http_ports = free_ports(2)
    user, password = SERVICES_USER
    common = {  # what the chart's ConfigMap and Secret give every pod
        "ENGRAM_NATS_URL": nats_cluster.url,
        "ENGRAM_NATS_USER": user,
        "ENGRAM_NATS_PASSWORD": password,
        "ENGRAM_STREAM_REPLICAS": "3",
        "ENGRAM_DEV_MODE": "false",
        "ENGRAM_KEYS_FILE": str(root / "keys.json"),
        "ENGRAM_INGEST_ADDR": "ipv4:" + ",".join(ingest),
        "ENGRAM_SEARCH_ADDR": "ipv4:" + ",".join(search),
        "ENGRAM_CONSOLIDATION_ADDR": consolidation,
        "ENGRAM_SYNC_ADDR": sync,
        "ENGRAM_EXPIRY_INTERVAL_SECONDS": "5",
    }
    services: dict[str, Service] = {}

    def add(name: str, service: str, listen: str, **extra: str) -> None:
        env = engram_env(model_cache, **common, ENGRAM_HOME=str(root / name), **extra)
        services[name] = Service(name, [service, "--listen", listen], env, root / f"{name}.log")

    for i, address in enumerate(search):
        add(f"search-{i}", "search", address)
    for i, address in enumerate(ingest):
        add(f"ingest-{i}", "ingest", address)
    add("consolidation", "consolidation", consolidation)
    add("sync", "sync", sync)
    for i, port in enumerate(http_ports):
        env = engram_env(model_cache, **common, ENGRAM_HOME=str(root / f"gateway-{i}"), ENGRAM_PORT=str(port))
        services[f"gateway-{i}"] = Service(f"gateway-{i}", ["gateway"], env, root / f"gateway-{i}.log")
    try:
        first = services["search-0"]  # builds the ONNX model into the shared cache once, before the others load it
        first.start()
        first.wait_ready()
        rest = [s for name, s in services.items() if name != "search-0"]
        for service in rest:
            service.start()
        for service in rest:
            service.wait_ready()
        yield Cluster(nats_cluster, services, [f"http://127.0.0.1:{p}" for p in http_ports], ingest, search, key)
    finally:
        for service in services.values():
            service.stop()
        nats_cluster.stop()


# --- load ------------------------------------------------------------------------------------------------------------


@dataclass
class Window:
    """What the clients saw while one fault lasted (or on the healthy cluster): each outcome counts in the window in
    which its answer (or error) came back."""

    name: str
    started: float = field(default_factory=time.monotonic)
    writes_ok: int = 0
    reads_ok: int = 0
    write_errors: collections.Counter[str] = field(default_factory=collections.Counter)
    read_errors: collections.Counter[str] = field(default_factory=collections.Counter)
    slowest: dict[str, float] = field(default_factory=lambda: {"write": 0.0, "read": 0.0})
    longest_gap: dict[str, float] = field(default_factory=lambda: {"write": 0.0, "read": 0.0})
    restarted_after: float | None = None

    def report(self) -> dict[str, Any]:
        return {
            "fault": self.name,
            "writes_acked": self.writes_ok,
            "write_errors": dict(self.write_errors),
            "reads_ok": self.reads_ok,
            "read_errors": dict(self.read_errors),
            "errors": sum(self.write_errors.values()) + sum(self.read_errors.values()),
            "slowest_write_seconds": round(self.slowest["write"], 2),
            "slowest_read_seconds": round(self.slowest["read"], 2),
            # The longest time no write (no read) succeeded: how long the fault stopped clients, at most.
            "longest_write_gap_seconds": round(self.longest_gap["write"], 2),
            "longest_read_gap_seconds": round(self.longest_gap["read"], 2),
            "restarted_after_seconds": round(self.restarted_after, 2) if self.restarted_after else None,
        }


@dataclass
class Load:
    gateways: list[str]
    key: str
    window: Window = field(default_factory=lambda: Window("healthy"))
    windows: list[Window] = field(default_factory=list)
    acked: dict[str, tuple[int, str]] = field(default_factory=dict)  # id -> (seq, content)
    sent: set[str] = field(default_factory=set)  # every content sent, acknowledged or not
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    last_ok: dict[str, float] = field(default_factory=dict)

    def begin(self, name: str) -> Window:
        self.window = Window(name)
        self.windows.append(self.window)
        return self.window

    def done(self, kind: str, began: float, error: str | None) -> None:
        now, window = time.monotonic(), self.window
        window.slowest[kind] = max(window.slowest[kind], now - began)
        if error is not None:
            (window.write_errors if kind == "write" else window.read_errors)[error] += 1
            return
        if kind == "write":
            window.writes_ok += 1
        else:
            window.reads_ok += 1
        previous = self.last_ok.get(kind, now)
        window.longest_gap[kind] = max(window.longest_gap[kind], now - previous)
        self.last_ok[kind] = now

    async def writer(self, n: int) -> None:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {self.key}"}, timeout=30) as http:
            i = 0
            while not self.stop.is_set():
                gateway = self.gateways[(n + i) % len(self.gateways)]
                content = f"cluster fault test write {n}-{i}: {uuid.uuid4().hex}"
                self.sent.add(content)
                began, error = time.monotonic(), None
                try:
                    reply = await http.post(f"{gateway}/v1/memories", json={"content": content, "tags": [LOAD_TAG]})
                    if reply.status_code == 201:
                        body = reply.json()
                        self.acked[body["id"]] = (body["seq"], content)
                    else:
                        error = f"HTTP {reply.status_code}"
                except httpx.HTTPError as e:
                    error = type(e).__name__
                self.done("write", began, error)
                i += 1
                await asyncio.sleep(WRITE_PAUSE)

    async def reader(self) -> None:
        """Reads back acknowledged writes through alternating gateways, with the write's min_seq: read-your-writes
        whichever gateway and search replica answer."""
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {self.key}"}, timeout=30) as http:
            i = 0
            while not self.stop.is_set():
                if not self.acked:
                    await asyncio.sleep(0.05)
                    continue
                memory_id, (seq, content) = list(self.acked.items())[-1 - (i % min(len(self.acked), 20))]
                gateway = self.gateways[i % len(self.gateways)]
                began, error = time.monotonic(), None
                try:
                    reply = await http.get(f"{gateway}/v1/memories/{memory_id}", params={"min_seq": seq})
                    if reply.status_code != 200:
                        error = f"HTTP {reply.status_code}"
                    elif reply.json()["content"] != content:
                        error = "wrong content"
                except httpx.HTTPError as e:
                    error = type(e).__name__
                self.done("read", began, error)
                i += 1
                await asyncio.sleep(0.02)


async def _stream_leader(cluster: NatsCluster) -> NatsNode:
    user, password = SERVICES_USER
    nc = await nats.connect(cluster.url.split(","), user=user, password=password)
    try:
        info = await nc.jetstream().stream_info("ENGRAM")
    finally:
        await nc.close()
    assert info.cluster is not None and len(info.cluster.replicas or []) == 2, "the log is not kept on 3 servers"
    return next(node for node in cluster.nodes if node.name == info.cluster.leader)


async def _until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


async def _all_on(address: str, min_seq: int, deadline: float) -> list[tuple[str, str]]:
    """(id, content) of every load memory one search replica holds, once it has applied min_seq."""
    client = SearchClient(address)
    caller = Caller(namespace=NAMESPACE, agent_id="verifier@ci", source="test")
    try:
        while True:
            try:
                found: list[tuple[str, str]] = []
                async for batch, _ in client.scan(caller, SearchFilter(tags=[LOAD_TAG]), min_seq=min_seq):
                    found.extend((m.id, m.content) for m in batch)
                return found
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
    finally:
        await client.close()


async def test_killing_a_nats_node_an_ingest_and_a_search_replica_loses_no_acknowledged_write(
    cluster: Cluster,
) -> None:
    load = Load(cluster.gateways, cluster.key)
    load.begin("healthy")
    tasks = [asyncio.create_task(load.writer(n)) for n in range(WRITERS)] + [asyncio.create_task(load.reader())]
    try:
        await asyncio.sleep(SETTLE_SECONDS)
        leader = await _stream_leader(cluster.nats)  # the worst NATS node to lose: the log's stream leader
        faults: list[tuple[str, Any, Any]] = [
            (f"NATS node {leader.name} (the stream leader) killed", leader.kill, leader.start),
            ("ingest-1 killed", cluster.services["ingest-1"].kill, lambda: cluster.restart("ingest-1")),
            ("search-1 killed", cluster.services["search-1"].kill, lambda: cluster.restart("search-1")),
        ]
        for name, kill, restart in faults:
            window = load.begin(name)
            await asyncio.to_thread(kill)
            await asyncio.sleep(FAULT_SECONDS)
            await asyncio.to_thread(restart)
            window.restarted_after = time.monotonic() - window.started
            await asyncio.to_thread(cluster.nats.wait_ready)
            await asyncio.sleep(SETTLE_SECONDS)
            await _until(lambda w=window: w.writes_ok > 0 and w.reads_ok > 0, 60, f"no write or read after {name}")
        load.begin("after the faults")
        await asyncio.sleep(SETTLE_SECONDS)
    finally:
        load.stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)

    assert load.acked, "no write was acknowledged"
    last = max(seq for seq, _ in load.acked.values())
    deadline = time.monotonic() + 120
    found_on = {address: await _all_on(address, last, deadline) for address in cluster.search}
    report = {
        "writes_acked": len(load.acked),
        "writes_sent": len(load.sent),
        "windows": [w.report() for w in load.windows],
        "found": {},
    }
    for address, found in found_on.items():
        ids = collections.Counter(memory_id for memory_id, _ in found)
        contents = collections.Counter(content for _, content in found)
        missing = set(load.acked) - set(ids)
        report["found"][address] = {"memories": len(found), "acked_missing": len(missing)}
        assert not missing, f"{address} lacks {len(missing)} acknowledged writes, e.g. {sorted(missing)[:3]}"
        assert max(ids.values()) == 1 and max(contents.values()) == 1, f"{address} holds a write twice"
        assert set(contents) <= load.sent
    print("\ncluster fault test:", json.dumps(report, indent=1))
    if os.environ.get("ENGRAM_CLUSTER_REPORT"):
        Path(os.environ["ENGRAM_CLUSTER_REPORT"]).write_text(json.dumps(report, indent=1))
    healthy, *_, after = load.windows
    assert healthy.report()["errors"] == 0 and after.report()["errors"] == 0, report["windows"]
    for window in load.windows:
        assert window.writes_ok > 0, f"no write was acknowledged while {window.name}"


async def test_every_grpc_service_answers_the_health_checks_the_chart_probes(cluster: Cluster) -> None:
    """Readiness probes ask the overall status (""), liveness probes the entry that stays SERVING while the process
    runs ("liveness")."""
    addresses = [*cluster.ingest, *cluster.search, cluster.services["consolidation"].args[-1],
                 cluster.services["sync"].args[-1]]  # fmt: skip
    for address in addresses:
        async with grpc.aio.insecure_channel(address) as chan:
            stub = health_pb2_grpc.HealthStub(chan)
            for service in ("", "liveness"):
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING, (address, service)


async def test_ingest_replicas_appending_to_one_memory_at_once_lose_and_reorder_no_version(cluster: Cluster) -> None:
    caller = Caller(namespace=NAMESPACE, agent_id="racer@ci", source="test")
    clients = [IngestClient(address) for address in cluster.ingest]
    search = SearchClient("ipv4:" + ",".join(cluster.search))
    try:
        saved = await clients[0].save(caller, MemoryInput(content="The build agent pool has 4 runners"))
        updates = 40
        seqs: list[int] = []

        async def update(i: int) -> int:
            draft = MemoryInput(content=f"The build agent pool has {i + 5} runners")
            # The version another replica took first is answered as a conflict, and a writer that keeps losing the
            # race is told "kept changing ... retry": both are retried, as a client would, until a deadline (a count
            # of attempts starved the last of 40 racers on a loaded machine).
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                try:
                    result = await clients[i % 2].update(caller, saved.memory.id, draft, ["content"])
                    seqs.append(result.seq)
                    return result.memory.version
                except Exception as e:
                    if not any(word in str(e).lower() for word in ("version", "retry")):
                        raise
                    await asyncio.sleep(random.uniform(0.005, 0.03))
            raise AssertionError("an update never got through")

        versions = await asyncio.gather(*(update(i) for i in range(updates)))
        last = max(r for r in versions)
        # Read once the search replica answering has indexed the last update (read-your-writes, as clients ask).
        history = await search.history(caller, saved.memory.id, min_seq=max(seqs))
    finally:
        for client in clients:
            await client.close()
        await search.close()
    assert sorted(versions) == list(range(2, updates + 2)), "two updates got the same version, or one was lost"
    assert last == updates + 1
    seen = sorted(v.version for v in history.versions)
    assert seen == list(range(1, updates + 2)), f"history has gaps or repeats: {seen}"


async def test_gateways_are_interchangeable_for_reads_cursors_and_event_streams(cluster: Cluster) -> None:
    a, b = cluster.gateways
    headers = {"Authorization": f"Bearer {cluster.key}"}
    tag = f"swap-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        saved = []
        for i in range(3):
            reply = await http.post(f"{a}/v1/memories", json={"content": f"Runbook step {i} for {tag}", "tags": [tag]})
            assert reply.status_code == 201, reply.text
            saved.append(reply.json())
        last = saved[-1]["seq"]
        # A page cursor from one gateway continues on the other.
        first = (await http.get(f"{a}/v1/memories", params={"tags": tag, "limit": 2, "min_seq": last})).json()
        rest = (await http.get(f"{b}/v1/memories", params={"tags": tag, "limit": 2,
                                                           "page_token": first["next_page_token"]})).json()  # fmt: skip
        listed = [m["id"] for m in first["memories"] + rest["memories"]]
        assert sorted(listed) == sorted(s["id"] for s in saved)
        # A write acknowledged by one gateway is read back through the other at once, with no min_seq passed:
        # every gateway follows the sequences the log acknowledges, whichever replica wrote them.
        for i in range(20):
            reply = await http.post(f"{a}/v1/memories", json={"content": f"Pager rota note {i} for {tag}"})
            assert reply.status_code == 201
            read = await http.get(f"{b}/v1/memories/{reply.json()['id']}")
            assert read.status_code == 200, f"write {i} not yet visible through the other gateway: {read.text}"
        # MCP: a session lives on the gateway it began on (docs/operations.md: route sessions stickily); a session
        # on the other gateway reads what the first one wrote.
        async with http_client(f"{a}/mcp", key=cluster.key, name="agent-on-a") as on_a:
            written = await call(on_a, "save_memory", content=f"The deploy freeze starts Friday ({tag})")
        async with http_client(f"{b}/mcp", key=cluster.key, name="agent-on-b") as on_b:
            fetched = await call(on_b, "get_memory", id=written["id"])
        assert fetched["content"].startswith("The deploy freeze starts Friday")
        # An event stream resumes on the other gateway from the Last-Event-ID the first one sent.
        first_id = await _first_event_id(http, a, tag)
        more = await http.post(f"{a}/v1/memories", json={"content": f"Runbook step 3 for {tag}", "tags": [tag]})
        assert more.status_code == 201
        events = await _events_after(http, b, first_id, until=more.json()["seq"])
        assert [e["seq"] for e in events][-1] == more.json()["seq"]
        assert all(e["seq"] > int(first_id) for e in events)


async def _first_event_id(http: httpx.AsyncClient, gateway: str, tag: str) -> str:
    parser = EventParser()
    async with http.stream("GET", f"{gateway}/events/stream", params={"events": "memory_saved"},
                           headers={"Last-Event-ID": "0"}) as reply:  # fmt: skip
        assert reply.status_code == 200, await reply.aread()
        async for chunk in reply.aiter_bytes():
            for event in parser.feed(chunk):
                if event.id and tag in json.dumps(event.json()):
                    return event.id
    raise AssertionError("no event for the saves")


async def _events_after(http: httpx.AsyncClient, gateway: str, last_id: str, *, until: int) -> list[dict[str, Any]]:
    parser = EventParser()
    seen: list[dict[str, Any]] = []
    async with http.stream("GET", f"{gateway}/events/stream", params={"events": "memory_saved"},
                           headers={"Last-Event-ID": last_id}) as reply:  # fmt: skip
        assert reply.status_code == 200
        async for chunk in reply.aiter_bytes():
            for event in parser.feed(chunk):
                if event.id:
                    seen.append(event.json())
                    if int(event.id) >= until:
                        return seen
    return seen


async def test_an_outside_subscriber_reads_only_its_namespaces_events(cluster: Cluster) -> None:
    errors: list[Exception] = []

    async def on_error(e: Exception) -> None:
        errors.append(e)

    nc = await nats.connect(cluster.nats.url.split(","), user=READER.user, password=READER.password,
                            error_cb=on_error)  # fmt: skip
    try:
        mine = await nc.subscribe(f"engram.events.{NAMESPACE}.>")
        await nc.subscribe("engram.events.team-b.>")  # refused by the server: a permissions violation
        await nc.flush()
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {cluster.key}"}, timeout=30) as http:
            reply = await http.post(f"{cluster.gateways[0]}/v1/memories", json={"content": "The NAS reboots at 3am"})
            assert reply.status_code == 201
        deadline = time.monotonic() + 10
        while json.loads((await mine.next_msg(timeout=deadline - time.monotonic())).data)["seq"] != reply.json()["seq"]:
            pass  # earlier events of the namespace (read counts flushed, the other tests' writes)
        # No JetStream API for it: through the stream it could read every namespace.
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await nc.request("$JS.API.STREAM.INFO.ENGRAM", b"", timeout=2)
        await asyncio.sleep(0.5)
        assert any("permissions violation" in str(e).lower() for e in errors), errors
    finally:
        await nc.close()
