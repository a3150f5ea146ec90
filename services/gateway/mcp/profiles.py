"""Tool profiles: which tools a connection lists. ``core``, the default, lists the everyday ones (under 20 KB of
tools/list: every session pays for it in context); ``full`` lists every tool (about 40 KB).

A client picks a profile per connection: ``?tools=full`` on the MCP URL or the ``X-Engram-Tools: full`` header
over streamable HTTP (the query parameter wins when both are given); otherwise the server's ENGRAM_MCP_TOOLS
(``engram mcp --tools full`` over stdio) holds, ``core`` unless set; the banner's client lines name the option.
A tool outside the profile is neither listed nor callable: calling it answers an error that names the full profile,
so an agent never uses a tool whose schema it has not seen; the server's instructions, which name every tool, end by
saying which ones the connection lists and how to reach the others.

A session keeps the profile its initialize request chose: a later request of it that drops the choice still has the
session's tools, and one that names another profile is refused (a 2026-07-28 request has no session: each one
carries its own choice).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from starlette.requests import Request

from engram.errors import InvalidArgument

QUERY_PARAMETER = "tools"
HEADER = "X-Engram-Tools"
FULL = "full"
# What an agent needs every day: its session's context, finding, reading and saving memories, replacing and
# archiving its own, handing work over, and checking the connection. Their descriptions name the others (update,
# history, pins, handoff acceptance, teams, consolidation, packs), which the full profile lists.
CORE_TOOLS = frozenset({
    "session_context", "search_memory", "get_memory", "list_memories", "save_memory", "supersede_memory",
    "unsupersede_memory",  # the owner undoes another agent's supersession where it is told of it (issue 33)
    "delete_memory", "create_handoff", "list_handoffs", "ping",
})  # fmt: skip
# The tools each profile lists (None: every tool); the names are ENGRAM_MCP_TOOLS' choices (engram.config).
PROFILES: dict[str, frozenset[str] | None] = {FULL: None, "core": CORE_TOOLS}
_CHOICES = f"{FULL} (every tool) or core (the everyday ones, the default)"
# The requests a profile shapes: the two that hand out the server's instructions, and the two of tools.
_SHAPED = ("initialize", "server/discover", "tools/list", "tools/call")
# Added to the server's instructions for a connection that lists fewer tools than they name.
_PROFILE_NOTE = (
    "\nThis connection lists the {profile} tools: {tools}. The other tools named above are in the full tool profile "
    f"(/mcp?{QUERY_PARAMETER}={FULL}, or engram mcp --tools {FULL}); ask the user to connect with it if you need one."
)


def requested_profile(query: str | None, header: str | None) -> str | None:
    """The profile a request asks for (``?tools=``, else the header), or None; InvalidArgument for an unknown one."""
    for where, value in ((f"?{QUERY_PARAMETER}", query), (HEADER, header)):
        if value is None or not value.strip():
            continue
        profile = value.strip().lower()
        if profile not in PROFILES:
            problem = f"{value[:40]!r} is not a tool profile; use {_CHOICES}, e.g. /mcp?tools={FULL}."
            raise InvalidArgument(where, problem)
        return profile
    return None


def profile_of(request: Request | None, default: str) -> str:
    """The profile of an MCP request: what its HTTP request asks for, else ``default`` (always, over stdio)."""
    if request is None:
        return default
    return requested_profile(request.query_params.get(QUERY_PARAMETER), request.headers.get(HEADER)) or default


class ToolProfiles:
    """MCP server middleware: tools/list lists the request's profile, tools/call refuses a tool outside it, and
    the instructions (initialize, server/discover) say which tools the connection has.

    A profile is a view of one server: the tools, their schemas and what they answer are the same in every
    profile. An unknown profile never reaches here over HTTP (a 400 before the MCP layer: http/profile_check.py).
    """

    def __init__(self, default: str) -> None:
        self._default = default

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in _SHAPED:
            return await call_next(ctx)
        profile = _profile(ctx, self._default)
        listed = PROFILES[profile]
        if listed is None:
            return await call_next(ctx)
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if isinstance(name, str) and name not in listed:
                raise MCPError(code=INVALID_PARAMS, message=outside(name, profile))
            return await call_next(ctx)
        result = await call_next(ctx)
        if not isinstance(result, dict):  # the SDK hands middleware the wire form of a result
            return result
        if ctx.method != "tools/list":
            return _noted(result, profile, listed)
        return {**result, "tools": [tool for tool in result.get("tools", []) if tool.get("name") in listed]}


def outside(tool: str, profile: str) -> str:
    """What a call of a tool outside the connection's profile answers."""
    return (
        f"{tool[:64]!r} is not among this connection's tools (the {profile} tool profile). Its tools are "
        f"{', '.join(sorted(PROFILES[profile] or ()))}. The {FULL} profile has every tool: connect to "
        f"/mcp?{QUERY_PARAMETER}={FULL} (or send {HEADER}: {FULL}), or run engram mcp --tools {FULL}."
    )


def _noted(result: dict[str, Any], profile: str, listed: frozenset[str]) -> dict[str, Any]:
    """An initialize or server/discover result whose instructions (which name every tool) say which tools this
    connection lists."""
    if not result.get("instructions"):
        return result
    note = _PROFILE_NOTE.format(profile=profile, tools=", ".join(sorted(listed)))
    return {**result, "instructions": result["instructions"] + note}


SESSION_KEY = "engram.tool_profile"  # where a session keeps its profile (the SDK's per-connection state)


def _profile(ctx: ServerRequestContext[Any, Any], default: str) -> str:
    """The request's profile: the one its session was initialized with, else what it asks for, else ``default``."""
    try:
        asked = profile_of(ctx.request if isinstance(ctx.request, Request) else None, "")
    except InvalidArgument as e:  # refused over HTTP before the MCP layer; kept as a protocol error if not
        raise MCPError(code=INVALID_PARAMS, message=str(e)) from e
    state = _session_state(ctx)
    if ctx.method == "initialize":
        state[SESSION_KEY] = asked or default
    fixed: str = state.get(SESSION_KEY) or asked or default
    if asked and asked != fixed:
        raise MCPError(code=INVALID_PARAMS, message=switched(fixed, asked))
    return fixed


def switched(fixed: str, asked: str) -> str:
    """What a request of a session answers when it names a profile other than the session's."""
    return (
        f"This session has the {fixed} tool profile, chosen when it was initialized; a session keeps its tools. "
        f"For the {asked} profile, start a new session with /mcp?{QUERY_PARAMETER}={asked} (or {HEADER}: {asked})."
    )


def _session_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """The scratch state of the connection (one MCP session) the request came on; the SDK hands middleware a
    per-request ServerSession whose connection, which outlives the request, is only reachable as its attribute. A
    2026-07-28 request over HTTP gets a connection of its own, so nothing carries over between such requests."""
    connection = getattr(ctx.session, "_connection", None)
    state = getattr(connection, "state", None)
    return state if isinstance(state, dict) else {}
