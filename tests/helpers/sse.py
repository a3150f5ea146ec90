"""SSE clients for tests: a reader over an httpx streaming response, and a raw-socket client that stops reading."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import h11
import httpx

from engram.services.gateway.sse.routes import STREAM_PATH
from engram.services.gateway.sse.streams import EventParser, ServerSentEvent

DEFAULT_TIMEOUT = 20.0
SMALL_BUFFER = 4096  # bytes; the kernel doubles it


class EventSource:
    """Events parsed from a byte source, read on demand with a deadline per call."""

    def __init__(self) -> None:
        self.parser = EventParser()
        self._ready: deque[ServerSentEvent] = deque()

    async def _more(self) -> bytes:
        raise NotImplementedError

    async def take(self, count: int, *, timeout: float = DEFAULT_TIMEOUT) -> list[ServerSentEvent]:
        """The next ``count`` events."""
        async with asyncio.timeout(timeout):
            while len(self._ready) < count:
                self._ready.extend(self.parser.feed(await self._more()))
        return [self._ready.popleft() for _ in range(count)]

    async def until(
        self, last: Callable[[ServerSentEvent], bool], *, timeout: float = DEFAULT_TIMEOUT
    ) -> list[ServerSentEvent]:
        """The events up to and including the first one for which ``last`` is true."""
        events: list[ServerSentEvent] = []
        async with asyncio.timeout(timeout):
            while not events or not last(events[-1]):
                if not self._ready:
                    self._ready.extend(self.parser.feed(await self._more()))
                    continue
                events.append(self._ready.popleft())
        return events

    async def until_id(self, seq: int, *, timeout: float = DEFAULT_TIMEOUT) -> list[ServerSentEvent]:
        return await self.until(lambda e: e.id is not None and int(e.id) >= seq, timeout=timeout)

    async def heartbeat(self, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Returns once a comment line (a heartbeat) arrives after this call."""
        seen = self.parser.comments
        async with asyncio.timeout(timeout):
            while self.parser.comments == seen:
                self._ready.extend(self.parser.feed(await self._more()))


class StreamReader(EventSource):
    """Reads an open httpx streaming response."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__()
        self.response = response
        self._chunks = response.aiter_bytes()

    async def _more(self) -> bytes:
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            raise EOFError("the server ended the stream") from None


@contextlib.asynccontextmanager
async def event_stream(
    client: httpx.AsyncClient, *, headers: dict[str, str] | None = None, **params: Any
) -> AsyncIterator[StreamReader]:
    """GET /events/stream with the given filters; fails unless it answers 200."""
    query = {k: v for k, v in params.items() if v is not None}
    async with client.stream("GET", STREAM_PATH, params=query, headers=headers) as response:
        if response.status_code != 200:
            raise AssertionError(f"{response.status_code}: {(await response.aread()).decode()}")
        yield StreamReader(response)


class StalledClient(EventSource):
    """An SSE client on a raw socket with a small receive buffer: after the response headers it reads nothing
    until told to, like a client that stopped reading, so the server's writes to it really block."""

    def __init__(self, sock: socket.socket, connection: h11.Connection) -> None:
        super().__init__()
        self._sock = sock
        self._connection = connection
        self._loop = asyncio.get_running_loop()
        self.status = 0

    @classmethod
    async def open(cls, base_url: str, headers: dict[str, str] | None = None, **params: Any) -> StalledClient:
        url = urlsplit(base_url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)  # before connect: sets the TCP window
        sock.setblocking(False)
        client = cls(sock, h11.Connection(h11.CLIENT))
        await client._loop.sock_connect(sock, (url.hostname, url.port))
        query = urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)
        target = STREAM_PATH + (f"?{query}" if query else "")
        request = h11.Request(method="GET", target=target, headers=[("Host", url.netloc), *(headers or {}).items()])
        data = (client._connection.send(request) or b"") + (client._connection.send(h11.EndOfMessage()) or b"")
        await client._loop.sock_sendall(sock, data)
        client.status = await client._response_status()
        return client

    async def _response_status(self) -> int:
        async with asyncio.timeout(DEFAULT_TIMEOUT):
            while True:
                event = self._connection.next_event()
                if event is h11.NEED_DATA:
                    self._connection.receive_data(await self._loop.sock_recv(self._sock, SMALL_BUFFER))
                elif isinstance(event, h11.Response):
                    return int(event.status_code)

    async def _more(self) -> bytes:
        while True:
            event = self._connection.next_event()
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if event is h11.NEED_DATA:
                self._connection.receive_data(await self._loop.sock_recv(self._sock, 65536))
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                raise EOFError("the server ended the stream")

    def close(self) -> None:
        self._sock.close()
