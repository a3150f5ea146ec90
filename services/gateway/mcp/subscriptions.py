"""Resource update notifications: the log's events of a namespace, turned into resource-updated notifications for
the sessions that watch its resources (`subscriptions/listen`, `resources/subscribe`), in the caller's namespace."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)

from engram.errors import EngramError
from engram.log import Log, LogEntry, Subscription, subject
from engram.log.events import MEMORY_PURGED, MEMORY_STATE_EVENTS
from engram.model import Caller
from engram.services.gateway.identity import require_scope
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.resources import MEMORY_URI_PREFIX, PROFILE_URI, PROJECTS_URI, RECENT_URI, STYLE_TAGS

NOTIFY_SECONDS = 2.0  # a notification a session's stream does not take within this is dropped (a refetch hint)

UNFOLLOW_SECONDS = 5.0

LOG_DOWN = "Resource updates follow the log (NATS), which is unreachable right now: subscribe again in a few seconds."

# Changes after which a resource may read differently. memory_accessed (read counts) is left out: every read would
# notify, and no resource shows read counts.
CHANGE_EVENTS = frozenset({*MEMORY_STATE_EVENTS, MEMORY_PURGED})


def register(server: MCPServer, event_log: Log, caller: CallerOf) -> None:
    """Serves resource update notifications on ``server``, following ``event_log``."""
    _serve_subscriptions(server, Subscriptions(ResourceWatch(event_log), server, caller))


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
