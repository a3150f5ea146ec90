"""Live events over SSE through the public API: delivery latency (save ack -> event received) and the gateway memory
held per client that stops reading."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import h11
import httpx

from bench.client import AGENT_ID, EngramClient, connect
from bench.metrics import LatencySummary, mean
from bench.node import Node
from bench.progress import Phases, Progress
from engram.config import DEFAULT_MAX_CONTENT_BYTES, DEFAULT_MAX_METADATA_BYTES, Settings
from engram.services.gateway.sse.routes import STREAM_PATH
from engram.services.gateway.sse.streams import GAP_EVENT, EventParser

DEFAULT_EVENT_SAVES = 300
DEFAULT_SLOW_CLIENTS = 20
# Events sent to the slow clients: more than their sockets buffer (a few MB each on Linux) plus their queues hold,
# so every queue is full when the memory is measured.
DEFAULT_SLOW_EVENTS = 4000
EVENT_CONTENT_BYTES = 1000  # a typical memory: a paragraph
WARMUP_SAVES = 10
DELIVERY_TIMEOUT = 30.0
BATCHES = 2
IDLE_SECONDS = 2.0  # the gateway's RSS is taken once it used at most IDLE_TICKS of CPU over this long
IDLE_TICKS = 2
SETTLE_TIMEOUT = 120.0
READY = "ready at "  # what `engram run gateway` prints once it listens
READ_TIMEOUT = 60.0
FRAME_FIELDS_BYTES = 2048  # an event's fields besides the memory's content and metadata (ids, times, topics...)


@dataclass(frozen=True, slots=True)
class EventsOptions:
    """Where the events node lives, how it runs, and how much to measure."""

    home_root: Path
    settings: dict[str, str]
    chunk: int
    saves: int = DEFAULT_EVENT_SAVES
    slow_clients: int = DEFAULT_SLOW_CLIENTS
    slow_events: int = DEFAULT_SLOW_EVENTS


async def run_events(options: EventsOptions, phases: Phases, out: dict[str, Any]) -> None:
    """One fresh node: time saves until their event reaches an SSE client, then measure slow clients' memory."""
    with phases("events/start"):
        node = Node.start(options.home_root / "events", options.settings)
    try:
        with phases("events/latency"):
            out["latency"] = await _latency(node, options.saves)
        with phases("events/slow_clients"):
            out["slow_clients"] = await _slow_clients(node, options)
    finally:
        node.stop_into(out)


async def _latency(node: Node, saves: int) -> dict[str, Any]:
    """Sequential REST saves; each one's event is awaited on an SSE stream before the next save is sent."""
    received: dict[str, float] = {}
    arrived = asyncio.Condition()
    headers = {"X-Engram-Agent-ID": AGENT_ID}
    after_ack: list[float] = []
    signed: list[float] = []
    after_send: list[float] = []
    async with (
        httpx.AsyncClient(base_url=node.http_url, headers=headers, timeout=httpx.Timeout(60, read=None)) as http,
        _listening(http, received, arrived),
    ):
        with Progress("SSE delivery", WARMUP_SAVES + saves, unit="saves") as bar:
            for i in range(WARMUP_SAVES + saves):
                sent = time.perf_counter()
                response = await http.post("/v1/memories", json={"content": f"SSE delivery probe {i}"})
                acked = time.perf_counter()
                response.raise_for_status()
                memory_id = response.json()["id"]
                async with arrived, asyncio.timeout(DELIVERY_TIMEOUT):
                    await arrived.wait_for(functools.partial(received.__contains__, memory_id))
                if i >= WARMUP_SAVES:
                    delivered = received[memory_id]
                    signed.append(delivered - acked)
                    after_ack.append(max(0.0, delivered - acked))  # the event may come before the answer does
                    after_send.append(delivered - sent)
                bar.advance()
    return {
        "saves": saves,
        "ack_to_event": dataclasses.asdict(LatencySummary.of(after_ack)),
        "ack_to_event_signed": dataclasses.asdict(LatencySummary.of(signed)),
        "send_to_event": dataclasses.asdict(LatencySummary.of(after_send)),
        "events_before_ack": sum(1 for d in signed if d < 0),
    }


