"""The gateway's HTTP app: MCP streamable HTTP at /mcp, REST at /v1, health and readiness probes, metrics."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.config import Settings, is_loopback
from engram.errors import Unauthenticated
from engram.keys import KeyStore
from engram.log import Log
from engram.services.gateway.backend import Backend
from engram.services.gateway.console_routes import build_console_router
from engram.services.gateway.context import build_context_router
from engram.services.gateway.edge import EdgeMiddleware, EdgePolicy
from engram.services.gateway.events import build_events_router
from engram.services.gateway.identity import Resolver
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.monitoring import HttpMetricsMiddleware, add_metrics
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.pack_routes import build_packs_router
from engram.services.gateway.rest import (
    IMPORT_PATH,
    add_error_handlers,
    build_router,
    problem,
    reads_json_body,
    unauthenticated,
)
from engram.services.gateway.schemas.results import ENGRAM_VERSION
from engram.services.gateway.status import add_probes
from engram.services.gateway.sync import build_sync_router

MCP_PATH = "/mcp"
# Probes are answered whatever the Host: orchestrators call them by pod IP, and they reveal nothing.
UNGUARDED_PATHS = frozenset({"/healthz", "/readyz"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
ANY_HOST = "*"

DESCRIPTION = """\
Shared memory for AI agents. MCP clients connect to `/mcp` (streamable HTTP); the CLI and the web console
use this REST API. Authenticate with `Authorization: Bearer <API key>` (create one with `engram keys create`);
on a loopback bind in dev mode, requests without a key act anonymously in the `default` namespace."""


def build_app(
    settings: Settings, backend: Backend, keys: KeyStore, *, event_log: Log | None = None, replicas: bool = False
) -> FastAPI:
    """The gateway app. The caller owns ``backend`` and ``event_log`` and closes them after the app has stopped.

    ``replicas``: other gateway replicas acknowledge writes too (the cluster), so reads wait for those as well.
    """
    resolver = Resolver(settings, keys)
    cursors = CursorTracker()
    mcp = build_mcp(backend, resolver, cursors, settings, event_log=event_log)
    guard = HostGuard.from_settings(settings)
    # Stateful sessions, so clientInfo from `initialize` is known on every later request of a session.
    mcp.streamable_http_app(stateless_http=False, transport_security=guard.transport_security())
    sessions = mcp.session_manager

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # FastAPI never runs a mounted app's lifespan, so the session manager is run here.
        following = await cursors.follow(event_log) if replicas and event_log is not None else None
        try:
            async with sessions.run():
                yield
        finally:
            if following is not None:
                with contextlib.suppress(Exception):  # the connection may already be gone at shutdown
                    await following.unsubscribe()

    app = FastAPI(title="Engram", version=ENGRAM_VERSION, description=DESCRIPTION, lifespan=lifespan)
    add_error_handlers(app)
    app.include_router(build_router(Operations(backend, cursors, settings), resolver, settings))
    app.include_router(build_context_router(backend, cursors, resolver, settings))
    app.include_router(build_sync_router(backend, resolver))
    app.include_router(build_packs_router(backend, cursors, resolver))
    app.include_router(build_console_router(backend, resolver))
    events = build_events_router(resolver, settings, event_log)
    app.include_router(events)
    app.state.event_streams = events.streams  # the server ends open streams before it stops (server.py)
    # A Route whose endpoint is not a function is called as a raw ASGI app (all methods: POST, GET, DELETE).
    mcp_endpoint: Any = RequireKey(StreamableHTTPASGIApp(sessions), resolver)
    app.add_route(MCP_PATH, mcp_endpoint, include_in_schema=False)
    add_probes(app, backend, resolver, event_log=event_log)
    add_metrics(app, resolver)
    edge = EdgePolicy(
        max_request_bytes=settings.max_request_bytes,
        max_import_bytes=settings.max_import_bytes,
        reads_json=reads_json_body,
        import_path=IMPORT_PATH,
        mcp_path=MCP_PATH,
    )
    app.add_middleware(EdgeMiddleware, policy=edge)
    app.add_middleware(HttpMetricsMiddleware, router=app.router)  # inside the host guard, which copies the scope
    app.add_middleware(HostGuardMiddleware, guard=guard)  # added last, so it runs first
    _document_problems_not_422(app)
    return app


def _document_problems_not_422(app: FastAPI) -> None:
    """FastAPI documents a 422 for every route with parameters; Engram answers invalid requests with a 400
    problem (rest.add_error_handlers), so the generated document is corrected once, when first built."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


class RequireKey:
    """ASGI wrapper refusing unauthenticated /mcp requests with a 401 before the MCP layer sees them.

    Tools resolve the full caller again per request (headers may differ between requests of one session),
    so a session never carries a credential over to a request that lacks one.
    """

    def __init__(self, app: ASGIApp, resolver: Resolver) -> None:
        self._app = app
        self._resolver = resolver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                self._resolver.authenticate(Headers(scope=scope).get("authorization"))
            except Unauthenticated as e:
                await unauthenticated(str(e))(scope, receive, send)
                return
        await self._app(scope, receive, send)


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
