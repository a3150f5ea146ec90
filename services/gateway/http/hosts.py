"""DNS-rebinding and cross-site protection: only known Host and Origin values reach the API (421 and 403 else)."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.config import Settings, is_loopback
from engram.services.gateway.rest.problems import problem

# Probes are answered whatever the Host: orchestrators call them by pod IP, and they reveal nothing.
UNGUARDED_PATHS = frozenset({"/healthz", "/readyz"})

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

ANY_HOST = "*"


class HostGuard:
    """DNS-rebinding and cross-site protection: only known Host and Origin values may reach the API.

    A web page that rebinds its own domain to 127.0.0.1 could otherwise drive a keyless dev-mode node from the
    user's browser (a bad Host), and so could any other page the user opens, served from localhost on another
    port (a bad Origin). So an Origin is let in only when it is one of the node's own pages (a name it answers
    to, on the port the request arrived at) or configured (ENGRAM_ALLOWED_ORIGINS). Requests without an Origin
    (the CLI, MCP clients, curl) are not web pages. ``*`` in allowed hosts turns the check off (e.g. behind a
    proxy that checks).
    """

    def __init__(
        self, hosts: Iterable[str], origins: Iterable[str], *, enabled: bool = True, port: int | None = None
    ) -> None:
        self.hosts = _with_port_variants(hosts)
        self.origins = _with_port_variants(origins)  # the configured ones; the node's own are derived per request
        self.enabled = enabled
        self.port = port or None  # the configured port, None when the system picks one (0)

    @classmethod
    def from_settings(cls, settings: Settings) -> HostGuard:
        """Loopback names on any port, the bind address if it is a specific one, plus the configured ones."""
        hosts = [*LOOPBACK_HOSTS, *settings.allowed_hosts]
        if not is_loopback(settings.host) and settings.host not in ("0.0.0.0", "::", ""):
            hosts.append(f"[{settings.host}]" if ":" in settings.host else settings.host)
        return cls(hosts, settings.allowed_origins, enabled=ANY_HOST not in settings.allowed_hosts, port=settings.port)

    def transport_security(self) -> TransportSecuritySettings:
        """The same policy for the MCP SDK's own check (defence in depth: it guards /mcp if mounted alone).

        The SDK takes a fixed list: the node's own pages on its configured port (on any port when the system
        picks it; HostGuardMiddleware, in front of it, always compares with the port the request arrived at).
        """
        port = str(self.port) if self.port else "*"
        names = [host for host in self.hosts if not host.rpartition(":")[2].isdigit() and not host.endswith(":*")]
        own = [f"{scheme}://{name}:{port}" for name in names for scheme in ("http", "https")]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=self.enabled,
            allowed_hosts=sorted(self.hosts),
            allowed_origins=sorted({*own, *self.origins}),
        )

    def host_allowed(self, host: str | None) -> bool:
        return not self.enabled or (bool(host) and _matches(host or "", self.hosts))

    def origin_allowed(self, origin: str | None, *, port: int | None) -> bool:
        """Whether a request with this Origin header, arriving at ``port`` (None when unknown), may go on."""
        # Browsers send Origin on cross-site requests (and same-site writes); its absence means a non-browser
        # client or a same-origin read.
        if not self.enabled or not origin or _matches(origin, self.origins):
            return True
        return port is not None and self._own_page(origin, port)

    def _own_page(self, origin: str, port: int) -> bool:
        """A page of this node: http(s), a host name it answers to, the port the request arrived at."""
        try:
            parts = urlsplit(origin.lower())
            origin_port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        except ValueError:  # a malformed port
            return False
        if parts.scheme not in ("http", "https") or origin_port != port or parts.path or not parts.hostname:
            return False
        return "@" not in parts.netloc and _matches(parts.netloc, self.hosts)


class HostGuardMiddleware:
    """Applies a HostGuard to every request except the probes: 421 for a bad Host, 403 for a bad Origin."""

    def __init__(self, app: ASGIApp, guard: HostGuard) -> None:
        self._app = app
        self._guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in UNGUARDED_PATHS:
            headers = Headers(scope=scope)
            host, origin = headers.get("host"), headers.get("origin")
            server = scope.get("server")  # (address, port) of the socket the request arrived at
            if not self._guard.host_allowed(host):
                detail = (
                    f"Host {host!r} is not allowed. Connect through 127.0.0.1 or localhost, or add the name "
                    "to ENGRAM_ALLOWED_HOSTS."
                )
                await problem(421, detail, code="invalid_host")(scope, receive, send)
                return
            if not self._guard.origin_allowed(origin, port=server[1] if server else None):
                detail = (
                    f"Origin {origin!r} is not allowed: only the node's own pages may call it from a browser. "
                    "Add the origin to ENGRAM_ALLOWED_ORIGINS to allow it."
                )
                await problem(403, detail, code="invalid_origin")(scope, receive, send)
                return
            scope = _lowercase_host(scope)  # the MCP SDK checks Host and Origin again, case-sensitively
        await self._app(scope, receive, send)


def _lowercase_host(scope: Scope) -> Scope:
    """Host names are case-insensitive (RFC 9110, 4.2.3): LOCALHOST is localhost, in Host and in Origin."""
    headers = [(name, value.lower() if name in (b"host", b"origin") else value) for name, value in scope["headers"]]
    return {**scope, "headers": headers}


def _with_port_variants(values: Iterable[str]) -> frozenset[str]:
    """Each value both bare and as "value:*" (any port), matching how the MCP SDK reads patterns."""
    out: set[str] = set()
    for value in values:
        bare = value.removesuffix(":*").rstrip("/")
        if bare:
            bare = bare.lower()
            out.update({bare, f"{bare}:*"})
    return frozenset(out)


def _matches(value: str, patterns: frozenset[str]) -> bool:
    value = value.lower()  # host names (and an origin's scheme and host) are case-insensitive
    if value in patterns:
        return True
    base, sep, port = value.rpartition(":")
    # "host:port" matches "host:*"; an IPv6 literal's own colons sit inside brackets, before the last ":".
    return bool(sep) and port.isdigit() and f"{base}:*" in patterns
