"""GET /events/stream: the caller's namespace's events as Server-Sent Events, resumable from Last-Event-ID."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from engram.errors import InvalidArgument
from engram.log.events import EVENTS
from engram.names import IDENTITY_PATTERN, MAX_IDENTITY_CHARS
from engram.services.gateway.identity import require_scope
from engram.services.gateway.rest.dependencies import CurrentCaller
from engram.services.gateway.rest.problems import ERROR_RESPONSES
from engram.services.gateway.schemas.arguments import MAX_SEQ, ImportanceName
from engram.services.gateway.sse.streams import GAP_EVENT, QUIET_EVENTS, EventFilter, EventStream, EventStreams
from engram.validation import MAX_LIST_ITEMS

STREAM_PATH = "/events/stream"

EVENT_STREAM_MEDIA_TYPE = "text/event-stream"

# no-cache: an event stream is never a cached document; X-Accel-Buffering: nginx must pass each event on at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

STREAM_DESCRIPTION = f"""\
The events of your namespace as they happen, as [Server-Sent Events]\
(https://html.spec.whatwg.org/multipage/server-sent-events.html) (the `EventSource` API, or any HTTP client
that reads the response as it arrives). The same events as the log's NATS subjects (see docs/events.md):

```
id: 42
event: memory_saved
data: {{"seq": 42, "event": "memory_saved", "agent": "claude-code", "memory_id": "…", "memory": {{…}}, …}}
```

`id` is the log sequence. To resume after a disconnection, reconnect with the header `Last-Event-ID: <id>`
(`EventSource` does it by itself; or the `last_event_id` parameter): the missed events are replayed from the
log, in order, each once, then the stream goes on live. Without it the stream starts with the next event.

A comment line `: keep-alive` comes when nothing else was sent for ENGRAM_SSE_HEARTBEAT_SECONDS. A client
that reads too slowly never makes the server hold more than ENGRAM_SSE_QUEUE_EVENTS events for it: the
oldest are dropped, and before the next event it gets `event: {GAP_EVENT}` with
`data: {{"resume_from": <seq>, "dropped": <count>}}`; reconnect with `Last-Event-ID: <resume_from>` to get
the dropped events back. `memory_accessed` (read counts) is sent only when named in `events`."""


class EventStreamResponse(StreamingResponse):
    """A text/event-stream response for one stream, released (unsubscribed) however the response ends."""

    media_type = EVENT_STREAM_MEDIA_TYPE

    def __init__(self, stream: EventStream, release: Callable[[EventStream], Awaitable[None]]) -> None:
        super().__init__(stream.chunks(), headers=STREAM_HEADERS)
        self._stream = stream
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._release(self._stream)


async def event_streams(request: Request) -> EventStreams:
    """The streams of the app serving the request (build_app puts them in app.state; the server ends them before it
    stops)."""
    streams: EventStreams = request.app.state.event_streams
    return streams


Streams = Annotated[EventStreams, Depends(event_streams)]

# The stream's parameters, as the route declares them (OpenAPI documents each).
Topics = Annotated[
    list[str] | None,
    Query(description="Only events about any of these topics (repeat it, or separate them with commas)."),
]
MinImportance = Annotated[ImportanceName | None, Query(description="Only events of memories at least this important.")]
EventNames = Annotated[
    list[str] | None,
    Query(
        description="Only these events (repeat it, or separate them with commas): "
        + ", ".join(EVENTS)
        + f". Default: all but {', '.join(sorted(QUIET_EVENTS))}."
    ),
]
WrittenBy = Annotated[
    str | None,
    Query(
        pattern=f"^{IDENTITY_PATTERN}$",
        max_length=MAX_IDENTITY_CHARS,
        description="Only events written by this agent (its id, or agent@device).",
    ),
]
ExcludeSelf = Annotated[
    bool, Query(description="Skip the events you wrote yourself (same agent, and same device if known).")
]
LastEventId = Annotated[
    int | None,
    Query(
        ge=0,
        le=MAX_SEQ,
        description="Resume after this event id, for clients that cannot set the Last-Event-ID header "
        "(the header wins when both are given).",
    ),
]
LastEventIdHeader = Annotated[
    str | None,
    Header(
        alias="Last-Event-ID",
        description="Resume after this event id (a log sequence): the missed events are replayed first.",
    ),
]

# GET /events/stream, scoped to the caller's namespace by its key. build_app includes it; the route takes the app's
# streams and the caller as injected dependencies.
router = APIRouter(tags=["events"], responses=ERROR_RESPONSES)


@router.get(
    STREAM_PATH,
    response_class=EventStreamResponse,
    status_code=200,
    summary="Live events of your namespace (Server-Sent Events)",
    description=STREAM_DESCRIPTION,
    responses={200: {"description": "An endless stream of events, heartbeats and gap notices."}},
)
async def stream_events(
    caller: CurrentCaller,
    streams: Streams,
    topics: Topics = None,
    importance: MinImportance = None,
    events: EventNames = None,
    agent: WrittenBy = None,
    exclude_self: ExcludeSelf = False,
    last_event_id: LastEventId = None,
    last_event_id_header: LastEventIdHeader = None,
) -> EventStreamResponse:
    require_scope(caller, "read")
    wanted = EventFilter(
        events=_event_names(events),
        topics=_listed("topics", topics),
        importance=importance,
        agent=agent,
        exclude=(caller.agent_id, caller.device) if exclude_self else None,
    )
    after = _resume_after(last_event_id_header, last_event_id)
    stream = await streams.open(caller.namespace, wanted, after)
    return EventStreamResponse(stream, streams.release)


def _listed(field: str, values: Iterable[str] | None) -> frozenset[str]:
    """Repeated and comma-separated values alike: ``?topics=a,b&topics=c``."""
    names = frozenset(part.strip() for value in values or () for part in value.split(",") if part.strip())
    if len(names) > MAX_LIST_ITEMS:
        raise InvalidArgument(field, f"give at most {MAX_LIST_ITEMS}.")
    return names


def _event_names(values: Iterable[str] | None) -> frozenset[str]:
    names = _listed("events", values)
    unknown = sorted(names - set(EVENTS))
    if unknown:
        raise InvalidArgument("events", f"unknown event {', '.join(unknown)}; the events are: {', '.join(EVENTS)}.")
    return names


def _resume_after(header: str | None, query: int | None) -> int | None:
    """The Last-Event-ID header first: EventSource updates it on every reconnection, while the URL stays the same."""
    if header is None or not header.strip():
        return query
    text = header.strip()
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_SEQ:
        raise InvalidArgument("Last-Event-ID", f"{text[:40]!r} is not an event id (a log sequence number).")
    return int(text)
