"""What an agent sees first: the session-context and pin tools, the resources engram://profile, engram://recent,
engram://projects and engram://memory/{id}, their update notifications, and the engram-system-prompt prompt.

Every resource is read as the caller of its request (resolved like a tool's caller) and shows its namespace only."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Annotated, Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from pydantic import Field

from engram.config import Settings
from engram.errors import EngramError, NotFound
from engram.events import MEMORY_PURGED, MEMORY_STATE_EVENTS
from engram.log import Log, LogEntry, Subscription, subject
from engram.model import IMPORTANCES, Caller, Memory, SearchFilter, format_time
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.context import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    PROJECT_DESCRIPTION,
    QUERY_DESCRIPTION,
    TOKEN_BUDGET_DESCRIPTION,
    PinResult,
    SessionContext,
    SessionContextOut,
    listed,
    owner,
    title,
)
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.packs import PackService, packs_prompt
from engram.services.gateway.schemas.arguments import MemoryId
from engram.validation import MAX_FIELD_CHARS

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

NOTIFY_SECONDS = 2.0  # a notification a session's stream does not take within this is dropped (a refetch hint)
UNFOLLOW_SECONDS = 5.0
LOG_DOWN = "Resource updates follow the log (NATS), which is unreachable right now: subscribe again in a few seconds."
# Changes after which a resource may read differently. memory_accessed (read counts) is left out: every read would
# notify, and no resource shows read counts.
CHANGE_EVENTS = frozenset({*MEMORY_STATE_EVENTS, MEMORY_PURGED})

_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_PIN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

SESSION_CONTEXT_DESCRIPTION = f"""\
The memories you should see first, as Markdown within a token budget: call it at the start of a session or \
task. Pinned memories come first (at most 5, in full), then the 3 most useful others in full (by importance, \
confidence, how often they are read and how recently they changed; with `query`, by relevance to it too), then \
the rest as one-line titles with their ids (get_memory reads one). `project` keeps to one project; `query` \
names what you are about to do. token_budget ({MIN_TOKEN_BUDGET}-{MAX_TOKEN_BUDGET}, default \
{DEFAULT_TOKEN_BUDGET}) bounds the Markdown, counted with the embedder's tokenizer. The structured result \
lists the memories shown and the tokens used."""

PIN_DESCRIPTION = """\
Pin one of your memories, so that session_context shows it first, in full, to every agent of the namespace \
(at most 5 pinned memories are shown in full). Use it for what every session must know: a standing \
instruction, a key decision, a critical constraint. It adds the tag "pinned" through an update, so only the \
agent that saved the memory may pin it (read all, write own); pinning a pinned memory changes nothing."""

UNPIN_DESCRIPTION = """\
Unpin one of your memories (removes the tag "pinned" through an update; only its owner may): it then competes \
with the others in session_context by importance and recency. Unpinning a memory that is not pinned changes \
nothing."""

PROFILE_DESCRIPTION = """\
Who you are to Engram (agent@device, team, namespace) and how the people you work for want things done: the \
namespace's preferences (memory_type "preference") and working style (memories tagged "working-style" or \
"workflow"), most important and most recent first."""
RECENT_DESCRIPTION = "The 10 most recently changed memories of your namespace, newest first."
PROJECTS_DESCRIPTION = "The projects of your namespace: how many memories each has, and its latest decisions and facts."
MEMORY_DESCRIPTION = "One memory of your namespace, as Markdown: its content and every field it has."
PROMPT_DESCRIPTION = (
    "How to use Engram's shared memory: search at the start, save what is worth keeping, tag it, change only "
    "your own memories, hand work over. Put it in the agent's instructions."
)

SYSTEM_PROMPT = """\
You share a long-term memory, Engram, with the other agents that work for the same people{team}. What one \
agent saves there, every other can recall, on any device and in any later session.{whoami}

1. At the start of a session or task, call session_context (project= and query= for what you are about to do) \
and list_handoffs (work left for you), then search_memory for what the task is about. Another agent may \
already know the answer or have decided it.
2. Save what is worth keeping as you learn it, with save_memory: one self-contained statement per memory that \
makes sense without this conversation, with the right memory_type: fact, preference, decision (with its \
reason), finding, hypothesis, blocker or action-item. Never save secrets.
3. Tag your memories with your name and the project (tags=["{agent}"], project="{project}"), so others can find \
them and know who recorded them.
4. Read every memory, change only your own: correct yours with update_memory, replace an outdated one with \
supersede_memory. For another agent's memory, save your own version instead.
5. When you stop before the work is done, create_handoff for the agent that continues (where it stands, the \
active files, the decisions made, the next steps). Accept a handoff left for you with accept_handoff, and \
complete_handoff when it is done.
6. pin_memory what every session must see first."""

