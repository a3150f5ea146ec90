"""Checks on every request before any route reads it: body size, media type and JSON nesting.

A body is never held whole unless it is under its route's limit: a declared Content-Length over the limit is
refused before a byte is read, and a chunked body is counted as it arrives and refused once it passes the limit.
REST callers get a problem document; MCP clients get a JSON-RPC error, which the MCP SDK client shows as text.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.errors import EngramError, InvalidArgument, PayloadTooLarge, UnsupportedMediaType
from engram.services.gateway.rest.problems import error_response

JSON_MEDIA_TYPE = "application/json"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# A save body nests metadata (at most MAX_METADATA_DEPTH = 20 levels) one level down; nothing valid comes near.
MAX_JSON_DEPTH = 32
JSONRPC_INVALID_REQUEST = -32600
MCP_DRAIN_BYTES = 16 * 1024 * 1024  # read and dropped after refusing an MCP message, so its client sees why
# After an import passes its limit, at most as much again is read and dropped, for at most this long, so its client
# gets the whole answer (what was stored, where to resume); a bigger or slower rest ends the connection.
IMPORT_DRAIN_SECONDS = 10.0
REQUEST_SETTING = "ENGRAM_MAX_REQUEST_BYTES"
IMPORT_SETTING = "ENGRAM_MAX_IMPORT_BYTES"


@dataclass(frozen=True, slots=True)
class BodyPolicy:
    """What is checked before a route reads a request: the limits, which routes read JSON, which path streams
    (import), where MCP is."""

    max_request_bytes: int
    max_import_bytes: int
    reads_json: Callable[[str, str], bool]  # (method, path) -> the route's body is one JSON document
    import_path: str
    mcp_path: str


class BodyLimitsMiddleware:
    """Applies an BodyPolicy to every HTTP request (every route, /mcp and import included)."""

    def __init__(self, app: ASGIApp, policy: BodyPolicy) -> None:
        self._app = app
        self._policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            await self._check(scope, receive, send)
        except EngramError as e:
            response = self._refuse(scope, e)
            # An MCP client reads the answer only after it has sent its whole request, so a body that is merely
            # too large is read to its end (and dropped) to let the client see the message; a huge one still ends
            # the connection, which is what stops it being sent.
            mcp = scope["path"] == self._policy.mcp_path
            if isinstance(e, PayloadTooLarge) and mcp and not await _drained(receive, MCP_DRAIN_BYTES):
                response.headers["Connection"] = "close"
            await response(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive, send: Send) -> None:
        policy, path, headers = self._policy, scope["path"], Headers(scope=scope)
        streamed = path == policy.import_path
        limit, setting = (
            (policy.max_import_bytes, IMPORT_SETTING) if streamed else (policy.max_request_bytes, REQUEST_SETTING)
        )
        declared = _content_length(headers)
        if declared is not None and declared > limit:
            raise _too_large(declared, limit, setting, streamed)
        mcp_post = scope["method"] == "POST" and path == policy.mcp_path
        reads_json = mcp_post or policy.reads_json(scope["method"], path)
        # A request without a body (optional bodies, e.g. accepting a handoff) names no media type, rightly.
        has_body = bool(declared) or "transfer-encoding" in headers
        if reads_json and (has_body or mcp_post):
            _require_json(headers.get("content-type", ""))
        if streamed:
            await self._app(scope, _counted(receive, limit, setting), send)
            return
        if scope["method"] not in BODY_METHODS:
            await self._app(scope, receive, send)
            return
        body, replay = await _buffered(receive, limit, setting)
        if reads_json and path != policy.mcp_path:  # the MCP SDK parses with pydantic, which bounds depth itself
            _require_shallow(body)
        await self._app(scope, replay, send)

    def _refuse(self, scope: Scope, error: EngramError) -> Response:
        if scope["path"] == self._policy.mcp_path:
            return _jsonrpc_error(error)
        return error_response(error)


def _content_length(headers: Headers) -> int | None:
    try:
        return int(headers["content-length"])
    except (KeyError, ValueError):
        return None


def _too_large(size: int | None, limit: int, setting: str, streamed: bool) -> PayloadTooLarge:
    if streamed:
        hint = "Send the file in several requests (engram import does); each line is one memory."
        return PayloadTooLarge(size, limit, "The import body", setting=setting, hint=hint)
    return PayloadTooLarge(size, limit, setting=setting)


def _require_json(content_type: str) -> None:
    media = content_type.split(";", 1)[0].strip().lower()
    if media != JSON_MEDIA_TYPE and not (media.startswith("application/") and media.endswith("+json")):
        raise UnsupportedMediaType(content_type, JSON_MEDIA_TYPE)


async def _buffered(receive: Receive, limit: int, setting: str) -> tuple[bytes, Receive]:
    """Reads the whole body, refusing it as soon as it passes limit; returns it and a receive that replays it."""
    chunks: list[bytes] = []
    size = 0
    trailing: Message | None = None
    while True:
        message = await receive()
        if message["type"] != "http.request":
            trailing = message  # e.g. http.disconnect: handed on so the app sees it
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(None, limit, setting, streamed=False)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    pending: deque[Message] = deque([{"type": "http.request", "body": body, "more_body": False}])
    if trailing is not None:
        pending.append(trailing)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return body, replay


async def _drained(receive: Receive, cap: int) -> bool:
    """Reads the rest of a refused body, dropping it; False when more than cap bytes would have to be read."""
    read = 0
    while read <= cap:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return True
        read += len(message.get("body", b""))
    return False


def _counted(receive: Receive, limit: int, setting: str) -> Receive:
    """A receive that raises PayloadTooLarge once the body passes limit (the route decides what that stops).

    The rest of the body is read and dropped first (up to limit bytes more, no memory kept): an HTTP client reads the
    answer only after sending its whole body, and a connection closed with bytes still unread is reset, which cut
    the import's 413 (a few MB: every line stored) short with "peer closed connection" on a chunked 40 MiB import."""
    seen = 0

    async def counted() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                if message.get("more_body", False):
                    with anyio.move_on_after(IMPORT_DRAIN_SECONDS):
                        await _drained(receive, limit)
                raise _too_large(None, limit, setting, streamed=True)
        return message

    return counted


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*+"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, counted outside strings, without parsing it."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_JSON_STRING.sub(b"", body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _require_shallow(body: bytes) -> None:
    depth = json_depth(body)
    if depth > MAX_JSON_DEPTH:
        raise InvalidArgument(
            "body", f"is JSON nested {depth} levels deep; at most {MAX_JSON_DEPTH} are allowed. Flatten it."
        )


def _jsonrpc_error(error: EngramError) -> Response:
    """A JSON-RPC error with the HTTP status of the error: the MCP client reads and shows its message."""
    http = error_response(error)
    headers = {name: value for name, value in http.headers.items() if name == "retry-after"}
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": JSONRPC_INVALID_REQUEST, "message": str(error)}}
    return Response(json.dumps(body), status_code=http.status_code, headers=headers, media_type=JSON_MEDIA_TYPE)
