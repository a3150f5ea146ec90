"""`engram mcp` when the data dir's node runs: stdio relayed to the node's streamable HTTP /mcp with the standard
library alone, so a client's session starts without loading the MCP SDK, pydantic or the gateway.

Each newline-delimited JSON-RPC message read from stdin is POSTed to /mcp with the session's id and protocol
version, the stdio settings a spawned server acts with (ENGRAM_API_KEY as the bearer key, the tool profile as
X-Engram-Tools) and its identity fallbacks as the X-Engram-Default-* headers, which the gateway honours where a
stdio server uses them: after what the request and its key state (services/gateway/identity.py). Each answer (a
JSON body, or each event of an SSE answer) is written to stdout as one line; so is every message of the session's
GET stream (resource updates). The session is deleted when stdin closes.

The relay holds the node's attach socket open while it runs, so a node started for stdio clients stays up while it
has one. When no node runs, or the node refuses the session before it starts (a bad key), `engram mcp` serves
in-process (services/node/stdio.py), replaying what the relay read.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from engram import claudeteams
from engram.names import is_valid_namespace
from engram.plainhttp import http_client
from engram.process.nodeinfo import SPAWN_LOCK, NodeInfo, attach_socket_path, read_node_info

if TYPE_CHECKING:
    import http.client

_http = http_client(https=False)  # the node's loopback address: no ssl to load

ATTACH_TIMEOUT = 5.0  # connecting to a node that answers takes milliseconds
REFUSED = (401, 403)  # the node refuses the session's credentials: the in-process server explains them per tool call
JSON_RPC_INTERNAL = -32603
JSON_RPC_PARSE = -32700
READ_CHUNK = 65536
FINISH_TIMEOUT = 30.0  # how long answers under way may take once stdin has closed
PROTOCOL_META = "io.modelcontextprotocol/protocolVersion"
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}  # mirrored as Mcp-Name

Write = Callable[[bytes], None]


def relay(home: Path, headers: Mapping[str, str], *, team: Callable[[], str]) -> bytes | None:
    """Relays stdin/stdout to the running node of ``home`` until stdin closes, and returns None; returns what it
    read of stdin without relaying it (b"" when nothing) when no node runs or the node refuses the session, for the
    in-process server to serve. ``team`` is the session's fallback team, asked once, at its first request after
    initialize (a team lead starts its MCP servers before it creates its team)."""
    attached = _attach(home)
    if attached is None:
        return b""
    info, holder = attached
    with holder:
        if urlsplit(info.http_url).scheme != "http":
            return b""  # a node behind TLS: the in-process server's stack speaks it
        session = Session(info.mcp_url, dict(headers), team=team, write=_stdout_writer())
        return session.run(Lines(sys.stdin.buffer.fileno()))


def relay_headers(*, api_key: str | None, tools: str, agent: str | None, device: str | None) -> dict[str, str]:
    """The headers every request of the session carries: the stdio settings a spawned server acts with."""
    headers = {"X-Engram-Tools": tools, "User-Agent": "engram-mcp-relay"}
    if api_key and api_key.strip():
        headers["Authorization"] = f"Bearer {api_key.strip()}"
    if agent and agent.strip():
        headers["X-Engram-Default-Agent"] = agent.strip()
    if device and device.strip():
        headers["X-Engram-Default-Device"] = device.strip()
    return {name: _sendable(value) for name, value in headers.items()}


def _sendable(value: str) -> str:
    """``value`` as a header can carry it: a setting with a line break or a non-ASCII character (never valid in a
    key, an agent id, a device or a team) goes escaped, for the node to refuse naming the setting."""
    return value if value.isascii() and value.isprintable() else value.encode("unicode_escape").decode("ascii")


def local_team(configured: str | None, environ: Mapping[str, str]) -> str:
    """ENGRAM_TEAM as given (the node validates it), else the Claude Code team this process runs in, or ""."""
    if configured and configured.strip():
        return configured.strip()
    if (named := claudeteams.team_variable(environ)) is not None:
        variable, name = named
        if is_valid_namespace(name):
            return name
        print(f"engram mcp: ignoring {variable}={name!r}: not a usable team name", file=sys.stderr)
    return claudeteams.newest_claude_team(claudeteams.claude_dir(environ), is_valid_namespace)


class Session:
    """One MCP session relayed to ``url``: requests each answered on a thread of their own (a listen stream stays
    open), notifications and responses sent in order."""

    def __init__(self, url: str, headers: dict[str, str], *, team: Callable[[], str], write: Write) -> None:
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._path = parts.path or "/mcp"
        self._headers = headers
        self._team: Callable[[], str] | None = team
        self._write = write
        self._id: str | None = None
        self._protocol: str | None = None
        self._in_flight: list[threading.Event] = []
        self._accepted = False  # the node has answered a request of this session without refusing its credentials

    def run(self, lines: Lines) -> bytes | None:
        """Relays ``lines`` until they end; what was read but not relayed when the node refused to start the session."""
        for line in lines:
            message = _parsed(line)
            if message is None:
                self._write(_error(None, JSON_RPC_PARSE, "Parse error: each line must be one JSON-RPC message"))
                continue
            request = isinstance(message, dict) and "id" in message and "method" in message
            if request and not self._accepted:  # initialize, or a 2026-07-28 client's first request (server/discover)
                if not self._first(line, message):
                    return line + b"\n" + lines.unread()
                continue
            if request:
                self._ask_team()
                self._answering(line, message)
            else:
                self._post(line, message)
        self._finish()
        return None

    def _answering(self, line: bytes, message: dict[str, Any]) -> None:
        """POSTs a request on a thread of its own; it counts as in flight until its answer (or its stream) begins."""
        answered = threading.Event()
        self._in_flight.append(answered)
        threading.Thread(target=self._post, args=(line, message), kwargs={"answered": answered}, daemon=True).start()

    def _finish(self) -> None:
        """At the end of stdin: the answers under way are written (a client piping a script in reads them), then
        the session is deleted; streams still open end with the process."""
        deadline = time.monotonic() + FINISH_TIMEOUT
        for answered in self._in_flight:
            answered.wait(max(0.0, deadline - time.monotonic()))
        self._close()

    def _first(self, line: bytes, message: dict[str, Any]) -> bool:
        """Sends the session's first request, waiting for its answer; False when the node refuses the session's
        credentials or is gone (the in-process server then takes the session over, from this request on)."""
        try:
            status = self._post(line, message, refusable=True)
        except OSError:
            return False  # the node went away between attaching and now
        if status in REFUSED:
            return False
        self._accepted = True
        if self._id is not None:
            threading.Thread(target=self._listen, daemon=True).start()
        return True

    def _ask_team(self) -> None:
        if self._team is None:
            return
        team, self._team = self._team, None
        if name := team():
            self._headers["X-Engram-Default-Team"] = _sendable(name)

    def _request_headers(self, message: Any = None) -> dict[str, str]:
        headers = {**self._headers, "Accept": "application/json, text/event-stream"}
        if self._id is not None:
            headers["Mcp-Session-Id"] = self._id
        # A 2026-07-28 request names its version itself (no initialize, no session) and is routed by its method and
        # name headers, which must equal its body's; an older one has its session's version.
        if (stated := _stated_protocol(message)) is not None:
            headers.update(_routing_headers(message, stated))
        elif self._protocol is not None:
            headers["MCP-Protocol-Version"] = self._protocol
        return headers

    def _post(
        self, line: bytes, message: Any, *, refusable: bool = False, answered: threading.Event | None = None
    ) -> int:
        """POSTs one message and relays its answer; the HTTP status (0 when the node could not be reached)."""
        try:
            return self._post_once(line, message, refusable=refusable, answered=answered)
        finally:
            if answered is not None:
                answered.set()

    def _post_once(self, line: bytes, message: Any, *, refusable: bool, answered: threading.Event | None) -> int:
        request_id = message.get("id") if isinstance(message, dict) else None
        connection = _http.HTTPConnection(self._host, self._port)
        try:
            headers = {**self._request_headers(message), "Content-Type": "application/json"}
            connection.request("POST", self._path, body=line, headers=headers)
            response = connection.getresponse()
            if self._id is None and (session := response.getheader("mcp-session-id")):
                self._id = session
            if refusable and response.status in REFUSED:
                response.read()
                return response.status
            self._relay_answer(response, request_id, initialize=_method(message) == "initialize", answered=answered)
            return response.status
        except (OSError, _http.HTTPException, ValueError) as e:
            if refusable and isinstance(e, OSError):
                raise
            if request_id is not None:
                problem = f"The Engram node at {self._host}:{self._port} did not answer ({e}); is it still running?"
                self._write(_error(request_id, JSON_RPC_INTERNAL, problem))
            return 0
        finally:
            connection.close()

    def _relay_answer(
        self, response: http.client.HTTPResponse, request_id: Any, *, initialize: bool, answered: threading.Event | None
    ) -> None:
        kind = response.getheader("content-type", "")
        if "text/event-stream" in kind:
            for data in _events(response):
                self._write(data)
                if answered is not None:
                    answered.set()  # a stream has begun: it may stay open as long as the session
            return
        body = response.read()
        if response.status == 202 or not body.strip():
            return
        answer = _parsed(body)
        if initialize and isinstance(answer, dict) and isinstance(answer.get("result"), dict):
            version = answer["result"].get("protocolVersion")
            self._protocol = version if isinstance(version, str) else None
        if isinstance(answer, dict) and "error" in answer and answer.get("id") is None and request_id is not None:
            self._write(json.dumps({**answer, "id": request_id}).encode())  # refused before the MCP layer read it
        elif _is_answer(answer):
            self._write(body)
        elif request_id is not None:  # a plain HTTP error: said as the request's JSON-RPC error
            text = body.decode(errors="replace")[:500].strip()
            self._write(_error(request_id, JSON_RPC_INTERNAL, f"HTTP {response.status}: {text}"))

    def _listen(self) -> None:
        """Relays the session's GET stream (server notifications) while the node keeps it open."""
        connection = _http.HTTPConnection(self._host, self._port)
        try:
            headers = {**self._request_headers(), "Accept": "text/event-stream"}
            connection.request("GET", self._path, headers=headers)
            response = connection.getresponse()
            if response.status == 200 and "text/event-stream" in response.getheader("content-type", ""):
                for data in _events(response):
                    self._write(data)
        except (OSError, _http.HTTPException):
            pass  # the node went away or ended the stream: requests say so
        finally:
            connection.close()

    def _close(self) -> None:
        if self._id is None:
            return
        connection = _http.HTTPConnection(self._host, self._port, timeout=ATTACH_TIMEOUT)
        with contextlib.suppress(OSError, _http.HTTPException):
            connection.request("DELETE", self._path, headers=self._request_headers())
            connection.getresponse().read()
        connection.close()


