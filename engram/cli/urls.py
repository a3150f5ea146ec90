"""The node's URL split and a request's query and path quoted as urllib.parse does, without importing it for the URLs
the commands meet (http://host:port/path): urllib.parse imports re, ipaddress and collections, ~4 ms of an `engram
search` (issue 34). Any other URL goes through urllib.parse itself; a unit test compares the two."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any
    from urllib.parse import SplitResult

# urllib.parse's _ALWAYS_SAFE: what quote leaves as it is.
_ALWAYS_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
# The characters of the URLs split here: their scheme, host, port and path need none of urlsplit's other rules
# (userinfo, IPv6 brackets, a query or fragment, percent escapes, spaces, tabs and control characters to strip).
_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/:")


class Split:
    """What the commands read of urlsplit's answer."""

    __slots__ = ("hostname", "path", "port", "scheme")

    def __init__(self, scheme: str, hostname: str | None, port: int | None, path: str) -> None:
        self.scheme, self.hostname, self.port, self.path = scheme, hostname, port, path


def split(url: str) -> Split | SplitResult:
    """urlsplit(url), or for a plain URL its scheme, hostname, port and path alike."""
    plain = _plain(url)
    if plain is not None:
        return plain
    from urllib.parse import urlsplit

    return urlsplit(url)


def _plain(url: str) -> Split | None:
    """The parts of an http(s)://host[:port][/path] URL of plain characters, or None for any other URL."""
    scheme, separator, rest = url.partition("://")
    if not separator or scheme.lower() not in ("http", "https") or not all(char in _PLAIN for char in rest):
        return None
    netloc, slash, path = rest.partition("/")
    host, colon, port = netloc.partition(":")
    if not host or ":" in port or (colon and not (port.isdigit() and int(port) <= 65535)):
        return None
    return Split(scheme.lower(), host.lower(), int(port) if port else None, slash + path)


def quote(text: str, safe: str = "/") -> str:
    """urllib.parse.quote(text, safe): UTF-8, each byte that is neither always safe nor in ``safe`` as %XX."""
    keep = _ALWAYS_SAFE | frozenset(safe.encode("ascii"))
    data = text.encode("utf-8")
    if all(byte in keep for byte in data):
        return text
    return "".join(chr(byte) if byte in keep else f"%{byte:02X}" for byte in data)


def quote_plus(text: str) -> str:
    """urllib.parse.quote_plus(text): quote with no safe character, a space as +."""
    return quote(text, " ").replace(" ", "+") if " " in text else quote(text, "")


def urlencode(params: Mapping[str, Any]) -> str:
    """urllib.parse.urlencode(params, doseq=True) for the values a command sends (text, numbers, lists of them)."""
    if not all(isinstance(value, str | int | float | list | tuple) for value in params.values()):
        from urllib.parse import urlencode as full

        return full(params, doseq=True)
    pairs = []
    for name, value in params.items():
        key = quote_plus(str(name))
        for item in value if isinstance(value, list | tuple) else (value,):
            pairs.append(f"{key}={quote_plus(str(item))}")
    return "&".join(pairs)