SessionProject = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description=PROJECT_DESCRIPTION)]
SessionQuery = Annotated[str | None, Field(min_length=1, pattern=r"\S", description=QUERY_DESCRIPTION)]
TokenBudget = Annotated[int, Field(ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET, description=TOKEN_BUDGET_DESCRIPTION)]
PromptProject = Annotated[str | None, Field(description="The project this session works on, if any.")]
# The session context's Markdown is what the agent reads (the text content); the rest is the structured result.
SessionContextReply = Annotated[CallToolResult, SessionContextOut]

# The request a resource is read in: MCPServer gives static resources no Context, so a middleware keeps the request.
_request: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar("engram_mcp_request", default=None)


def register_context_features(
    server: MCPServer,
    *,
    backend: Backend,
    cursors: CursorTracker,
    settings: Settings,
    caller: Callable[[Context], Caller],
    event_log: Log | None,
    packs: PackService | None = None,
) -> None:
    """Adds the session-context and pin tools, the resources, their update notifications (when there is a log to
    follow) and the engram-system-prompt prompt to ``server`` (listing the installed expert packs, with ``packs``)."""
    context = SessionContext(backend, cursors, settings)
    _add_tools(server, context, caller)
    _add_resources(server, context, caller)
    _add_prompt(server, caller, packs)
    if event_log is not None:
        _serve_subscriptions(server, Subscriptions(ResourceWatch(event_log), server, caller))


# --- tools --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def tool_errors() -> Iterator[None]:
    """Service errors become tool errors, whose message tells the agent what to do next (every tool, not only
    these: mcp_server uses it too)."""
    try:
        yield
    except EngramError as e:
        raise ToolError(str(e)) from e


def _add_tools(server: MCPServer, context: SessionContext, caller: Callable[[Context], Caller]) -> None:
    @server.tool(description=SESSION_CONTEXT_DESCRIPTION, annotations=_READ)
    async def session_context(
        ctx: Context,
        project: SessionProject = None,
        query: SessionQuery = None,
        token_budget: TokenBudget = DEFAULT_TOKEN_BUDGET,
    ) -> SessionContextReply:
        with tool_errors():
            out = await context.build(caller(ctx), project=project, query=query, token_budget=token_budget)
        return CallToolResult(
            content=[TextContent(type="text", text=out.markdown)], structured_content=out.model_dump(mode="json")
        )

    @server.tool(description=PIN_DESCRIPTION, annotations=_PIN)
    async def pin_memory(id: MemoryId, ctx: Context) -> PinResult:
        with tool_errors():
            return await context.pin(caller(ctx), id, pinned=True)

    @server.tool(description=UNPIN_DESCRIPTION, annotations=_PIN)
    async def unpin_memory(id: MemoryId, ctx: Context) -> PinResult:
        with tool_errors():
            return await context.pin(caller(ctx), id, pinned=False)


# --- resources ----------------------------------------------------------------------------------------------


