"""The resources engram://profile, engram://recent, engram://projects and engram://memory/{id}, as Markdown.

Every resource is read as the caller of its request (resolved like a tool's caller) and shows its namespace only."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from engram import plural
from engram.errors import EngramError, InvalidArgument, NotFound
from engram.model import IMPORTANCES, Caller, Memory, SearchFilter, format_time
from engram.services.gateway.identity import require_scope
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.operations.context import SessionContext, listed, owner, title

PROFILE_URI = "engram://profile"

RECENT_URI = "engram://recent"

PROJECTS_URI = "engram://projects"

MEMORY_URI = "engram://memory/{id}"

MEMORY_URI_PREFIX = "engram://memory/"

MARKDOWN = "text/markdown"

STYLE_TAGS = ("working-style", "workflow")

PROFILE_ITEMS = 10  # preferences, and working-style memories, shown in the profile

PROFILE_SCAN = 50  # of each, the most recently changed read before ordering by importance

RECENT_ITEMS = 10

PROJECT_SCAN = 500  # the most recently changed memories the projects are counted over

PROJECTS_SHOWN = 20

PROJECT_LATEST = 3  # latest decisions, and latest facts, shown per project

IMPORTANCE_RANK = {name: rank for rank, name in enumerate(IMPORTANCES)}

PROFILE_DESCRIPTION = """\
Who you are to Engram (agent@device, team, namespace) and how the people you work for want things done: the \
namespace's preferences (memory_type "preference") and working style (memories tagged "working-style" or \
"workflow"), most important and most recent first."""

RECENT_DESCRIPTION = "The 10 most recently changed memories of your namespace, newest first."

PROJECTS_DESCRIPTION = "The projects of your namespace: how many memories each has, and its latest decisions and facts."

MEMORY_DESCRIPTION = "One memory of your namespace, as Markdown: its content and every field it has."

# The request a resource is read in: MCPServer gives static resources no Context, so a middleware keeps the request.
_request: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar("engram_mcp_request", default=None)


