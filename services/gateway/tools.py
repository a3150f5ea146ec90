"""The gateway's memory operations and the MCP server that exposes them as tools."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Annotated, Any, Literal, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engram import __version__
from engram.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, Settings
from engram.errors import EngramError, ImportStopped, InvalidArgument
from engram.model import (
    CONFIDENCES,
    IMPORTANCES,
    MEMORY_TYPES,
    SENSITIVITIES,
    Caller,
    Memory,
    MemoryInput,
    SearchFilter,
    parse_time,
)
from engram.names import AGENT_PATTERN, AGENT_RULE
from engram.results import ImportItem
from engram.services.gateway.backend import Backend, redactions_json
from engram.services.gateway.backend import metadata_json as encode_metadata
from engram.services.gateway.identity import MCP_SOURCE, RequestIdentity, Resolver, require_scope
from engram.services.ingest.validation import MAX_FIELD_CHARS, MAX_LABEL_CHARS, MAX_LIST_ITEMS, MAX_SUMMARY_CHARS

ENGRAM_VERSION = __version__

DEFAULT_LIST_LIMIT = 20
MAX_SEQ = 2**63 - 1  # log sequences and line numbers travel as 64-bit integers
_LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

INSTRUCTIONS = """\
Engram is shared long-term memory for AI agents. What any agent saves here, every agent working for the same \
person or team (the same namespace) can recall later, from any client, device or session.