async def _remember_request(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: the request being served, for the resources that get no Context (static URIs)."""
    token = _request.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _request.reset(token)


@contextlib.contextmanager
def _resource_errors() -> Iterator[None]:
    """Service errors become resource errors (a missing memory: "not found"), with their message."""
    try:
        yield
    except NotFound as e:
        raise ResourceNotFoundError(str(e)) from e
    except EngramError as e:
        raise ResourceError(str(e)) from e


def _add_resources(server: MCPServer, context: SessionContext, caller: Callable[[Context], Caller]) -> None:
    server.middleware.append(_remember_request)

    def reader() -> Caller:
        """The caller of the request being served, allowed to read."""
        request = _request.get()
        if request is None:
            raise ResourceError("Engram's resources are read over an MCP request, as its caller.")
        who = caller(Context(request_context=request, mcp_server=server))
        require_scope(who, "read")
        return who

    @server.resource(PROFILE_URI, name="profile", title="Your Engram profile", description=PROFILE_DESCRIPTION,
                     mime_type=MARKDOWN)  # fmt: skip
    async def profile() -> str:
        with _resource_errors():
            return await profile_markdown(context, reader())

    @server.resource(RECENT_URI, name="recent", title="Recent memories", description=RECENT_DESCRIPTION,
                     mime_type=MARKDOWN)  # fmt: skip
    async def recent() -> str:
        with _resource_errors():
            return await recent_markdown(context, reader())

    @server.resource(PROJECTS_URI, name="projects", title="Projects", description=PROJECTS_DESCRIPTION,
                     mime_type=MARKDOWN)  # fmt: skip
    async def projects() -> str:
        with _resource_errors():
            return await projects_markdown(context, reader())

    @server.resource(MEMORY_URI, name="memory", title="A memory", description=MEMORY_DESCRIPTION, mime_type=MARKDOWN)
    async def memory(id: str, ctx: Context) -> str:
        with _resource_errors():
            who = caller(ctx)
            require_scope(who, "read")
            return memory_markdown(await context.get(who, id))


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
        lines += ["", f"## {project}", f"{counts[project]} memories."]
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


# --- the prompt ---------------------------------------------------------------------------------------------


def _add_prompt(server: MCPServer, caller: Callable[[Context], Caller], packs: PackService | None) -> None:
    @server.prompt(name="engram-system-prompt", title="How to use Engram's shared memory",
                   description=PROMPT_DESCRIPTION)  # fmt: skip
    async def engram_system_prompt(ctx: Context, project: PromptProject = None) -> str:
        try:
            who: Caller | None = caller(ctx)
        except EngramError:  # the prompt still teaches; the tools will say how to name yourself
            who = None
        prompt = system_prompt(who, project)
        if packs is not None and who is not None:
            with contextlib.suppress(EngramError):  # a key that may not read: the memory part still holds
                prompt += "\n\n" + packs_prompt(await packs.installed(who))
        return prompt


def system_prompt(who: Caller | None, project: str | None = None) -> str:
    """The instructions, naming the agent, its team and the project when known."""
    whoami = f" You are {who.identity}." if who is not None else " (ping tells you your agent id.)"
    return SYSTEM_PROMPT.format(
        team=f" (team {who.team})" if who is not None and who.team else "",
        whoami=whoami,
        agent=who.agent_id if who is not None else "<your agent id>",
        project=project or "<project>",
    )


# --- update notifications -----------------------------------------------------------------------------------


def changed_uris(event: str, body: dict[str, Any]) -> list[str]:
    """The resources that may read differently after a log event: the memory's own, the recent list, the projects
    (a memory of a project), the profile (a preference or working-style memory). A purge names no memory: all."""
    if event not in CHANGE_EVENTS:
        return []
    memory = body.get("memory")
    uris = [RECENT_URI]
    if memory_id := body.get("memory_id"):
        uris.append(MEMORY_URI_PREFIX + str(memory_id))
    if not isinstance(memory, dict):
        return [*uris, PROJECTS_URI, PROFILE_URI]
    if memory.get("project"):
        uris.append(PROJECTS_URI)
    if memory.get("memory_type") == "preference" or set(memory.get("tags") or ()) & set(STYLE_TAGS):
        uris.append(PROFILE_URI)
    return uris


def is_engram_uri(uri: str) -> bool:
    return uri in (PROFILE_URI, RECENT_URI, PROJECTS_URI) or (
        uri.startswith(MEMORY_URI_PREFIX) and len(uri) > len(MEMORY_URI_PREFIX)
    )


class Watched:
    """One namespace whose resources sessions watch: the log's events of it, turned into resource-updated
    notifications for its `subscriptions/listen` streams (2026-07-28) and its `resources/subscribe` sessions."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.bus = InMemorySubscriptionBus()  # of this namespace only: a listen stream never hears another's
        self.listen = ListenHandler(self.bus)
        self.connections: dict[Connection, set[str]] = {}  # resources/subscribe sessions and their URIs
        self.watchers = 0
        self.last_seq = 0
        self.subscription: Subscription | None = None

    async def follow(self, event_log: Log, start: int) -> None:
        self.last_seq = start - 1
        self.subscription = await event_log.follow(start, self.on_entry, subjects=subject(self.namespace, ">"))

    async def unfollow(self) -> None:
        subscription, self.subscription = self.subscription, None
        if subscription is not None:
            with contextlib.suppress(Exception):  # the log's connection may be gone already
                await subscription.unsubscribe()

    async def on_entry(self, entry: LogEntry) -> None:
        self.last_seq = entry.seq
        for uri in changed_uris(entry.event, entry.body):
            await self.bus.publish(ResourceUpdated(uri=uri))
            for connection, uris in list(self.connections.items()):
                if uri in uris:
                    with anyio.move_on_after(NOTIFY_SECONDS):
                        await connection.send_resource_updated(uri)  # never raises: a gone stream drops it


class ResourceWatch:
    """The namespaces that sessions watch, each following the log from the first watcher on to the last.

    After a reconnection the log resumes each follow after the last event it delivered."""

    def __init__(self, event_log: Log) -> None:
        self._log = event_log
        self._watched: dict[str, Watched] = {}
        self._lock = asyncio.Lock()

    @property
    def namespaces(self) -> frozenset[str]:
        """The namespaces followed now."""
        return frozenset(self._watched)

    async def attach(self, namespace: str) -> Watched:
        async with self._lock:
            watched = self._watched.get(namespace)
            if watched is None:
                if not self._log.connected:
                    raise MCPError(INTERNAL_ERROR, LOG_DOWN)
                watched = Watched(namespace)
                await watched.follow(self._log, await self._log.last_seq() + 1)
                self._watched[namespace] = watched
            watched.watchers += 1
            return watched

    async def detach(self, watched: Watched) -> None:
        async with self._lock:
            watched.watchers -= 1
            if watched.watchers == 0 and self._watched.get(watched.namespace) is watched:
                del self._watched[watched.namespace]
                await watched.unfollow()


@contextlib.asynccontextmanager
async def _watching(watch: ResourceWatch, namespace: str) -> AsyncIterator[Watched]:
    watched = await watch.attach(namespace)
    try:
        yield watched
    finally:
        with anyio.move_on_after(UNFOLLOW_SECONDS, shield=True):  # also when the stream was cancelled
            await watch.detach(watched)


class Subscriptions:
    """The MCP requests that watch resources, each answered in the namespace of its caller:
    `subscriptions/listen` (2026-07-28: the stream is the response) and `resources/subscribe` / `unsubscribe`
    (earlier versions: notifications on the session's standalone stream, until it closes)."""

    def __init__(self, watch: ResourceWatch, server: MCPServer, caller: Callable[[Context], Caller]) -> None:
        self._watch = watch
        self._server = server
        self._caller = caller
        self._quiet = ListenHandler(InMemorySubscriptionBus())  # streams that watch no resource: nothing to send
        self._sessions: dict[Connection, Watched] = {}
        self._lock = asyncio.Lock()

    def _namespace(self, ctx: ServerRequestContext[Any, Any]) -> str:
        try:
            who = self._caller(Context(request_context=ctx, mcp_server=self._server))
            require_scope(who, "read")
        except EngramError as e:
            raise MCPError(INVALID_REQUEST, str(e)) from e
        return who.namespace

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        if not params.notifications.resource_subscriptions:
            return await self._quiet(ctx, params)
        async with _watching(self._watch, self._namespace(ctx)) as watched:
            return await watched.listen(ctx, params)

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        uri = str(params.uri)
        if not is_engram_uri(uri):
            raise MCPError(
                INVALID_PARAMS,
                f"Unknown resource {uri!r}: subscribe to {PROFILE_URI}, {RECENT_URI}, {PROJECTS_URI} or "
                f"{MEMORY_URI_PREFIX}<id>.",
            )
        namespace = self._namespace(ctx)
        connection = _connection(ctx)
        async with self._lock:
            watched = self._sessions.get(connection)
            if watched is None:
                watched = await self._watch.attach(namespace)
                self._sessions[connection] = watched
                watched.connections[connection] = set()
                connection.exit_stack.push_async_callback(self._forget, connection)
            elif watched.namespace != namespace:
                raise MCPError(
                    INVALID_REQUEST,
                    f"This MCP session watches namespace {watched.namespace!r}; open a new session to watch another.",
                )
            watched.connections[connection].add(uri)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        connection = _connection(ctx)
        watched = self._sessions.get(connection)
        uris = watched.connections.get(connection, set()) if watched is not None else set()
        uris.discard(str(params.uri))
        if not uris:
            await self._forget(connection)
        return EmptyResult()

    async def _forget(self, connection: Connection) -> None:
        """Stops watching for a session (closed, or unsubscribed from everything); idempotent."""
        async with self._lock:
            watched = self._sessions.pop(connection, None)
            if watched is not None:
                watched.connections.pop(connection, None)
        if watched is not None:
            with anyio.move_on_after(UNFOLLOW_SECONDS, shield=True):
                await self._watch.detach(watched)


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection (one MCP session) a request came on.

    The SDK hands request handlers a per-request ServerSession proxy; its connection, which outlives the request
    and carries the session's standalone stream and teardown (exit_stack), is only reachable as its attribute."""
    connection: Connection = ctx.session._connection
    return connection


def _serve_subscriptions(server: MCPServer, subscriptions: Subscriptions) -> None:
    """Serves resource subscriptions in the caller's namespace, replacing the SDK's `subscriptions/listen` handler
    (one bus for the whole server, so every stream would hear every namespace's URIs) and adding
    `resources/subscribe` / `unsubscribe` (which also makes the server announce `resources.subscribe`).

    MCPServer has no public way to register request handlers; like its own completion() decorator, this reaches its
    low-level server."""
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, subscriptions.listen)
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscriptions.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, subscriptions.unsubscribe)
