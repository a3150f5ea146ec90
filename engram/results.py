"""Results of the domain operations, defined once: the services' domain code returns them and the kernel's gRPC
clients (engram.grpc.clients) rebuild the same types from the wire, so the gateway and consolidation see what ingest
and search produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engram.errors import EngramError
from engram.model import Memory, MemoryInput, MemoryVersion
from engram.scrub import Redaction


@dataclass(frozen=True, slots=True)
class SaveResult:
    """A stored memory, the log sequence of the write, and the secrets removed first. A save that repeated an active
    memory of its caller (engram.sameness) stored nothing: ``duplicate_of`` names that memory, which memory and seq
    are."""

    memory: Memory
    seq: int
    redactions: tuple[Redaction, ...]
    duplicate_of: str = ""


@dataclass(slots=True)
class Hit:
    memory: Memory
    score: float
    explain: dict[str, tuple[int, float]] = field(default_factory=dict)  # stage -> (rank, score); rank 0: absent


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    applied_seq: int  # the index had applied the log up to here when it answered
    reranked: bool = False
    rerank_note: str = ""
    explain_note: str = ""  # with explain: how the lists were fused, ordered and cut for this query


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing; next_page_token is empty on the last page."""

    memories: list[Memory]
    next_page_token: str = ""
    index_seq: int = 0  # the log sequence the index had applied when the page was read (0: not said)


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One item of a bulk import: its line number, the memory, an optional idempotency key, and an optional
    pre-computed dense vector of its content (little-endian float32 bytes) with the model that made it (admin only:
    engram.embed.given)."""

    line: int
    draft: MemoryInput
    source_id: str = ""
    dense: bytes = b""
    dense_model: str = ""


@dataclass(slots=True)
class ImportSummary:
    """What a bulk import did, line by line."""

    imported: list[tuple[int, str, int]] = field(default_factory=list)  # (line, id, seq), newly stored
    # (line, id, seq): already stored, as an active memory the item repeats or under the item's source_id
    present: list[tuple[int, str, int]] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    redactions: list[Redaction] = field(default_factory=list)
    last_line: int = 0
    last_seq: int = 0
    stopped: EngramError | None = None  # why the import stopped before the end of the stream, if it did

    def stop(self, line: int, error: EngramError) -> None:
        """Stops before ``line``: everything up to the line before it is done, nothing after it counts."""
        self.stopped = error
        self.last_line = line - 1
        self.rejected = [(n, reason) for n, reason in self.rejected if n < line]


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """An archived memory (its new version), or after a purge the number of log entries erased."""

    id: str
    seq: int
    memory: Memory | None = None  # None after a purge
    erased: int = 0


@dataclass(frozen=True, slots=True)
class SupersedeResult:
    """The replaced memory (now superseded, at its new version) and the memory that replaces it."""

    old: Memory
    new: Memory
    seq: int
    redactions: tuple[Redaction, ...] = ()


@dataclass(frozen=True, slots=True)
class UnsupersedeResult:
    """An undone supersession: the memory active again (at its new version) and its former replacement, which no
    longer supersedes it (None when it is gone: purged)."""

    memory: Memory
    replacement: Memory | None
    seq: int


@dataclass(frozen=True, slots=True)
class ExpireResult:
    memory: Memory
    seq: int
    expired: bool  # False: nothing to do (not due, or not active)


@dataclass(slots=True)
class MergeResult:
    """The survivor of a merge (at its new version) and the memories merged into it (archived)."""

    survivor: Memory
    merged: list[Memory]
    seq: int
    redactions: tuple[Redaction, ...] = ()


@dataclass(slots=True)
class Changed:
    """A memory after a change that may have had nothing to do (relate, decay): changed says whether it did."""

    memory: Memory
    seq: int
    changed: bool


@dataclass(slots=True)
class Contradiction:
    """A flagged pair: the newer memory (carrying the contradicts relation), the older, a score and why; its kind
    (contradiction, or update: the newer states the change and accepting it supersedes the older) and the rule (or
    model) that raised it."""

    memory: Memory
    other: Memory
    score: float
    why: str
    kind: str = "contradiction"
    rule: str = ""


@dataclass(frozen=True, slots=True)
class History:
    """Every version of a memory, oldest first (the last is the current one), and every log entry about it."""

    memory_id: str
    versions: list[MemoryVersion]
    seqs: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Expiring:
    """An active memory whose expiry time is due."""

    namespace: str
    id: str
    version: int
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """Counts of one namespace: by owning agent, type, status and team (every status), plus the index's state."""

    memories: int  # active memories
    total: int  # every memory, whatever its status
    by_agent: dict[str, int]
    by_type: dict[str, int]
    by_status: dict[str, int]
    by_team: dict[str, int]
    applied_seq: int
    log_last_seq: int


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """One agent of a namespace as the log knows it (the agent registry)."""

    agent_id: str
    first_seen: float | None
    last_seen: float | None
    memories: int  # active memories it owns
    devices: list[str] = field(default_factory=list)
    clients: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)
    writes: int = 0  # log entries it wrote


@dataclass(frozen=True, slots=True)
class TeamInfo:
    """One team of a namespace: its active memories, the agents owning them and its current team summary."""

    team: str
    memories: int
    agents: list[str] = field(default_factory=list)
    summary_id: str = ""
    last_activity: float | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """A consolidation job: what it is, how it went, and its result (a JSON object)."""

    id: str
    kind: str  # one of engram.grpc.clients.JOB_KINDS
    state: str  # running, succeeded, failed
    namespace: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    summary: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    done: int = 0  # progress: items handled so far ...
    total: int = 0  # ... of this many (0: not known yet)
    phase: str = ""  # what it does now (for `all`: the kind running)
    runner: str = ""  # the consolidation replica that runs it


@dataclass(slots=True)
class Pushed:
    """The cluster's answer to one change an edge device pushed."""

    source_id: str
    accepted: bool
    seq: int = 0  # its server sequence (of the first copy, for a duplicate)
    version: int = 0  # the version it became on the cluster
    reason: str = ""  # why it was rejected
    conflict: bool = False  # made on an older version than the cluster's: both kept, this one is head
    duplicate: bool = False  # the cluster already had it: nothing written
    redacted: list[str] = field(default_factory=list)  # the kinds of secrets scrubbed from it before it was stored


@dataclass(slots=True)
class SyncChange:
    """One mutation travelling between a device and its cluster: an event body (docs/events.md) as JSON bytes."""

    source_id: str
    event: str
    body: bytes
    seq: int = 0  # the cluster's sequence (pull) or the device's (push)
    parent: str = ""  # push: what it was made on ("", "server:<version>", or a source_id)


@dataclass(slots=True)
class SyncPage:
    """A page of a namespace's changes after a cursor."""

    changes: list[SyncChange]
    cursor: int
    has_more: bool
    last_seq: int


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A log entry the search index could not apply and set aside (services/search/quarantine.py)."""

    seq: int
    namespace: str
    memory_id: str  # "" when the entry names none
    event: str
    error: str  # why it could not be applied
    at: float  # when it was set aside (epoch seconds)