- Call search_memory at the start of a task, and before answering questions about the user, their \
preferences, the project, or decisions made in the past. Prior agents may already know the answer.
- Call save_memory whenever you learn something worth keeping: a fact, a preference, a decision and its \
reason, a finding, a blocker, an action item, or a handoff for another agent. Save one self-contained \
statement per memory, written so that a reader without this conversation understands it.
- Never save secrets: API keys, tokens and passwords are redacted before storage.
- Use get_memory for one memory by id, list_memories for the most recent ones, ping to check the connection.
"""

# Enum values come from the model, so the published schemas can never drift from what ingest accepts.
MemoryTypeName = Literal[MEMORY_TYPES]  # type: ignore[valid-type]
ImportanceName = Literal[IMPORTANCES]  # type: ignore[valid-type]
SensitivityName = Literal[SENSITIVITIES]  # type: ignore[valid-type]
ConfidenceName = Literal[CONFIDENCES]  # type: ignore[valid-type]

# --- argument types shared by the MCP tools and the REST bodies -------------------------------------------

Content = Annotated[
    str,
    Field(
        min_length=1,
        pattern=r"\S",
        description="The memory: one self-contained statement, e.g. 'The user prefers tabs over spaces.'",
    ),
]
# The limits ingest enforces are published in the schemas too, so clients (and fuzzers) know them up front.
Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]
Tags = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Short labels for filtering, e.g. ['billing', 'api']."),
]
Topics = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Subjects the memory is about, e.g. ['authentication']."),
]
MemoryTypeArg = Annotated[MemoryTypeName | None, Field(description="Kind of memory; default 'general'.")]
ImportanceArg = Annotated[ImportanceName | None, Field(description="How much it matters; default 'normal'.")]
SensitivityArg = Annotated[
    SensitivityName | None,
    Field(description="'private' stays in the namespace; 'secret' never leaves this device. Default 'normal'."),
]
ConfidenceArg = Annotated[
    ConfidenceName | None,
    Field(description="'stated' (the user said so, the default) or 'inferred' (your conclusion)."),
]
Summary = Annotated[
    str | None, Field(max_length=MAX_SUMMARY_CHARS, description="Optional one-line summary of a long memory.")
]
Metadata = Annotated[
    dict[str, Any] | None,
    Field(description="Free key-value data, returned exactly as given (any JSON object)."),
]
Team = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Team the memory belongs to.")]
Project = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Project the memory belongs to.")]
ConversationId = Annotated[
    str | None, Field(max_length=MAX_FIELD_CHARS, description="Conversation or session the memory came from.")
]
_TIME = {"format": "date-time"}
ValidAt = Annotated[
    str | None, Field(json_schema_extra=_TIME, description="RFC 3339 time from which the memory is true.")
]
InvalidAt = Annotated[
    str | None, Field(json_schema_extra=_TIME, description="RFC 3339 time from which the memory is no longer true.")
]
ExpiresAt = Annotated[
    str | None, Field(json_schema_extra=_TIME, description="RFC 3339 time after which the memory is expired.")
]
HandoffTarget = Annotated[
    str | None,
    Field(
        pattern=f"^{AGENT_PATTERN}$",
        description="Agent id this memory hands work over to (makes it a pending handoff).",
    ),
]
ContextArg = Annotated[
    str | None,
    Field(description="Text that situates the memory (e.g. the preceding turn); searched with it, not part of it."),
]
SourceName = Literal["dense", "bm25", "questions"]
Sources = Annotated[
    list[SourceName] | None,
    Field(description="Retrievers to use: dense (meaning), bm25 (exact words), questions; default all."),
]
Query = Annotated[
    str, Field(min_length=1, pattern=r"\S", description="What to look for, in natural language or keywords.")
]
SearchLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Number of hits (1-100).")]
ListLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Number of memories (1-100).")]
FilterTags = Annotated[list[str] | None, Field(description="Only memories that have all of these tags.")]
FilterTopics = Annotated[list[str] | None, Field(description="Only memories about any of these topics.")]
OwnerAgent = Annotated[
    str | None, Field(max_length=MAX_FIELD_CHARS, description="Only memories saved by this agent id.")
]
TypeFilter = Annotated[
    MemoryTypeName | list[MemoryTypeName] | None,
    Field(description="Only memories of this type (or any of these)."),
]
CreatedAfter = Annotated[
    str | None, Field(json_schema_extra=_TIME, description="Only memories created after this RFC 3339 time.")
]
CreatedBefore = Annotated[
    str | None, Field(json_schema_extra=_TIME, description="Only memories created before this RFC 3339 time.")
]
Explain = Annotated[bool, Field(description="Add each ranking stage's rank and score to every hit.")]
Rerank = Annotated[
    bool | None, Field(description="Force the cross-encoder reranker on or off; omit for the server default.")
]
MinSeq = Annotated[
    int | None,
    Field(
        ge=0,
        le=MAX_SEQ,
        description="Wait until the index has applied this log sequence (a `seq` from save_memory).",
    ),
]
PageToken = Annotated[
    str | None, Field(description="next_page_token of the previous page, passed back unchanged; omit for the first.")
]
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        json_schema_extra={"format": "uuid"},
        description="The memory's id (a UUID), as returned by save or search.",
    ),
]


# --- results ------------------------------------------------------------------------------------------------


class MemoryVersionOut(BaseModel):
    """An earlier version of a memory."""

    version: int
    content: str
    summary: str = ""
    agent_id: str = ""
    source: str = ""
    updated_at: str | None = None
    seq: int = 0
    conflict: bool = False


class RelationOut(BaseModel):
    kind: str
    memory_id: str
    note: str = ""


class HandoffOut(BaseModel):
    target_agent: str
    status: str = "pending"
    updated_at: str | None = None


class OriginOut(BaseModel):
    device: str = ""
    source_id: str = ""


class MemoryOut(BaseModel):
    """A memory as every API shows it (``Memory.to_dict()``): RFC 3339 times, metadata exactly as saved."""

    # Fields added to the model later pass through instead of being dropped.
    model_config = ConfigDict(extra="allow")

    id: str
    namespace: str
    content: str
    owner_agent: str
    summary: str = ""
    memory_type: str = "general"
    confidence: str = "stated"
    topics: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    importance: str = "normal"
    source: str = ""
    team: str = ""
    project: str = ""
    conversation_id: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    sensitivity: str = "normal"
    created_at: str | None = None
    updated_at: str | None = None
    valid_at: str | None = None
    invalid_at: str | None = None
    expires_at: str | None = None
    version: int = 1
    history: list[MemoryVersionOut] = Field(default_factory=list)
    status: str = "active"
    superseded_by: str = ""
    relations: list[RelationOut] = Field(default_factory=list)
    handoff: HandoffOut | None = None
    questions: list[str] = Field(default_factory=list)
    access_count: int = 0
    origin: OriginOut = Field(default_factory=OriginOut)
    seq: int = 0

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        return cls.model_validate(memory.to_dict())


class RedactionOut(BaseModel):
    kind: str = Field(description="What kind of secret was removed, e.g. 'api_key'.")
    count: int


class ImportRejectionOut(BaseModel):
    line: int
    reason: str


class ImportedOut(BaseModel):
    line: int
    id: str
    already_present: bool = Field(default=False, description="An earlier import stored it (same source_id).")


class ImportResult(BaseModel):
    imported: int = Field(description="How many memories were newly stored.")
    already_present: int = Field(
        default=0, description="Lines an earlier import already stored (same source_id): nothing new was written."
    )
    rejected: list[ImportRejectionOut] = Field(description="Lines that were not stored, and why.")
    last_line: int = Field(description="The last line the server processed; resume after it.")
    resume_from: int = Field(description="The line to send next (last_line + 1).")
    last_seq: int = Field(description="Log sequence of the last stored memory (a min_seq for reads).")
    items: list[ImportedOut] = Field(description="The id of each stored (or already present) line.")
    redactions: list[RedactionOut] = Field(default_factory=list)
    stopped: str | None = Field(
        default=None, description="Set when the import stopped before the end of its body: why (see resume_from)."
    )


class SaveResult(BaseModel):
    """What save_memory answers: the stored memory and what was redacted from it."""

    id: str
    version: int
    seq: int = Field(description="Log sequence of the write; pass it as min_seq to read it back anywhere.")
    memory: MemoryOut
    redactions: list[RedactionOut] = Field(description="Secrets removed before storing; empty if none.")


class StageRank(BaseModel):
    rank: int
    score: float


class HitOut(BaseModel):
    score: float = Field(description="Relevance; higher is better. Only comparable within one search.")
    memory: MemoryOut
    explain: dict[str, StageRank] | None = Field(
        default=None, exclude_if=lambda v: v is None, description="Per-stage rank and score (explain=true)."
    )


class SearchResult(BaseModel):
    hits: list[HitOut]
    applied_seq: int = Field(description="Log sequence the index had applied when it answered.")
    reranked: bool
    rerank_note: str | None = Field(default=None, exclude_if=lambda v: not v)


class ListResult(BaseModel):
    memories: list[MemoryOut] = Field(description="Most recent first.")
    next_page_token: str | None = Field(description="Pass it as page_token for the next page; null at the end.")


class PingResult(BaseModel):
    ok: bool
    agent: str = Field(description="The agent id your memories are saved under.")
    namespace: str
    source: str
    scopes: list[str]
    version: str


# --- requests (REST bodies; the MCP tools take the same fields flat) --------------------------------------


class SaveRequest(BaseModel):
    """A memory to save."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    tags: Tags = None
    topics: Topics = None
    memory_type: MemoryTypeArg = None
    importance: ImportanceArg = None
    summary: Summary = None
    metadata: Metadata = None
    team: Team = None
    project: Project = None
    conversation_id: ConversationId = None
    sensitivity: SensitivityArg = None
    confidence: ConfidenceArg = None
    valid_at: ValidAt = None
    invalid_at: InvalidAt = None
    expires_at: ExpiresAt = None
    handoff_target: HandoffTarget = None
    context: ContextArg = None


