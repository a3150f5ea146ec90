"""Who calls: the caller of an MCP request, resolved from its hints (HTTP headers, query and peer; MCP clientInfo)."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import Context

from engram.model import Caller
from engram.services.gateway.identity import MCP_SOURCE, RequestIdentity, Resolver

CallerOf = Callable[[Context], Caller]  # the caller of a tool call, resource read or prompt request


def request_identity(ctx: Context) -> RequestIdentity:
    """The caller's hints: HTTP headers, query and peer (none over stdio) and MCP clientInfo.name."""
    context = ctx.request_context
    params = getattr(context.session, "client_params", None)
    client_name = params.client_info.name if params is not None and params.client_info else None
    return RequestIdentity.from_request(context.request, client_name)


def caller_of(resolver: Resolver) -> CallerOf:
    """How the server resolves the caller of each request (headers may differ between requests of one session)."""

    def caller(ctx: Context) -> Caller:
        return resolver.resolve(request_identity(ctx), default_source=MCP_SOURCE)

    return caller