@contextlib.asynccontextmanager
async def _listening(
    http: httpx.AsyncClient, received: dict[str, float], arrived: asyncio.Condition
) -> AsyncIterator[None]:
    """An SSE client in the background noting when each memory_saved event arrives."""
    params = {"events": "memory_saved", "agent": AGENT_ID}
    async with http.stream("GET", STREAM_PATH, params=params) as response:
        response.raise_for_status()

        async def read() -> None:
            parser = EventParser()
            async for chunk in response.aiter_bytes():
                events = parser.feed(chunk)
                now = time.perf_counter()
                async with arrived:
                    for event in events:
                        received[event.json()["memory_id"]] = now
                    arrived.notify_all()

        reader = asyncio.create_task(read())
        try:
            yield
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


async def _slow_clients(node: Node, options: EventsOptions) -> dict[str, Any]:
    """Memory held per SSE client that reads nothing, in a gateway process of its own (in front of the node's
    services and log) that serves only those clients, so its RSS counts them and nothing else: while live events
    overflow their queues, and while a replay of the whole log waits for them."""
    settings = Settings.from_env(options.settings)
    async with connect(node.http_url, node.mcp_url) as writer:  # writes go through the node's own gateway
        live = await _held_per_client(node, options, writer=writer)
    replay = await _held_per_client(node, options, replay_until=live["last_seq"])
    worst_frame = DEFAULT_MAX_CONTENT_BYTES + DEFAULT_MAX_METADATA_BYTES + FRAME_FIELDS_BYTES
    return {
        "clients": options.slow_clients,
        "queue_events": settings.sse_queue_events,
        "live": live,
        "replay": replay,
        "bound_bytes_typical": round(settings.sse_queue_events * live["mean_frame_bytes"]),
        "bound_bytes_worst": settings.sse_queue_events * worst_frame,
    }


async def _held_per_client(
    node: Node, options: EventsOptions, *, writer: EngramClient | None = None, replay_until: int | None = None
) -> dict[str, Any]:
    """The gateway's RSS growth per client while clients that read nothing are sent more events than their sockets
    and queues hold: new events the writer writes meanwhile, or (``replay_until``) the log from its start to that
    seq. Two batches of ``slow_clients`` clients, one after the other: the first takes up the memory the process
    had freed after starting (which an RSS does not show), the second's growth is the figure; the first batch is
    still stalled meanwhile (and, live, still sent events), so any growth of its own would show too. Then each
    client reads what it was sent: live ones until their gap notice, replaying ones to the end (a replay goes at
    the client's pace and drops nothing)."""
    label = "live" if replay_until is None else "replay"
    gateway = await _standalone_gateway(node, options.home_root / f"events-gateway-{label}")
    clients: list[SlowClient] = []
    rss: list[int] = []
    last_seq = replay_until or 0
    try:
        SlowClient.open(gateway.http_url).close()  # the first request's one-time costs are not the clients'
        rss.append(gateway.rss()["node"])
        for _ in range(BATCHES):
            clients += [
                await asyncio.to_thread(SlowClient.open, gateway.http_url, replay=replay_until is not None)
                for _ in range(options.slow_clients)
            ]
            if writer is not None:
                last_seq = await _write_events(writer, options)
            rss.append(await _settled_rss(gateway))
        gaps = [await asyncio.to_thread(c.read_until, last_seq) for c in clients]
    finally:
        for c in clients:
            c.close()
        gateway.stop()
    return {
        "last_seq": last_seq,
        "clients": len(clients),
        "queues_overflowed": sum(1 for g in gaps if g is not None),
        "dropped_per_client": [g["dropped"] for g in gaps if g is not None],
        "clients_complete": sum(1 for c in clients if c.reached),
        "events_per_client": round(mean(c.frames for c in clients)),
        "gateway_rss_bytes": rss,
        "bytes_per_client": round((rss[-1] - rss[-2]) / options.slow_clients),
        "mean_frame_bytes": round(mean(c.mean_frame_bytes for c in clients)),
    }


async def _settled_rss(gateway: Node) -> int:
    """The gateway's RSS once it has gone idle (no CPU used for a while): all its clients are stalled and their
    queues hold what they will hold. (RSS alone can look settled while the kernel still takes a replay's frames.)"""
    async with asyncio.timeout(SETTLE_TIMEOUT):
        busy = _cpu_ticks(gateway.process.pid)
        while True:
            await asyncio.sleep(IDLE_SECONDS)
            busy, previous = _cpu_ticks(gateway.process.pid), busy
            if busy - previous <= IDLE_TICKS:
                return gateway.rss()["node"]