class ImportLineIn(SaveRequest):
    """One line of a bulk import: a save_memory object, plus an optional idempotency key."""

    source_id: Annotated[str | None, Field(max_length=256, description="Stored once per key (dedup window).")] = None


class Filters(BaseModel):
    """Constraints shared by search and list; omitted fields do not constrain."""

    model_config = ConfigDict(extra="forbid")

    tags: FilterTags = None
    topics: FilterTopics = None
    owner_agent: OwnerAgent = None
    memory_type: TypeFilter = None
    project: Project = None
    conversation_id: ConversationId = None
    created_after: CreatedAfter = None
    created_before: CreatedBefore = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Query
    limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    filters: Filters = Field(default_factory=Filters)
    explain: Explain = False
    rerank: Rerank = None
    min_seq: MinSeq = None
    sources: Sources = None


class ListRequest(BaseModel):
    limit: ListLimit = DEFAULT_LIST_LIMIT
    filters: Filters = Field(default_factory=Filters)
    page_token: PageToken = None
    min_seq: MinSeq = None


# --- operations ---------------------------------------------------------------------------------------------


class CursorTracker:
    """The highest log sequence this gateway process acknowledged per namespace.

    Reads ask the index to have applied at least this much, so a read through this gateway sees every
    write this gateway acknowledged before it (read-your-writes across agents of a namespace).
    """

    def __init__(self) -> None:
        self._seqs: dict[str, int] = {}
        self._lock = threading.Lock()  # stdio and HTTP may share one tracker across threads

    def observe(self, namespace: str, seq: int) -> None:
        """Records an acknowledged write."""
        with self._lock:
            if seq > self._seqs.get(namespace, 0):
                self._seqs[namespace] = seq

    def get(self, namespace: str) -> int:
        """The highest acknowledged sequence of ``namespace`` (0 if none)."""
        return self._seqs.get(namespace, 0)

    def min_seq(self, namespace: str, requested: int | None = None) -> int:
        """What a read waits for: the caller's ``min_seq`` or this gateway's cursor, whichever is later."""
        return max(self.get(namespace), requested or 0)