def _attach(home: Path) -> tuple[NodeInfo, socket.socket] | None:
    """The running node of ``home`` and the attach socket that counts this process as its client; None when no node
    runs (or it is stopping). The spawn lock orders this after any start of the node under way."""
    path = attach_socket_path(home)
    if path is None or not (home / SPAWN_LOCK).parent.is_dir():
        return None
    with open(home / SPAWN_LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        info = read_node_info(home)
        if info is None:
            return None
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            holder.settimeout(ATTACH_TIMEOUT)
            holder.connect(str(path))
            holder.sendall(f"engram mcp relay (pid {os.getpid()})\n".encode())
            if not holder.recv(64).endswith(b"\n"):
                raise ConnectionError("the node is stopping")
            holder.settimeout(None)
        except OSError:
            holder.close()
            return None
        return info, holder


class Lines:
    """The lines of ``fd``, read without buffering past what arrived, so that what was read and not yet taken can be
    handed on (``unread``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = b""
        self._complete: list[bytes] = []

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        while not self._complete:
            chunk = os.read(self._fd, READ_CHUNK)
            if not chunk:
                if self._pending.strip():
                    line, self._pending = self._pending, b""
                    return line
                raise StopIteration
            *complete, self._pending = (self._pending + chunk).split(b"\n")
            self._complete = [line for line in complete if line.strip()]
        return self._complete.pop(0)

    def unread(self) -> bytes:
        """What was read from ``fd`` and not yet taken, as it came."""
        return b"".join(line + b"\n" for line in self._complete) + self._pending


def _events(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The data of each server-sent event of ``response`` (events without data, such as priming ones, skipped)."""
    data: list[bytes] = []
    while line := response.readline():
        line = line.rstrip(b"\r\n")
        if not line:
            if data and (joined := b"\n".join(data)).strip():
                yield joined
            data = []
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
    if data and (joined := b"\n".join(data)).strip():
        yield joined


def _stdout_writer() -> Write:
    lock = threading.Lock()
    out: IO[bytes] = sys.stdout.buffer

    def write(message: bytes) -> None:
        if b"\n" in message or b"\r" in message:  # one message, one line, whatever the node's formatting
            message = json.dumps(json.loads(message), separators=(",", ":")).encode()
        with lock:
            out.write(message + b"\n")
            out.flush()

    return write


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _method(message: Any) -> str | None:
    return message.get("method") if isinstance(message, dict) else None


def _stated_protocol(message: Any) -> str | None:
    """The protocol version a request states in its ``_meta`` (2026-07-28 and later), or None."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _routing_headers(message: dict[str, Any], protocol: str) -> dict[str, str]:
    """The headers a 2026-07-28 request carries over HTTP: its version, method and, for a tool, prompt or resource,
    its name (mcp.shared.inbound: the server refuses a request whose headers and body disagree)."""
    method = message.get("method")
    headers = {"MCP-Protocol-Version": protocol}
    if isinstance(method, str):
        headers["Mcp-Method"] = method
        params = message.get("params")
        name = params.get(NAME_PARAMS[method]) if method in NAME_PARAMS and isinstance(params, dict) else None
        if isinstance(name, str):
            headers["Mcp-Name"] = _header_value(name)
    return headers


def _header_value(value: str) -> str:
    """``value`` as an HTTP header carries it: verbatim when plain printable ASCII, else base64 in the sentinel the
    MCP SDK decodes (mcp.shared.inbound.encode_header_value)."""
    if value.isascii() and value.isprintable() and value == value.strip() and not value.startswith("=?base64?"):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def _is_answer(answer: Any) -> bool:
    """True for a JSON-RPC message (or a batch of them) the client can take as it is."""
    if isinstance(answer, list):
        return all(_is_answer(a) for a in answer)
    return isinstance(answer, dict) and answer.get("jsonrpc") == "2.0"


def _error(request_id: Any, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}).encode()