def _cpu_ticks(pid: int) -> int:
    """User plus system CPU time of a process, in clock ticks (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def _standalone_gateway(node: Node, home: Path) -> Node:
    """`engram run gateway` in front of the node's services and NATS (the cluster topology), on a free port."""
    info = json.loads((node.home / "node.json").read_text())
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update({**node.settings, "ENGRAM_NATS_URL": info["nats_url"]})
    address = info["grpc_address"]
    command = [sys.executable, "-m", "engram.services.node", "run", "gateway", "--home", str(home), "--port", "0",
               "--ingest-addr", address, "--search-addr", address]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    gateway = Node(home=home, process=process, settings=env)
    async with asyncio.timeout(DELIVERY_TIMEOUT):
        while READY not in (line := await asyncio.to_thread(_line, process)):
            if not line:
                gateway.stop()
                raise RuntimeError(f"the standalone gateway exited with {process.poll()}")
    gateway.http_url = line.split(READY, 1)[1].split()[0]
    return gateway


def _line(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().decode(errors="replace")


async def _write_events(client: EngramClient, options: EventsOptions) -> int:
    """Imports ``slow_events`` memories (through the node's gateway), waits until the index has them; returns the
    last one's seq."""
    filler = ("memory " * (EVENT_CONTENT_BYTES // 7 + 1))[:EVENT_CONTENT_BYTES]
    records = [{"content": f"SSE slow-client event {i}: {filler}"} for i in range(options.slow_events)]
    with Progress("events for the slow clients", len(records), unit="memories") as bar:
        result = await client.import_records(records, chunk=options.chunk, on_chunk=bar.advance)
    if result.rejected:
        raise RuntimeError(f"{len(result.rejected)} event lines rejected, e.g. {result.rejected[:2]}")
    await client.wait_indexed(result.last_seq)
    return result.last_seq


class SlowClient:
    """An SSE client on a plain socket that sends its request and then reads nothing, until read_until()."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._http = h11.Connection(h11.CLIENT)
        self._parser = EventParser()
        self.frames = 0  # event frames read
        self._frame_bytes = 0
        self.reached = False  # read_until() got to its seq

    @classmethod
    def open(cls, http_url: str, *, replay: bool = False) -> SlowClient:
        """Opens a stream of memory_saved events: from now on, or (``replay``) from the start of the log."""
        url = urlsplit(http_url)
        client = cls(socket.create_connection((url.hostname, url.port), timeout=DELIVERY_TIMEOUT))
        query = {"events": "memory_saved", **({"last_event_id": 0} if replay else {})}
        request = h11.Request(method="GET", target=f"{STREAM_PATH}?{urlencode(query)}", headers=[("Host", url.netloc)])
        client._sock.sendall((client._http.send(request) or b"") + (client._http.send(h11.EndOfMessage()) or b""))
        while not isinstance(event := client._next(), h11.Response):
            if isinstance(event, h11.Data):
                raise RuntimeError("the stream sent data before its headers")
        if event.status_code != 200:
            raise RuntimeError(f"GET {STREAM_PATH} answered {event.status_code}")
        return client

    @property
    def mean_frame_bytes(self) -> float:
        return self._frame_bytes / self.frames if self.frames else 0.0

    def read_until(self, seq: int, timeout: float = READ_TIMEOUT) -> dict[str, Any] | None:
        """Reads what the server sent until its gap notice (returned) or the event ``seq``; sets ``reached``."""
        deadline = time.monotonic() + timeout
        with contextlib.suppress(TimeoutError):
            return self._read(seq, deadline)
        return None

    def _read(self, seq: int, deadline: float) -> dict[str, Any] | None:
        while time.monotonic() < deadline and isinstance(event := self._next(), h11.Data):
            for sse in self._parser.feed(bytes(event.data)):
                if sse.event == GAP_EVENT:
                    gap: dict[str, Any] = sse.json()
                    return gap
                self.frames += 1
                self._frame_bytes += len(f"id: {sse.id}\nevent: {sse.event}\ndata: {sse.data}\n\n".encode())
                if int(sse.id or 0) >= seq:
                    self.reached = True
                    return None
        return None

    def _next(self) -> Any:
        while (event := self._http.next_event()) is h11.NEED_DATA:
            self._http.receive_data(self._sock.recv(65536))
        return event

    def close(self) -> None:
        self._sock.close()