class Operations:
    """Save, search, get and list for an already resolved caller; shared by the MCP tools and REST."""

    def __init__(self, backend: Backend, cursors: CursorTracker) -> None:
        self._backend = backend
        self._cursors = cursors

    async def save(self, caller: Caller, request: SaveRequest) -> SaveResult:
        require_scope(caller, "write")
        outcome = await self._backend.save(caller, _draft(request))
        self._cursors.observe(caller.namespace, outcome.seq)
        return SaveResult(
            id=outcome.memory.id,
            version=outcome.memory.version,
            seq=outcome.seq,
            memory=MemoryOut.of(outcome.memory),
            redactions=[RedactionOut(**r) for r in redactions_json(outcome.redactions)],
        )

    async def search(self, caller: Caller, request: SearchRequest) -> SearchResult:
        require_scope(caller, "read")
        outcome = await self._backend.search(
            caller,
            request.query,
            limit=request.limit,
            flt=_filter(request.filters),
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
            explain=request.explain,
            rerank=request.rerank,
            sources=list(request.sources or []),
        )
        hits = [
            HitOut(
                score=hit.score,
                memory=MemoryOut.of(hit.memory),
                explain={stage: StageRank(rank=rank, score=score) for stage, (rank, score) in hit.explain.items()}
                if request.explain
                else None,
            )
            for hit in outcome.hits
        ]
        return SearchResult(
            hits=hits,
            applied_seq=outcome.applied_seq,
            reranked=outcome.reranked,
            rerank_note=outcome.rerank_note,
        )

    async def import_lines(
        self, caller: Caller, lines: AsyncIterator[tuple[int, bytes | EngramError]], *, first_line: int = 1
    ) -> ImportResult:
        """Bulk import of JSON lines: a bad line is rejected with its reason, the others are imported in order.

        ``lines`` gives each line's bytes, or the error that makes it unreadable (e.g. too long). If the import
        stops part-way (the body passes its limit, the log goes away) ImportStopped carries what was stored.
        """
        require_scope(caller, "write")
        rejected: list[ImportRejectionOut] = []
        handled = first_line - 1  # the last line this gateway rejected or handed to ingest
        stop: EngramError | None = None

        async def items() -> AsyncIterator[ImportItem]:
            nonlocal handled, stop
            try:
                async for number, raw in lines:
                    handled = number
                    if isinstance(raw, EngramError):
                        rejected.append(ImportRejectionOut(line=number, reason=str(raw)))
                        continue
                    if not raw.strip():
                        continue
                    try:
                        line = ImportLineIn.model_validate_json(raw)
                        draft = _draft(line)
                    except (ValidationError, InvalidArgument) as e:
                        rejected.append(ImportRejectionOut(line=number, reason=_reason(e)))
                        continue
                    yield ImportItem(number, draft, line.source_id or "")
            except EngramError as e:  # the body itself failed (e.g. passed its size limit): stop reading it
                stop = e

        outcome = await self._backend.import_memories(caller, items())
        if outcome.last_seq:
            self._cursors.observe(caller.namespace, outcome.last_seq)
        # Ingest stopping (log or disk gone) ends the import at its last line; lines read past it do not count.
        cause = outcome.stopped or stop
        last_line = outcome.last_line if outcome.stopped else max(handled, outcome.last_line)
        rejected = [r for r in rejected if r.line <= last_line]
        rejected.extend(ImportRejectionOut(line=line, reason=reason) for line, reason in outcome.rejected)
        result = ImportResult(
            imported=len(outcome.imported),
            already_present=len(outcome.present),
            rejected=sorted(rejected, key=lambda r: r.line),
            last_line=last_line,
            resume_from=last_line + 1,
            last_seq=outcome.last_seq,
            items=[
                ImportedOut(line=line, id=mid, already_present=present)
                for line, mid, _, present in sorted(
                    [(*item, False) for item in outcome.imported] + [(*item, True) for item in outcome.present]
                )
            ],
            redactions=[RedactionOut(**r) for r in redactions_json(outcome.redactions)],
            stopped=str(cause) if cause else None,
        )
        if cause is not None:
            raise ImportStopped(cause, result.model_dump(), last_line + 1)
        return result

    async def get(self, caller: Caller, memory_id: str, *, min_seq: int | None = None) -> MemoryOut:
        require_scope(caller, "read")
        memory = await self._backend.get(caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace, min_seq))
        return MemoryOut.of(memory)

    async def list(self, caller: Caller, request: ListRequest) -> ListResult:
        require_scope(caller, "read")
        outcome = await self._backend.list(
            caller,
            limit=request.limit,
            flt=_filter(request.filters),
            page_token=request.page_token or "",
            min_seq=self._cursors.min_seq(caller.namespace, request.min_seq),
        )
        return ListResult(
            memories=[MemoryOut.of(m) for m in outcome.memories],
            next_page_token=outcome.next_page_token or None,
        )


