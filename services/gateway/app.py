"""The gateway's HTTP app, assembled: MCP streamable HTTP at /mcp, REST at /v1, SSE, the console, health and
readiness probes, metrics, and the HTTP checks in front of them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

from engram.config import Settings
from engram.keys import KeyStore
from engram.log import Log
from engram.services.gateway.backend import Backend
from engram.services.gateway.console import routes as console
from engram.services.gateway.http.authentication import RequireKey
from engram.services.gateway.http.body_limits import BodyLimitsMiddleware, BodyPolicy
from engram.services.gateway.http.hosts import HostGuard, HostGuardMiddleware
from engram.services.gateway.http.profile_check import RequireKnownProfile
from engram.services.gateway.http.request_metrics import HttpMetricsMiddleware, LabelledRoute, add_metrics
from engram.services.gateway.identity import Resolver
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.context import SessionContext
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.operations.quarantine import QuarantineOperations
from engram.services.gateway.rest import (
    consolidation,
    context,
    coordination,
    docs,
    memories,
    packs,
    quarantine,
    status,
    sync,
)
from engram.services.gateway.rest.bodies import IMPORT_PATH, reads_json_body
from engram.services.gateway.rest.problems import add_error_handlers
from engram.services.gateway.schemas.results import ENGRAM_VERSION
from engram.services.gateway.sse import routes as sse
from engram.services.gateway.sse.streams import EventStreams

MCP_PATH = "/mcp"

# Every router of the app, in the order they are included: the OpenAPI document lists their routes in this order.
ROUTERS = (
    memories.router,
    coordination.router,
    consolidation.router,
    context.router,
    sync.router,
    packs.router,
    console.router,
    quarantine.router,
    docs.router,
    sse.router,
    status.probes,
    status.router,
)

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
    # Stateful sessions, so clientInfo from `initialize` is known on every later request of a session. A POST is
    # answered with one JSON body, not an SSE stream: no tool sends anything while it runs (no progress, no log
    # message, no request to the client), and a stream per POST cost 1.7 ms a search (docs/benchmarks.md). Resource
    # notifications go on the session's GET stream and `subscriptions/listen` streams, which stay SSE.
    mcp.streamable_http_app(stateless_http=False, json_response=True, transport_security=guard.transport_security())
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

    # /docs and /redoc are served by rest/docs.py, with their scripts from this node rather than a CDN.
    app = FastAPI(title="Engram", version=ENGRAM_VERSION, description=DESCRIPTION, lifespan=lifespan, docs_url=None,
                  redoc_url=None)  # fmt: skip
    add_error_handlers(app)
    # A Route whose endpoint is not a function is called as a raw ASGI app (all methods: POST, GET, DELETE). Routed
    # first, so an MCP call is not matched against every REST route before its own.
    mcp_endpoint: Any = RequireKey(RequireKnownProfile(StreamableHTTPASGIApp(sessions)), resolver)
    app.router.routes.append(LabelledRoute(MCP_PATH, mcp_endpoint, include_in_schema=False))
    _put_dependencies(app, settings, backend, resolver, cursors, event_log)
    for router in ROUTERS:
        app.include_router(router)
    add_metrics(app)
    edge = BodyPolicy(
        max_request_bytes=settings.max_request_bytes,
        max_import_bytes=settings.max_import_bytes,
        reads_json=reads_json_body,
        import_path=IMPORT_PATH,
        mcp_path=MCP_PATH,
    )
    app.add_middleware(BodyLimitsMiddleware, policy=edge)
    app.add_middleware(HttpMetricsMiddleware, router=app.router)  # inside the host guard, which copies the scope
    app.add_middleware(HostGuardMiddleware, guard=guard)  # added last, so it runs first
    _document_problems_not_422(app)
    return app


def _put_dependencies(
    app: FastAPI,
    settings: Settings,
    backend: Backend,
    resolver: Resolver,
    cursors: CursorTracker,
    event_log: Log | None,
) -> None:
    """What the module-level routes take as injected dependencies (rest/dependencies.py, sse/routes.py), set once."""
    app.state.ops, app.state.resolver, app.state.settings = Operations(backend, cursors, settings), resolver, settings
    app.state.backend, app.state.event_log = backend, event_log
    app.state.session_context = SessionContext(backend, cursors, settings)
    app.state.packs = PackService(backend, cursors)
    app.state.quarantine = QuarantineOperations(backend)
    app.state.event_streams = EventStreams(event_log, settings)  # the server ends open streams before it stops


def _document_problems_not_422(app: FastAPI) -> None:
    """FastAPI documents a 422 for every route with parameters; Engram answers invalid requests with a 400
    problem (rest/problems.py), so the generated document is corrected once, when first built."""
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
