"""REST for the log entries the search index set aside (admin): /v1/index/quarantine, its retry and its purge."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field

from engram.model import format_time
from engram.results import Quarantined
from engram.services.gateway.rest.dependencies import CurrentCaller, Quarantine
from engram.services.gateway.rest.problems import ERROR_RESPONSES
from engram.services.gateway.schemas.arguments import MAX_SEQ

MAX_SEQS = 1000  # as many as the index keeps set aside

Seqs = Annotated[
    list[Annotated[int, Field(ge=1, le=MAX_SEQ)]],
    Field(default_factory=list, max_length=MAX_SEQS,
          description="The log sequences of the entries (GET /v1/index/quarantine); none: every one you may see."),
]  # fmt: skip


class QuarantinedOut(BaseModel):
    seq: int = Field(description="The entry's log sequence.")
    namespace: str
    memory_id: str = Field(description="The memory the entry is about ('' when it names none).")
    event: str
    error: str = Field(description="Why the index could not apply it.")
    at: str | None = Field(description="When it was set aside (RFC 3339).")

    @classmethod
    def of(cls, item: Quarantined) -> "QuarantinedOut":
        return cls(seq=item.seq, namespace=item.namespace, memory_id=item.memory_id, event=item.event,
                   error=item.error, at=format_time(item.at))  # fmt: skip


class QuarantineList(BaseModel):
    entries: list[QuarantinedOut] = Field(description="Oldest first: your namespace's.")
    total: int = Field(description="Entries set aside on this node, over every namespace.")


class RetryRequest(BaseModel):
    seqs: Seqs


class RetryResult(BaseModel):
    applied: list[QuarantinedOut] = Field(description="Applied now (or gone from the log): out of the quarantine.")
    failed: list[QuarantinedOut] = Field(description="Still failing: kept, with the error they fail with now.")


class PurgeRequest(BaseModel):
    seqs: Seqs
    erase: bool = Field(
        default=False,
        description="Also purge the memories the entries are about (every log entry about each is erased, as "
        "DELETE /v1/memories/{id}?purge=true does); without it the entries stay in the log.",
    )


class PurgeResult(BaseModel):
    dropped: list[QuarantinedOut] = Field(description="Out of the quarantine.")
    erased: list[str] = Field(description="The memories purged (with erase).")


# Routes /v1/index/quarantine (list), /v1/index/quarantine/retry and /v1/index/quarantine/purge (admin). build_app
# includes them; each takes the app's quarantine operations and the caller as injected dependencies.
router = APIRouter(prefix="/v1/index", tags=["index"], responses=ERROR_RESPONSES)


@router.get("/quarantine", response_model=QuarantineList,
            summary="Log entries the search index could not apply (admin)")  # fmt: skip
async def list_quarantine(caller: CurrentCaller, ops: Quarantine) -> QuarantineList:
    """Entries set aside so that the index goes on: each with its sequence, namespace, memory, event and error.
    Readiness reports them (degraded, still serving) until they are retried or purged."""
    entries, total = await ops.entries(caller)
    return QuarantineList(entries=[QuarantinedOut.of(e) for e in entries], total=total)


@router.post("/quarantine/retry", response_model=RetryResult,
             summary="Apply quarantined log entries again (admin)")  # fmt: skip
async def retry_quarantine(body: RetryRequest, caller: CurrentCaller, ops: Quarantine) -> RetryResult:
    """Reads the entries from the log and applies them again (after a fix or an upgrade)."""
    applied, failed = await ops.retry(caller, body.seqs)
    return RetryResult(applied=[QuarantinedOut.of(e) for e in applied], failed=[QuarantinedOut.of(e) for e in failed])


@router.post("/quarantine/purge", response_model=PurgeResult,
             summary="Drop quarantined log entries, optionally purging their memories (admin)")  # fmt: skip
async def purge_quarantine(body: PurgeRequest, caller: CurrentCaller, ops: Quarantine) -> PurgeResult:
    """Takes the entries out of the quarantine; with `erase`, purges their memories first."""
    purged = await ops.purge(caller, body.seqs, erase=body.erase)
    return PurgeResult(dropped=[QuarantinedOut.of(e) for e in purged.dropped], erased=purged.erased)