def _draft(request: SaveRequest) -> MemoryInput:
    return MemoryInput(
        content=request.content,
        summary=request.summary or "",
        memory_type=request.memory_type or "",
        confidence=request.confidence or "",
        topics=list(request.topics or []),
        tags=list(request.tags or []),
        importance=request.importance or "",
        team=request.team or "",
        project=request.project or "",
        conversation_id=request.conversation_id or "",
        metadata_json=encode_metadata(request.metadata),
        sensitivity=request.sensitivity or "",
        valid_at=_time("valid_at", request.valid_at),
        invalid_at=_time("invalid_at", request.invalid_at),
        expires_at=_time("expires_at", request.expires_at),
        handoff_target=request.handoff_target or "",
        context=request.context or "",
    )


def _filter(filters: Filters) -> SearchFilter:
    types = filters.memory_type
    return SearchFilter(
        tags=list(filters.tags or []),
        topics=list(filters.topics or []),
        owner_agent=filters.owner_agent or "",
        memory_types=[types] if isinstance(types, str) else list(types or []),
        project=filters.project or "",
        conversation_id=filters.conversation_id or "",
        created_after=_time("created_after", filters.created_after),
        created_before=_time("created_before", filters.created_before),
    )


def _reason(error: ValidationError | InvalidArgument) -> str:
    """One line saying what is wrong with an import line."""
    if isinstance(error, InvalidArgument):
        return str(error)
    return describe_validation(error.errors()[:3], where="line")


def describe_validation(errors: Sequence[Any], *, where: str = "request") -> str:
    """Pydantic errors as "field: what to fix; ..." (REST, MCP and import alike), without pydantic's URLs."""
    parts = []
    for item in errors:
        loc = tuple(item.get("loc", ()))
        if loc[:1] == ("body",) and len(loc) > 1:  # a REST body's fields are named as in MCP and import
            loc = loc[1:]
        location = ".".join(str(part) for part in loc) or where
        parts.append(f"{location}: {_fix(item)}")
    return "; ".join(parts) or f"The {where} is invalid."


def _fix(item: Any) -> str:
    kind = item.get("type", "")
    if kind == "extra_forbidden":
        return "is not a known field; check its spelling against the schema, or leave it out."
    if kind == "missing":
        return "is required."
    if kind == "string_pattern_mismatch" and (item.get("ctx") or {}).get("pattern") == f"^{AGENT_PATTERN}$":
        return f"{str(item.get('input'))[:40]!r} is not an agent id: {AGENT_RULE}"
    return str(item.get("msg", "is invalid")).rstrip(".") + "."


