"""The gateway's metrics: every HTTP request counted and timed by route template, and GET /metrics (Prometheus) for
loopback callers and admin keys."""

from __future__ import annotations

import asyncio
import time

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.errors import Unauthenticated
from engram.process import metrics
from engram.services.gateway.identity import CREATE_KEY_HINT, Resolver, _is_loopback_peer
from engram.services.gateway.rest.problems import problem, unauthenticated

METRICS_PATH = "/metrics"
UNMATCHED = "unmatched"  # the route of a request no route took (404): never the raw path, which callers choose
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "OTHER"
NEEDS_ADMIN = (
    "Metrics are for callers on this machine and API keys with the 'admin' scope "
    f"(`{CREATE_KEY_HINT} --scopes read,write,admin`); Prometheus scrapes ENGRAM_METRICS_LISTEN instead."
)


class LabelledRoute(Route):
    """A Route that records itself in the scope, as FastAPI's own routes do, so that HttpMetricsMiddleware labels
    its requests without matching them against every route a second time."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self
        await super().handle(scope, receive, send)


class HttpMetricsMiddleware:
    """Counts and times every HTTP request by route template (``/v1/memories/{memory_id}``), method and status.

    It must sit inside every middleware that copies the ASGI scope (HostGuardMiddleware does), so that it sees the
    route the router records there; requests refused before it (a bad Host or Origin) are not counted.
    """

    def __init__(self, app: ASGIApp, router: Router) -> None:
        self._app = app
        self._router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500  # an exception that escapes is answered 500 further out

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            route, method = self._route(scope), _method(scope)
            metrics.HTTP_REQUESTS.labels(route, method, str(status)).inc()
            metrics.HTTP_DURATION.labels(route, method).observe(time.perf_counter() - started)

    def _route(self, scope: Scope) -> str:
        route: BaseRoute | None = scope.get("route")
        if route is None:  # refused before routing (e.g. a body too large), or no route at all
            route = _matching(self._router.routes, scope)
        return str(getattr(route, "path", UNMATCHED)) if route is not None else UNMATCHED


def _matching(routes: list[BaseRoute], scope: Scope) -> BaseRoute | None:
    partial = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route  # the path is known, the method not (405)
    return partial


def _method(scope: Scope) -> str:
    method = str(scope.get("method", ""))
    return method if method in METHODS else OTHER_METHOD  # any token is a method to HTTP: keep the label bounded


async def metrics_endpoint(request: Request) -> Response:
    """GET /metrics: the process's metrics (every service's, in the embedded node) for a caller on this machine or
    with an admin key (by the resolver build_app put in app.state). The address of ENGRAM_METRICS_LISTEN serves the
    same without a key, for Prometheus."""
    host = request.client.host if request.client is not None else None
    if not _is_loopback_peer(host):
        authorization = request.headers.get("authorization") or ""
        resolver: Resolver = request.app.state.resolver
        try:
            key = resolver.authenticate(authorization) if authorization.strip() else None
        except Unauthenticated as e:
            return unauthenticated(str(e))
        if key is None:  # no key, or a dev-mode node reached through a proxy
            return unauthenticated(NEEDS_ADMIN)
        if not key.allows("admin"):
            return problem(403, f"This API key may not read metrics. {NEEDS_ADMIN}", code="permission_denied")
    body = await asyncio.to_thread(metrics.exposition)  # samples are read under locks: not on the event loop
    return Response(body, media_type=metrics.CONTENT_TYPE)


def add_metrics(app: FastAPI) -> None:
    """Serves GET /metrics (metrics_endpoint) on ``app``."""
    app.add_route(METRICS_PATH, metrics_endpoint, methods=["GET"], include_in_schema=False)
