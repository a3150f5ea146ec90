"""Plain http:// without what http.client costs: one HTTP/1.1 request on a raw socket for the `engram` commands
(http.client imports the email parser, ~20 ms of a command's start), and http.client loaded without ssl for the rest
(it imports ssl at once for its HTTPSConnection)."""

from __future__ import annotations

import _socket  # the socket module's C part: the socket module's enums cost ~4 ms to import
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

_METHODS_WITH_BODY = ("PATCH", "POST", "PUT")
_MAX_LINE = 65536  # http.client's limit on a status or header line


def request(
    method: str, host: str, port: int | None, target: str, *, headers: dict[str, str], body: bytes | None,
    timeout: float,
) -> tuple[int, str, bytes]:  # fmt: skip
    """One HTTP/1.1 request to http://host:port (default 80) as http.client sends it; the status, reason and body.

    Raises OSError when the server cannot be reached or its answer is cut or garbled (a plain OSError, as the
    commands turned http.client's errors), ValueError (as http.client does) for control characters in the target,
    host or a header value."""
    port = 80 if port is None else port
    for text in (target, host):
        if (found := _bad_url_char(text)) is not None:
            raise ValueError(f"URL can't contain control characters. {text!r} (found at least {found!r})")
    shown_host = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1".encode("ascii"), b"Host: " + _host(shown_host, port)]
    fields = {"Accept-Encoding": "identity"}
    if body is not None or method.upper() in _METHODS_WITH_BODY:
        fields["Content-Length"] = str(len(body or b""))
    fields.update(headers)
    for name, value in fields.items():
        encoded = value.encode("latin-1")
        if _bad_header_value(encoded):
            raise ValueError(f"Invalid header value {encoded!r}")
        lines.append(name.encode("ascii") + b": " + encoded)
    address = _host(host, 80)  # bytes: a str host would have socket import the idna codec (~1 ms) to encode it
    sock = _connect(address, port, timeout)
    try:
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + (body or b""))
        return _read_answer(_Answer(sock), method)
    finally:
        sock.close()


# What http.client refuses in a request's target, host and header values (its expressions, [\x00-\x20\x7f] and
# \n(?![ \t])|\r(?![ \t\n]), written out: re costs a command ~6 ms to import), so that a command fails alike on both
# paths (a unit test compares them).


def _bad_url_char(text: str) -> str | None:
    """The first character http.client's _contains_disallowed_url_pchar_re finds in text, or None."""
    return next((char for char in text if char <= " " or char == "\x7f"), None)


def _bad_header_value(value: bytes) -> bool:
    """True when http.client's _is_illegal_header_value finds a line break not followed by a continuation."""
    if b"\n" not in value and b"\r" not in value:
        return False
    after = value[1:] + b"x"  # what follows each byte (the end: no continuation)
    return any(
        (byte == 10 and nxt not in b" \t") or (byte == 13 and nxt not in b" \t\n")
        for byte, nxt in zip(value, after, strict=True)
    )


def _connect(host: bytes, port: int, timeout: float) -> _socket.socket:
    """socket.create_connection: each address of host in turn; the last one's error when none connects."""
    error: OSError | None = None
    for family, kind, proto, _, address in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        sock = None
        try:
            sock = _socket.socket(family, kind, proto)
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as e:
            error = e
            if sock is not None:
                sock.close()
    raise error or OSError("getaddrinfo returns an empty list")


class _Answer:
    """An answer's bytes as they arrive: lines and sized reads over recv (what socket.makefile gives)."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock, self.buffer = sock, bytearray()

    def _more(self) -> bool:
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def _take(self, size: int) -> bytes:
        taken = bytes(self.buffer[:size])
        del self.buffer[:size]
        return taken

    def readline(self, limit: int) -> bytes:
        """Up to and with the next newline, at most ``limit`` bytes; fewer at the end of the answer."""
        while b"\n" not in self.buffer and len(self.buffer) < limit and self._more():
            pass
        end = self.buffer.find(b"\n") + 1 or len(self.buffer)
        return self._take(min(end, limit))

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes (fewer at the end of the answer), or every byte to the end with -1."""
        while (size < 0 or len(self.buffer) < size) and self._more():
            pass
        return self._take(len(self.buffer) if size < 0 else size)


def _host(host: str, port: int) -> bytes:
    try:
        name = host.encode("ascii")
    except UnicodeEncodeError:
        name = host.encode("idna")
    return name if port == 80 else name + b":" + str(port).encode()


def _read_answer(answer: _Answer, method: str) -> tuple[int, str, bytes]:
    """The status, reason and body of an HTTP/1.x answer (1xx interim answers skipped)."""
    while True:
        status, reason = _status_line(_line(answer))
        headers = _headers(answer)
        if status >= 200 or status == 101:
            break
    if status in (204, 304) or status < 200 or method == "HEAD":
        return status, reason, b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, reason, _chunked(answer)
    if (length := headers.get("content-length")) is not None:
        try:
            size = int(length)
        except ValueError:
            size = -1
        if size >= 0:
            return status, reason, _exactly(answer, size)
    return status, reason, answer.read()


def _line(answer: _Answer) -> bytes:
    line: bytes = answer.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise OSError("LineTooLong: got more than 65536 bytes when reading a line")
    return line


def _status_line(line: bytes) -> tuple[int, str]:
    if not line:
        raise OSError("RemoteDisconnected: Remote end closed connection without response")
    version, _, rest = line.decode("iso-8859-1").strip().partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
        raise OSError(f"BadStatusLine: {line.decode('iso-8859-1').strip()!r}")
    return int(code), reason.strip()


def _headers(answer: _Answer) -> dict[str, str]:
    """The answer's header fields, by lowercase name."""
    headers: dict[str, str] = {}
    for _ in range(100):  # http.client's limit
        line = _line(answer)
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, _, value = line.decode("iso-8859-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    raise OSError("HTTPException: got more than 100 headers")


def _exactly(answer: _Answer, size: int) -> bytes:
    data: bytes = answer.read(size)
    if len(data) < size:
        raise OSError(f"IncompleteRead: {len(data)} bytes read, {size - len(data)} more expected")
    return data


def _chunked(answer: _Answer) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(answer).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise OSError(f"IncompleteRead: bad chunk size {size_line!r}") from None
        if size == 0:
            _headers(answer)  # the trailer
            return b"".join(parts)
        parts.append(_exactly(answer, size))
        _line(answer)  # the CRLF after the chunk


def http_client(*, https: bool) -> ModuleType:
    """http.client; without ssl (and so without HTTPSConnection) when ``https`` is False and neither is loaded.

    A process that goes on to use https after one plain request calls ``forget_plain()`` first (urllib.request,
    which the MCP SDK and gRPC stacks load, needs HTTPSConnection).
    """
    if https or "http.client" in sys.modules or "ssl" in sys.modules:
        import http.client

        return http.client
    sys.modules["ssl"] = None  # type: ignore[assignment]  # import ssl raises ImportError: http.client goes without
    try:
        import http.client

        return http.client
    finally:
        del sys.modules["ssl"]


def forget_plain() -> None:
    """Drops an http.client loaded without ssl, so that the next import loads the whole module."""
    loaded = sys.modules.get("http.client")
    if loaded is not None and not hasattr(loaded, "HTTPSConnection"):
        del sys.modules["http.client"]