def _time(field: str, value: str | None) -> float | None:
    try:
        return parse_time(value)
    except ValueError as e:
        raise InvalidArgument(field, f"{value!r} is not an RFC 3339 time; use e.g. 2026-01-31T12:00:00Z.") from e


# --- MCP ---------------------------------------------------------------------------------------------------

_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

SAVE_DESCRIPTION = """\
Save a memory that you or other agents should be able to recall later. Use it whenever you learn \
something worth keeping: a fact about the user or the project, a preference, a decision and why it was made, \
a finding, a blocker, an action item, or a handoff of unfinished work to another agent. Save one \
self-contained statement per call, understandable without this conversation. Secrets are redacted \
before storage and listed in `redactions`. Returns the stored memory with its id and the log `seq` \
of the write."""

SEARCH_DESCRIPTION = """\
Search the shared memory of your namespace (hybrid semantic + keyword search). Use it at the start of every \
task, and before answering questions about the user, their preferences, the project or past decisions: \
other agents may already have recorded the answer. Returns the best hits with a relevance score and the \
full memory; filters narrow by tags, type, owner agent, topics, project and creation time."""

GET_DESCRIPTION = """\
Fetch one memory by id: its complete, current content and fields (earlier versions are not kept yet, so \
history is empty). Use it when a search hit, a handoff or another memory refers to an id."""

LIST_DESCRIPTION = """\
List memories of your namespace, most recent first, optionally filtered. Use it to see what was saved \
lately (e.g. to catch up at the start of a session) or to browse by tag or type when you have no query; \
use search_memory when you are looking for something specific."""

PING_DESCRIPTION = """\
Check that Engram is reachable and see who you are to it: your agent id, namespace and scopes. Use it when \
a memory tool fails unexpectedly, or to confirm which agent id your memories are saved under."""


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Service errors become tool errors, whose message tells the agent what to do next."""
    try:
        yield
    except EngramError as e:
        raise ToolError(str(e)) from e


def _request_identity(ctx: Context) -> RequestIdentity:
    """The caller's hints: HTTP headers and query (None over stdio) and MCP clientInfo.name."""
    context = ctx.request_context
    request = context.request
    params = getattr(context.session, "client_params", None)
    client_name = params.client_info.name if params is not None and params.client_info else None
    return RequestIdentity.from_http(
        getattr(request, "headers", None), getattr(request, "query_params", None), client_name
    )


def _mcp_log_level(level: str) -> _LogLevel:
    # MCPServer configures the root logger with this level; keep it the node's level.
    upper = level.upper()
    return upper if upper in get_args(_LogLevel) else "WARNING"  # type: ignore[return-value]


class EngramMCPServer(MCPServer):
    """An MCPServer whose tools refuse unknown arguments, as REST refuses unknown fields, and explain invalid
    ones as REST does ("field: what to fix"), not as raw pydantic text.

    The SDK builds each tool's argument model from its signature and ignores extra keys; here the published
    input schemas say ``additionalProperties: false`` and calls are held to it.
    """

    _arguments: dict[str, frozenset[str]] | None = None

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        return [tool.model_copy(update={"input_schema": _closed(tool.input_schema)}) for tool in tools]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        known = (await self._known_arguments()).get(name)
        unknown = sorted(set(arguments) - known) if known is not None else []
        if unknown and known is not None:
            takes = ", ".join(sorted(known)) or "no arguments"
            problems = [f"{arg}: is not an argument of {name}; it takes {takes}." for arg in unknown]
            raise ToolError(f"Error executing tool {name}: {'; '.join(problems)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            if isinstance(e, UnexpectedToolError) or not isinstance(e.__cause__, ValidationError):
                raise
            detail = describe_validation(e.__cause__.errors(), where="arguments")
            raise ToolError(f"Error executing tool {name}: {detail}") from e.__cause__

    async def _known_arguments(self) -> dict[str, frozenset[str]]:
        if self._arguments is None:
            tools = await super().list_tools()
            self._arguments = {t.name: frozenset(t.input_schema.get("properties", {})) for t in tools}
        return self._arguments


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "additionalProperties": False}


