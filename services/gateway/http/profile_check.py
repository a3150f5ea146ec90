"""The /mcp endpoint's tool profile check: a request asking for a profile that does not exist (``?tools=``,
``X-Engram-Tools``) gets a 400 problem before the MCP layer sees it."""

from __future__ import annotations

from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.errors import InvalidArgument
from engram.services.gateway.mcp.profiles import HEADER, QUERY_PARAMETER, requested_profile
from engram.services.gateway.rest.problems import problem


class RequireKnownProfile:
    """ASGI wrapper refusing /mcp requests that name an unknown tool profile with a 400 problem that lists the
    profiles (engram.services.gateway.mcp.profiles)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            query = QueryParams(scope.get("query_string", b"")).get(QUERY_PARAMETER)
            try:
                requested_profile(query, Headers(scope=scope).get(HEADER))
            except InvalidArgument as e:
                await problem(400, str(e), code=e.code)(scope, receive, send)
                return
        await self._app(scope, receive, send)
