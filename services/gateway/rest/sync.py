"""REST for edge devices: /v1/sync/*, how an edge device reaches the cluster's sync service through the gateway (one
URL, one key).

The device authenticates with a key scoped ``sync`` to one namespace (``engram keys create --scopes sync
--device D``); a key that names a device syncs that device only. Bodies are the events of docs/events.md.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

import json
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from engram.errors import Unavailable
from engram.grpc.clients import ANY_AGENT, DEFAULT_PULL, MAX_PULL, MAX_PUSH, SyncClient
from engram.model import Caller
from engram.names import DEVICE_PATTERN
from engram.results import SyncChange
from engram.services.gateway.backend import Backend
from engram.services.gateway.rest.dependencies import CurrentBackend, CurrentResolver, bearer
from engram.services.gateway.rest.problems import ERROR_RESPONSES
from engram.services.gateway.schemas.arguments import MAX_SEQ

SYNC_AGENT = "engram-sync"  # the caller of a sync call: the agents it speaks for are named in each change

MAX_SOURCE_ID_CHARS = 200

DeviceName = Annotated[str, Field(min_length=1, max_length=128, pattern=f"^{DEVICE_PATTERN}$",
                                  description="The device that syncs (its ENGRAM_DEVICE).")]  # fmt: skip


class RegisterRequest(BaseModel):
    device: DeviceName


class RegisterResult(BaseModel):
    device: str
    namespace: str = Field(description="The namespace the key syncs (the device's memories go there).")
    cursor: int = Field(description="The cluster log's end now: a device that wants no backfill starts here.")


class ChangeIn(BaseModel):
    source_id: str = Field(min_length=3, max_length=MAX_SOURCE_ID_CHARS, description="<device>:<local seq>")
    event: str = Field(max_length=64, description="The event name (memory_saved, memory_updated, ...).")
    body: dict[str, Any] = Field(description="The event body as the device's log holds it (docs/events.md).")
    seq: int = Field(ge=0, le=MAX_SEQ, description="The device's local log sequence.")
    parent: str = Field(
        default="", max_length=MAX_SOURCE_ID_CHARS,
        description="What the change was made on: '' (a new memory), 'server:<version>', or the source_id of the "
        "device's own earlier change.",
    )  # fmt: skip


class PushRequest(BaseModel):
    device: DeviceName
    changes: list[ChangeIn] = Field(max_length=MAX_PUSH)
    restore: bool = Field(
        default=False, description="Disaster recovery (`engram sync --full`): fill in what the cluster lacks."
    )


class PushedOut(BaseModel):
    source_id: str
    accepted: bool
    seq: int = 0
    version: int = 0
    reason: str = ""
    conflict: bool = False
    duplicate: bool = False
    redacted: list[str] = Field(default=[], description="The kinds of secrets scrubbed from it before it was stored.")


class PushResult(BaseModel):
    results: list[PushedOut]


class ChangeOut(BaseModel):
    source_id: str
    event: str
    body: dict[str, Any]
    seq: int


class PullResult(BaseModel):
    changes: list[ChangeOut]
    cursor: int = Field(description="Pass it as `cursor` to read on.")
    has_more: bool
    last_seq: int = Field(description="The cluster log's end when the page was read.")


# Routes /v1/sync/register, /v1/sync/push and /v1/sync/pull. build_app includes them; each takes the caller of a
# sync key and the app's sync client as injected dependencies.
router = APIRouter(prefix="/v1/sync", tags=["sync"], responses=ERROR_RESPONSES)


async def sync_caller(
    request: Request, resolver: CurrentResolver, _credentials: Annotated[Any, Depends(bearer)]
) -> Caller:
    return resolver.key_caller(request.headers.get("authorization"), agent=SYNC_AGENT, source="sync")


async def device_agents(
    request: Request, resolver: CurrentResolver, _credentials: Annotated[Any, Depends(bearer)]
) -> tuple[str, ...]:
    """The agents that work on the device, as its key names them (none: a key that names none); any agent in
    dev mode, where a node on loopback trusts its local devices."""
    key = resolver.authenticate(request.headers.get("authorization"))
    return key.agents if key is not None else (ANY_AGENT,)


def _client(backend: Backend) -> SyncClient:
    """The sync service behind this gateway; 503 when there is none (raised in the route, after the request is
    validated, so an invalid request is a 400 whatever the gateway serves)."""
    if backend.sync is None:
        raise Unavailable("This gateway has no sync service (set ENGRAM_SYNC_ADDR or --sync-addr).")
    return backend.sync


SyncCaller = Annotated[Caller, Depends(sync_caller)]
DeviceAgents = Annotated[tuple[str, ...], Depends(device_agents)]


@router.post("/register", response_model=RegisterResult, summary="Check a device's key before it syncs")
async def register(body: RegisterRequest, caller: SyncCaller, backend: CurrentBackend) -> RegisterResult:
    answer = await _client(backend).register(caller, body.device)
    return RegisterResult(device=answer.device, namespace=caller.namespace, cursor=answer.cursor)


@router.post("/push", response_model=PushResult, summary="Push a device's changes")
async def push(body: PushRequest, caller: SyncCaller, agents: DeviceAgents, backend: CurrentBackend) -> PushResult:
    """Applies a device's changes in order; each is answered: accepted (with its server sequence and version,
    and whether it was a conflict or a duplicate) or rejected with a reason (never send it again). The device
    speaks only for the agents its key names: it saves as them, and changes or moves only what they own (or
    what is unowned) and handoffs addressed to them."""
    changes = [SyncChange(c.source_id, c.event, json.dumps(c.body).encode(), c.seq, c.parent) for c in body.changes]
    results = await _client(backend).push(caller, body.device, changes, restore=body.restore, agents=agents)
    return PushResult(results=[PushedOut(**asdict(r)) for r in results])


@router.get("/pull", response_model=PullResult, summary="Pull the namespace's changes after a cursor")
async def pull(
    caller: SyncCaller,
    backend: CurrentBackend,
    device: Annotated[str, Query(min_length=1, max_length=128, pattern=f"^{DEVICE_PATTERN}$")],
    cursor: Annotated[int, Query(ge=0, le=MAX_SEQ, description="The last server sequence the device applied.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PULL)] = DEFAULT_PULL,
) -> PullResult:
    """The changes after `cursor`, oldest first (secret memories never leave); store `cursor` after applying
    them, and read on while `has_more`."""
    page = await _client(backend).pull(caller, device, cursor, limit)
    return PullResult(
        changes=[ChangeOut(source_id=c.source_id, event=c.event, body=json.loads(c.body), seq=c.seq)
                 for c in page.changes],
        cursor=page.cursor, has_more=page.has_more, last_seq=page.last_seq,
    )  # fmt: skip