def build_mcp(backend: Backend, resolver: Resolver, cursors: CursorTracker, settings: Settings) -> MCPServer:
    """The Engram MCP server: save_memory, search_memory, get_memory, list_memories and ping."""
    server: MCPServer = EngramMCPServer(
        name="engram",
        title="Engram shared memory",
        instructions=INSTRUCTIONS,
        version=ENGRAM_VERSION,
        log_level=_mcp_log_level(settings.log_level),
    )
    ops = Operations(backend, cursors)

    def caller(ctx: Context) -> Caller:
        return resolver.resolve(_request_identity(ctx), default_source=MCP_SOURCE)

    @server.tool(description=SAVE_DESCRIPTION, annotations=_WRITE)
    async def save_memory(
        content: Content,
        ctx: Context,
        tags: Tags = None,
        topics: Topics = None,
        memory_type: MemoryTypeArg = None,
        importance: ImportanceArg = None,
        summary: Summary = None,
        metadata: Metadata = None,
        team: Team = None,
        project: Project = None,
        conversation_id: ConversationId = None,
        sensitivity: SensitivityArg = None,
        confidence: ConfidenceArg = None,
        valid_at: ValidAt = None,
        invalid_at: InvalidAt = None,
        expires_at: ExpiresAt = None,
        handoff_target: HandoffTarget = None,
        context: ContextArg = None,
    ) -> SaveResult:
        request = SaveRequest(
            content=content, tags=tags, topics=topics, memory_type=memory_type, importance=importance,
            summary=summary, metadata=metadata, team=team, project=project, conversation_id=conversation_id,
            sensitivity=sensitivity, confidence=confidence, valid_at=valid_at, invalid_at=invalid_at,
            expires_at=expires_at, handoff_target=handoff_target, context=context,
        )  # fmt: skip
        with _tool_errors():
            return await ops.save(caller(ctx), request)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=_READ)
    async def search_memory(
        query: Query,
        ctx: Context,
        limit: SearchLimit = DEFAULT_SEARCH_LIMIT,
        tags: FilterTags = None,
        topics: FilterTopics = None,
        owner_agent: OwnerAgent = None,
        memory_type: TypeFilter = None,
        project: Project = None,
        conversation_id: ConversationId = None,
        created_after: CreatedAfter = None,
        created_before: CreatedBefore = None,
        explain: Explain = False,
        rerank: Rerank = None,
        min_seq: MinSeq = None,
        sources: Sources = None,
    ) -> SearchResult:
        filters = Filters(
            tags=tags, topics=topics, owner_agent=owner_agent, memory_type=memory_type, project=project,
            conversation_id=conversation_id, created_after=created_after, created_before=created_before,
        )  # fmt: skip
        request = SearchRequest(
            query=query, limit=limit, filters=filters, explain=explain, rerank=rerank, min_seq=min_seq, sources=sources
        )
        with _tool_errors():
            return await ops.search(caller(ctx), request)

    @server.tool(description=GET_DESCRIPTION, annotations=_READ)
    async def get_memory(id: MemoryId, ctx: Context) -> MemoryOut:
        with _tool_errors():
            return await ops.get(caller(ctx), id)

    @server.tool(description=LIST_DESCRIPTION, annotations=_READ)
    async def list_memories(
        ctx: Context,
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        tags: FilterTags = None,
        memory_type: TypeFilter = None,
        owner_agent: OwnerAgent = None,
        topics: FilterTopics = None,
        project: Project = None,
        page_token: PageToken = None,
    ) -> ListResult:
        filters = Filters(tags=tags, memory_type=memory_type, owner_agent=owner_agent, topics=topics, project=project)
        with _tool_errors():
            return await ops.list(caller(ctx), ListRequest(limit=limit, filters=filters, page_token=page_token))

    @server.tool(description=PING_DESCRIPTION, annotations=_READ)
    async def ping(ctx: Context) -> PingResult:
        with _tool_errors():
            who = caller(ctx)
        return PingResult(
            ok=True, agent=who.agent_id, namespace=who.namespace, source=who.source,
            scopes=sorted(who.scopes), version=ENGRAM_VERSION,
        )  # fmt: skip

    return server
