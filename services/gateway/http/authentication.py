"""The /mcp endpoint's key check: a request without a valid key gets a 401 problem before the MCP layer sees it."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.errors import Unauthenticated
from engram.services.gateway.identity import Resolver
from engram.services.gateway.rest.problems import unauthenticated


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