async def _remember_request(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: the request being served, for the resources that get no Context (static URIs)."""
    token = _request.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _request.reset(token)


@contextlib.contextmanager
def _resource_errors() -> Iterator[None]:
    """Service errors become resource errors (a missing memory: "not found"), with their message; a malformed id is
    the caller's mistake, so invalid params (-32602) as well, not an internal error."""
    try:
        yield
    except NotFound as e:
        raise ResourceNotFoundError(str(e)) from e
    except InvalidArgument as e:
        raise MCPError(code=INVALID_PARAMS, message=str(e)) from e
    except EngramError as e:
        raise ResourceError(str(e)) from e


class Resources:
    """The resources, each declared once as a method (its parameters are the URI template's), with what they use given
    to the instance: the session context, how a request's caller is resolved, and the server (a static resource gets
    no Context: its caller is resolved from the request ``_remember_request`` keeps)."""

    def __init__(self, server: MCPServer, context: SessionContext, caller: CallerOf) -> None:
        self._server, self._context, self._caller = server, context, caller

    def _reader(self) -> Caller:
        """The caller of the request being served, allowed to read."""
        request = _request.get()
        if request is None:
            raise ResourceError("Engram's resources are read over an MCP request, as its caller.")
        who = self._caller(Context(request_context=request, mcp_server=self._server))
        require_scope(who, "read")
        return who

    async def profile(self) -> str:
        with _resource_errors():
            return await profile_markdown(self._context, self._reader())

    async def recent(self) -> str:
        with _resource_errors():
            return await recent_markdown(self._context, self._reader())

    async def projects(self) -> str:
        with _resource_errors():
            return await projects_markdown(self._context, self._reader())

    async def memory(self, id: str, ctx: Context) -> str:
        with _resource_errors():
            who = self._caller(ctx)
            require_scope(who, "read")
            return memory_markdown(await self._context.get(who, id))


# The resources in the order resources/list gives them (the template last): each one's method (its name is the
# resource's), URI, title and description.
RESOURCES: tuple[tuple[Callable[..., Any], str, str, str], ...] = (
    (Resources.profile, PROFILE_URI, "Your Engram profile", PROFILE_DESCRIPTION),
    (Resources.recent, RECENT_URI, "Recent memories", RECENT_DESCRIPTION),
    (Resources.projects, PROJECTS_URI, "Projects", PROJECTS_DESCRIPTION),
    (Resources.memory, MEMORY_URI, "A memory", MEMORY_DESCRIPTION),
)


def register(server: MCPServer, context: SessionContext, caller: CallerOf) -> None:
    """Adds the resources to ``server``, read as the caller of each request."""
    server.middleware.append(_remember_request)
    resources = Resources(server, context, caller)
    for method, uri, heading, description in RESOURCES:
        name = method.__name__
        add = server.resource(uri, name=name, title=heading, description=description, mime_type=MARKDOWN)
        add(getattr(resources, name))


async def profile_markdown(context: SessionContext, who: Caller) -> str:
    """The caller's identity, then the namespace's preferences and working style, most important first."""
    preferences, *styles = await asyncio.gather(
        context.recent(who, PROFILE_SCAN, SearchFilter(memory_types=["preference"])),
        *(context.recent(who, PROFILE_SCAN, SearchFilter(tags=[tag])) for tag in STYLE_TAGS),
    )
    style = list({m.id: m for group in styles for m in group}.values())
    identity = f"You are **{who.identity}** in namespace `{who.namespace}`"
    identity += f", team `{who.team}`." if who.team else " (no team)."
    lines = [
        "# Engram profile",
        identity,
        f"Client: {who.source or 'unknown'}; scopes: {', '.join(sorted(who.scopes)) or 'none'}.",
        "",
        "## Preferences",
        *_by_importance(preferences, 'None saved yet: save them with memory_type "preference".'),
        "",
        "## Working style",
        *_by_importance(style, 'None saved yet: tag memories "working-style" or "workflow".'),
    ]
    return "\n".join(lines)


def _by_importance(memories: Sequence[Memory], none: str) -> list[str]:
    """Up to PROFILE_ITEMS memories as list lines, most important first, then most recently changed."""
    ordered = sorted(memories, key=lambda m: (-IMPORTANCE_RANK.get(m.importance, 1), -(m.updated_at or 0.0)))
    return [listed(m) for m in ordered[:PROFILE_ITEMS]] or [f"_{none}_"]


async def recent_markdown(context: SessionContext, who: Caller) -> str:
    memories = await context.recent(who, RECENT_ITEMS, SearchFilter())
    lines = [
        "# Recent memories",
        f"The {RECENT_ITEMS} most recently changed in namespace `{who.namespace}`, newest first.",
        "",
    ]
    return "\n".join(lines + ([listed(m) for m in memories] or ["_Nothing saved yet._"]))


async def projects_markdown(context: SessionContext, who: Caller) -> str:
    """Each project (most recently active first) with its count among the PROJECT_SCAN most recently changed
    memories, and its latest decisions and facts."""
    scanned = await context.recent(who, PROJECT_SCAN, SearchFilter())
    counts: dict[str, int] = defaultdict(int)
    for memory in scanned:  # most recently changed first, so each project's first memory is its latest
        if memory.project:
            counts[memory.project] += 1
    shown = list(counts)[:PROJECTS_SHOWN]
    latest = await asyncio.gather(
        *(
            context.recent(who, 2 * PROJECT_LATEST, SearchFilter(project=p, memory_types=["decision", "fact"]))
            for p in shown
        )
    )
    lines = ["# Projects", f"In namespace `{who.namespace}`, most recently active first."]
    if len(scanned) >= PROJECT_SCAN:
        lines.append(f"_Counted over the {PROJECT_SCAN} most recently changed memories._")
    for project, memories in zip(shown, latest, strict=True):
        lines += ["", f"## {project}", f"{plural.memories(counts[project])}."]
        for kind, heading in (("decision", "Latest decisions"), ("fact", "Latest facts")):
            picked = [m for m in memories if m.memory_type == kind][:PROJECT_LATEST]
            if picked:
                lines += [f"{heading}:", *(listed(m) for m in picked)]
    if not shown:
        lines += ["", "_No memory names a project yet: pass project= when you save._"]
    return "\n".join(lines)


def memory_markdown(memory: Memory) -> str:
    """One memory: its title, its content and its fields (those that are set)."""
    handoff = memory.handoff
    fields: list[tuple[str, Any]] = [
        ("id", f"`{memory.id}`"),
        ("summary", memory.summary),
        ("type", memory.memory_type),
        ("importance", memory.importance),
        ("confidence", memory.confidence),
        ("status", memory.status),
        ("superseded by", memory.superseded_by and f"`{memory.superseded_by}`"),
        ("owner", owner(memory)),
        ("last written by", memory.updated_by),
        ("client", memory.source),
        ("team", memory.team),
        ("project", memory.project),
        ("tags", ", ".join(memory.tags)),
        ("topics", ", ".join(memory.topics)),
        ("conversation", memory.conversation_id),
        ("sensitivity", memory.sensitivity if memory.sensitivity != "normal" else ""),
        ("created", format_time(memory.created_at)),
        ("updated", format_time(memory.updated_at)),
        ("valid from", format_time(memory.valid_at)),
        ("valid until", format_time(memory.invalid_at)),
        ("expires", format_time(memory.expires_at)),
        ("version", f"{memory.version} ({len(memory.history)} earlier: memory_history shows them)"),
        ("handoff", handoff and f"to {handoff.target_agent}, {handoff.status}"),
        ("relations", "; ".join(f"{r.kind} `{r.memory_id}`" for r in memory.relations)),
        ("metadata", memory.metadata and f"`{json.dumps(memory.metadata, ensure_ascii=False)}`"),
    ]
    lines = [f"# {title(memory)}", "", memory.content.strip(), ""]
    lines += [f"- **{name}**: {value}" for name, value in fields if value]
    return "\n".join(lines)
