"""The MCP server: the memory operations registered as tools, with descriptions that tell an agent when to use them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any, Literal, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from engram import metrics
from engram.config import DEFAULT_SEARCH_LIMIT, Settings
from engram.errors import EngramError, InvalidArgument
from engram.log import Log
from engram.model import SENSITIVITIES, Caller
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import MCP_SOURCE, RequestIdentity, Resolver
from engram.services.gateway.operations import Operations
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.pack_tools import register_pack_tools
from engram.services.gateway.resources import register_context_features, tool_errors
from engram.services.gateway.schemas.arguments import (
    DEFAULT_CONTRADICTIONS,
    DEFAULT_LIST_LIMIT,
    ActiveFiles,
    AsOf,
    CategoryArg,
    ConfidenceArg,
    ConsolidatedContent,
    Content,
    ContextArg,
    ContradictionLimit,
    ContradictionTopics,
    ConversationId,
    CreatedAfter,
    CreatedBefore,
    DecisionsMade,
    ExpectedVersion,
    ExpiresAt,
    Explain,
    FilterTags,
    FilterTopics,
    ForceArg,
    HandoffContext,
    HandoffNote,
    HandoffRole,
    HandoffStatusArg,
    HandoffTarget,
    ImportanceArg,
    IncludeArchived,
    InvalidAt,
    JobKindArg,
    ListLimit,
    MemoryId,
    MemoryIds,
    MemoryTypeArg,
    Metadata,
    MinSeq,
    NewId,
    NextSteps,
    OwnerAgent,
    PackArg,
    PackCategoryArg,
    PackFilter,
    PackSummaryArg,
    PageToken,
    PointInTime,
    Project,
    Query,
    Rerank,
    SearchLimit,
    SelectorTag,
    SelectorTopic,
    SensitivityArg,
    Sources,
    StatusFilter,
    Summary,
    Tags,
    TargetAgent,
    Team,
    TeamFilter,
    TeamName,
    TeamSearch,
    Topics,
    TypeFilter,
    ValidAt,
)
from engram.services.gateway.schemas.requests import (
    CONSOLIDATE_RULE,
    DELETE_RULE,
    SUPERSEDE_RULE,
    UPDATE_RULE,
    Filters,
    HandoffListRequest,
    HandoffMoveRequest,
    HandoffRequest,
    ListRequest,
    SaveRequest,
    SearchRequest,
    SupersedeRequest,
    UpdateRequest,
)
from engram.services.gateway.schemas.results import (
    ENGRAM_VERSION,
    AgentsResult,
    ConsolidateMemoryResult,
    ConsolidateResult,
    ContradictionsResult,
    DeleteResult,
    HistoryResult,
    ListResult,
    MemoryOut,
    MemoryStatsOut,
    PingResult,
    SaveResult,
    SearchResult,
    SupersedeResult,
    TeamsResult,
)
from engram.services.gateway.schemas.validation import describe_validation

_LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

# --- MCP ---------------------------------------------------------------------------------------------------

INSTRUCTIONS = """\
Engram is shared long-term memory for AI agents. What any agent saves here, every agent working for the same \
person or team (the same namespace) can recall later, from any client, device or session.

- Call search_memory at the start of a task, and before answering questions about the user, their \
preferences, the project, or decisions made in the past. Prior agents may already know the answer.
- Call save_memory whenever you learn something worth keeping: a fact, a preference, a decision and its \
reason, a finding, a blocker, an action item, or a handoff for another agent. Save one self-contained \
statement per memory, written so that a reader without this conversation understands it.
- Read all, write own: every agent of the namespace reads every memory, but only the agent that saved a \
memory changes it. When a memory of yours is out of date, call update_memory to correct it in place, \
supersede_memory when a new fact or decision replaces it (the old one stays in the record, marked \
superseded), and delete_memory when it was wrong or is no longer wanted (it is archived, not erased). To \
change another agent's memory, save your own version instead.
- Never save secrets: API keys, tokens and passwords are redacted before storage.
- Use get_memory for one memory by id (with its earlier versions), memory_history for who changed it and when, \
memory_at for a memory as it was at a past time, list_memories for the most recent ones, get_memory_stats for \
counts, ping to check the connection and who you are (agent@device, team).
- Working with other agents: call list_handoffs at the start of a session to see work handed to you, and \
accept_handoff / complete_handoff as you take it on and finish it. When you stop before the work is done, \
create_handoff for the agent that continues. list_agents shows who else works here, list_teams the teams and \
their summaries, consolidate_team writes a fresh summary of a team's memories. When you save a finding that \
another agent already recorded, the answer warns you: read theirs, then supersede or reconcile.
- Keeping memory tidy: consolidate_memory replaces a set of memories (by ids, or a type, tag or topic) with your \
summary of them, or runs a maintenance job (kind: dedupe, contradictions, ...). detect_contradictions lists pairs \
of memories that disagree; tell the user about them: only the user resolves them.
"""


_READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
# Rules across arguments that a tool's signature cannot state, published in its input schema (as REST does).
_INPUT_RULES = {
    "update_memory": UPDATE_RULE, "supersede_memory": SUPERSEDE_RULE, "consolidate_memory": CONSOLIDATE_RULE,
    "delete_memory": DELETE_RULE,
}  # fmt: skip

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
full memory; filters narrow by tags, type, owner agent, topics, project, team, status and creation time. Only \
active memories are searched unless you ask for others (include_archived, status). With as_of (an RFC 3339 \
time) it searches the memories as they were then: their content then, the ones active then and valid in the \
world then; use it to answer "what did we know or decide at that time?"."""

GET_DESCRIPTION = """\
Fetch one memory by id: its complete, current content and fields, its status (active, archived, expired, \
superseded; a superseded one names its replacement in superseded_by), and its earlier versions in `history` \
(oldest first). Use it when a search hit, a handoff or another memory refers to an id, and to read the \
current `version` before changing a memory with expected_version."""

UPDATE_DESCRIPTION = """\
Correct or complete one of your own memories in place: a new version with the fields you pass changed; \
fields you leave out keep their value (lists and metadata are replaced whole). Use it when a memory you saved \
is wrong, imprecise or missing a tag. Only the agent that saved a memory may update it (read all, write own): \
for another agent's memory, save your own version instead. When the world changed (a new decision replaces an \
old one), use supersede_memory, so the old one stays on record. Pass expected_version (the version you read) to \
fail instead of overwriting a change made since. Returns the memory at its new version; the earlier versions \
stay in its history."""

DELETE_DESCRIPTION = """\
Delete one of your own memories that is wrong or no longer wanted: it is archived, so search and lists stop \
returning it, but it stays readable by id and in its history (reversible: nothing is erased). Only the agent \
that saved it may delete it. Prefer supersede_memory when a newer memory replaces it. Erasing a memory for \
good (purge) is not a tool: an administrator does it with `engram admin purge`. Two forms: by id, or (an expert \
pack's memory, as the pack tools' seed does) by name (the pack), category and summary as memory/_index.md shows \
it."""

SUPERSEDE_DESCRIPTION = """\
Replace an outdated memory of yours (a fact that changed, a decision that was revised) with a new one: pass \
old_id and either content (plus any save_memory field) for a new memory, or new_id of an existing memory that \
replaces it. The old memory is marked superseded and names its replacement (superseded_by); it leaves search \
but stays on record, so memory_at and search with as_of still show what was known before. If the old memory was \
superseded already, the head of its chain (the memory that currently replaces it) is the one replaced. Returns \
the replacing memory and the superseded one."""

HISTORY_DESCRIPTION = """\
Every version of a memory, oldest first (the last is the current one): its content then, who changed it \
(agent_id), from which client (source), when, the change (event: memory_saved, memory_updated, \
memory_deleted, memory_superseded, memory_expired) and the status it left. Use it to see how a fact or \
decision evolved, or who changed it."""

MEMORY_AT_DESCRIPTION = """\
A memory as it was at a past time (RFC 3339): the version that was current then. Use it to see what a memory \
said when a decision was made, or before it was updated or superseded. Fails if the memory did not exist yet \
at that time."""

STATS_DESCRIPTION = """\
Counts of the memories of your namespace: active and total, by owning agent, by type, by status and by team. \
Use it to get an overview of what the shared memory holds, or to see which agents contribute to it."""

LIST_DESCRIPTION = """\
List memories of your namespace, most recent first, optionally filtered. Use it to see what was saved \
lately (e.g. to catch up at the start of a session) or to browse by tag or type when you have no query; \
use search_memory when you are looking for something specific."""

PING_DESCRIPTION = """\
Check that Engram is reachable and see who you are to it: your agent id, device and team (identity \
agent@device, as other agents see you), namespace and scopes. Use it when a memory tool fails unexpectedly, \
or to confirm which agent id and team your memories are saved under."""

LIST_AGENTS_DESCRIPTION = """\
The agents that share this memory: for each, when it was first and last seen, how many active memories it \
owns, the devices and clients it wrote from, its teams and how many writes it made. Use it to find out who \
else works here (e.g. before creating a handoff, to name its target) or who recorded something."""

LIST_TEAMS_DESCRIPTION = """\
The teams of this namespace: for each, its active memories, the agents owning them, its current team summary \
(summary_id) and its latest activity. With `search`, also the team summaries matching it (e.g. "what did the \
auth team learn about sessions?"). Use it to get the overview of a team's work before joining in."""

CONSOLIDATE_DESCRIPTION = """\
Write a fresh summary of a team's memories: a Markdown digest grouped by finding, decision, hypothesis, \
blocker, action item and other, saved as a searchable team-summary memory tagged team:<name>. It replaces \
(supersedes) the team's previous summary, so running it again does not duplicate. Use it at the end of a \
stretch of team work, or before handing the team's work over. `team` defaults to yours."""

CONSOLIDATE_MEMORY_DESCRIPTION = """\
Keep the shared memory tidy, in one of two ways. (1) Replace a set of memories with your summary of them: pass \
consolidated_content and either memory_ids or a selector (memory_type, tag and/or topic: every active memory \
matching it, at most 100). The summary is saved as a new memory (of that memory_type, else general, with the tag \
and topic) and the originals are archived with a merged-into relation to it, so they leave search but stay \
readable by id. Use it when many small memories of a category say what one summary can; read them first \
(list_memories, get_memory) so the summary keeps every fact. Only your own memories merge unless an admin passes \
force. (2) Run a maintenance job on the namespace: pass kind (dedupe merges near-duplicates, contradictions \
flags memories that disagree, expire, decay, team_summary, enrich_backfill, or all); it answers once the job has \
ended, with its summary and result."""

DETECT_CONTRADICTIONS_DESCRIPTION = """\
List the open contradictions of this namespace: pairs of active memories that seem to disagree (e.g. two \
different ports for the same API), each with a score and why, flagged by the contradictions job (run it with \
consolidate_memory kind=contradictions). Use it before relying on a fact that may have changed, and tell the \
user about the pairs you find: only the user resolves a contradiction (keep both, keep the newer, merge, or \
override), from the REST API or `engram contradictions resolve` with an admin key; agents cannot."""

CREATE_HANDOFF_DESCRIPTION = """\
Hand unfinished work over to another agent: where it stands (context), and optionally the files being worked \
on, the decisions made so far and the next steps. Use it when you stop before the work is done and another \
agent (or you, on another device or in a later session) should continue. The target finds it with \
list_handoffs and accepts, then completes it; a handoff nobody accepts expires (by default after 24 hours) \
and stays as a plain memory. Returns the saved handoff memory."""

LIST_HANDOFFS_DESCRIPTION = """\
Handoffs: by default the pending ones handed to you. Call it at the start of a session to pick up work other \
agents left for you; role from_me shows the ones you created (and whether they were taken up), status all \
every state. Each is a memory whose `handoff` says its target, status (pending, accepted, completed, \
expired) and when a pending one expires; its content holds the context, files, decisions and next steps."""

ACCEPT_HANDOFF_DESCRIPTION = """\
Accept a handoff addressed to you: tells its author and every other agent that you took the work over (it \
no longer expires). Only its target agent may. Call it when you start on a handoff from list_handoffs; \
complete_handoff when the work is done."""

COMPLETE_HANDOFF_DESCRIPTION = """\
Mark a handoff addressed to you as completed, optionally with a note on the outcome. Only its target agent \
may. Call it when the handed-over work is done (a pending handoff may be completed directly)."""

# Saves through one MCP session remember the previous memory's content, as the context of the next save that has
# none (issue 8: the previous turn lifts recall); these bound what the gateway keeps for it.
MAX_REMEMBERED_SESSIONS = 1024
MAX_REMEMBERED_CHARS = 4000
STDIO_SESSION = "stdio"  # a stdio server serves one client: its whole life is one session


def _request_identity(ctx: Context) -> RequestIdentity:
    """The caller's hints: HTTP headers, query and peer (none over stdio) and MCP clientInfo.name."""
    context = ctx.request_context
    params = getattr(context.session, "client_params", None)
    client_name = params.client_info.name if params is not None and params.client_info else None
    return RequestIdentity.from_request(context.request, client_name)


class PreviousSaves:
    """The latest memory saved through each MCP session (least recently used sessions forgotten), as the context
    of the session's next save.

    Keyed by (session, namespace, agent), so a session whose requests change key or agent never passes one
    caller's memory to another."""

    def __init__(self, *, capacity: int = MAX_REMEMBERED_SESSIONS) -> None:
        self._latest: OrderedDict[tuple[str, str, str], tuple[str, str]] = OrderedDict()  # -> content, sensitivity
        self._capacity = capacity
        self._lock = threading.Lock()  # stdio and HTTP tools may run in worker threads

    def context_for(self, key: tuple[str, str, str], sensitivity: str | None) -> str | None:
        """The latest content of the session, unless it is more sensitive than the memory it would situate (its
        text would leave with that memory: a secret must never)."""
        with self._lock:
            latest = self._latest.get(key)
        if latest is None or _rank(latest[1]) > _rank(sensitivity or SENSITIVITIES[0]):
            return None
        return latest[0]

    def remember(self, key: tuple[str, str, str], content: str, sensitivity: str) -> None:
        with self._lock:
            self._latest[key] = (content[:MAX_REMEMBERED_CHARS], sensitivity)
            self._latest.move_to_end(key)
            while len(self._latest) > self._capacity:
                self._latest.popitem(last=False)


def _rank(sensitivity: str) -> int:
    """normal < private < secret; anything unknown counts as the most sensitive."""
    return SENSITIVITIES.index(sensitivity) if sensitivity in SENSITIVITIES else len(SENSITIVITIES)


def _session_key(ctx: Context, who: Caller) -> tuple[str, str, str] | None:
    """The MCP session of a request (stdio: the process), None when it has none (stateless, 2026-07-28 requests)."""
    request = ctx.request_context.request
    session = STDIO_SESSION if request is None else getattr(request, "headers", {}).get(MCP_SESSION_ID_HEADER)
    return (session, who.namespace, who.agent_id) if session else None


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
        return [tool.model_copy(update={"input_schema": _closed(tool.name, tool.input_schema)}) for tool in tools]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Calls a tool, counted and timed by tool and outcome (engram.metrics)."""
        tool = name if name in await self._known_arguments() else UNKNOWN_TOOL  # a bounded label
        started, outcome = time.perf_counter(), "internal"
        try:
            result = await self._checked_call(name, arguments, context)
            outcome = "error" if isinstance(result, CallToolResult) and result.is_error else "ok"
            return result
        except ToolError as e:
            outcome = tool_outcome(e)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"  # the client went away
            raise
        finally:
            metrics.MCP_TOOL_CALLS.labels(tool, outcome).inc()
            metrics.MCP_TOOL_DURATION.labels(tool).observe(time.perf_counter() - started)

    async def _checked_call(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None
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


UNKNOWN_TOOL = "unknown"


def tool_outcome(error: ToolError) -> str:
    """What a failed tool call counts as: the kind of the Engram error behind it (not_found, permission_denied, ...),
    invalid_argument for arguments that do not fit, internal for a crash."""
    if isinstance(error, UnexpectedToolError):
        return "internal"
    cause: BaseException | None = error.__cause__
    while cause is not None:
        if isinstance(cause, EngramError):
            return cause.code
        cause = cause.__cause__
    return "invalid_argument"  # unknown tools and arguments, values that fail validation


def _closed(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's input schema refusing unknown arguments, with its rules across arguments (the operations
    enforce the same rules)."""
    return {**schema, **_INPUT_RULES.get(tool, {}), "additionalProperties": False}


def build_mcp(
    backend: Backend, resolver: Resolver, cursors: CursorTracker, settings: Settings, *, event_log: Log | None = None
) -> MCPServer:
    """The Engram MCP server: save, search, get, list, update, delete and supersede memories, their history,
    a memory at a point in time, the namespace's stats, ping; the agents, teams and handoffs of the namespace; its
    consolidation (maintenance jobs, summaries that replace memories) and open contradictions."""
    server: MCPServer = EngramMCPServer(
        name="engram",
        title="Engram shared memory",
        instructions=INSTRUCTIONS,
        version=ENGRAM_VERSION,
        log_level=_mcp_log_level(settings.log_level),
    )
    ops = Operations(backend, cursors, settings)
    packs = PackService(backend, cursors)
    previous = PreviousSaves()

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
        with tool_errors():
            who = caller(ctx)
        session = _session_key(ctx, who)
        if session and settings.derive_context and context is None and not conversation_id:
            # Ingest derives the context of a conversation's saves; a session without one is derived here.
            context = previous.context_for(session, sensitivity)
        request = SaveRequest(
            content=content, tags=tags, topics=topics, memory_type=memory_type, importance=importance,
            summary=summary, metadata=metadata, team=team, project=project, conversation_id=conversation_id,
            sensitivity=sensitivity, confidence=confidence, valid_at=valid_at, invalid_at=invalid_at,
            expires_at=expires_at, handoff_target=handoff_target, context=context,
        )  # fmt: skip
        with tool_errors():
            result = await ops.save(who, request)
        if session:
            previous.remember(session, result.memory.content, result.memory.sensitivity)  # scrubbed content
        return result

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
        team: TeamFilter = None,
        status: StatusFilter = None,
        include_archived: IncludeArchived = False,
        as_of: AsOf = None,
        explain: Explain = False,
        rerank: Rerank = None,
        min_seq: MinSeq = None,
        sources: Sources = None,
        pack: PackFilter = None,
    ) -> SearchResult:
        filters = Filters(
            tags=tags, topics=topics, owner_agent=owner_agent, memory_type=memory_type, project=project,
            conversation_id=conversation_id, created_after=created_after, created_before=created_before, team=team,
            status=status, include_archived=include_archived, pack=pack,
        )  # fmt: skip
        request = SearchRequest(
            query=query, limit=limit, filters=filters, as_of=as_of, explain=explain, rerank=rerank, min_seq=min_seq,
            sources=sources,
        )  # fmt: skip
        with tool_errors():
            return await ops.search(caller(ctx), request)

    @server.tool(description=GET_DESCRIPTION, annotations=_READ)
    async def get_memory(id: MemoryId, ctx: Context) -> MemoryOut:
        with tool_errors():
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
        team: TeamFilter = None,
        status: StatusFilter = None,
        include_archived: IncludeArchived = False,
        page_token: PageToken = None,
        pack: PackFilter = None,
    ) -> ListResult:
        filters = Filters(
            tags=tags, memory_type=memory_type, owner_agent=owner_agent, topics=topics, project=project, team=team,
            status=status, include_archived=include_archived, pack=pack,
        )  # fmt: skip
        with tool_errors():
            return await ops.list(caller(ctx), ListRequest(limit=limit, filters=filters, page_token=page_token))

    @server.tool(description=UPDATE_DESCRIPTION, annotations=_WRITE)
    async def update_memory(
        id: MemoryId,
        ctx: Context,
        content: Content | None = None,
        summary: Summary = None,
        tags: Tags = None,
        topics: Topics = None,
        memory_type: MemoryTypeArg = None,
        importance: ImportanceArg = None,
        metadata: Metadata = None,
        team: Team = None,
        project: Project = None,
        sensitivity: SensitivityArg = None,
        confidence: ConfidenceArg = None,
        valid_at: ValidAt = None,
        invalid_at: InvalidAt = None,
        expires_at: ExpiresAt = None,
        context: ContextArg = None,
        expected_version: ExpectedVersion = None,
    ) -> SaveResult:
        request = UpdateRequest(
            content=content, summary=summary, tags=tags, topics=topics, memory_type=memory_type,
            importance=importance, metadata=metadata, team=team, project=project, sensitivity=sensitivity,
            confidence=confidence, valid_at=valid_at, invalid_at=invalid_at, expires_at=expires_at, context=context,
            expected_version=expected_version,
        )  # fmt: skip
        with tool_errors():
            return await ops.update(caller(ctx), id, request)

    @server.tool(description=DELETE_DESCRIPTION, annotations=_DELETE)
    async def delete_memory(
        ctx: Context,
        id: MemoryId | None = None,
        expected_version: ExpectedVersion = None,
        name: PackArg = None,
        category: PackCategoryArg = None,
        summary: PackSummaryArg = None,
    ) -> DeleteResult:
        with tool_errors():
            who = caller(ctx)
            if id is None:
                if name is None:
                    raise InvalidArgument("id", "give the memory's id, or a pack's name, category and summary.")
                memory = await packs.find_entry(who, name, category or "", summary or "")
                return await ops.delete(who, memory.id, expected_version=memory.version)
            if name is not None:
                raise InvalidArgument("name", "give either id or a pack's name, category and summary, not both.")
            return await ops.delete(who, id, expected_version=expected_version)

    @server.tool(description=SUPERSEDE_DESCRIPTION, annotations=_WRITE)
    async def supersede_memory(
        old_id: MemoryId,
        ctx: Context,
        content: Content | None = None,
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
        new_id: NewId = None,
        expected_version: ExpectedVersion = None,
    ) -> SupersedeResult:
        request = SupersedeRequest(
            content=content, tags=tags, topics=topics, memory_type=memory_type, importance=importance,
            summary=summary, metadata=metadata, team=team, project=project, conversation_id=conversation_id,
            sensitivity=sensitivity, confidence=confidence, valid_at=valid_at, invalid_at=invalid_at,
            expires_at=expires_at, handoff_target=handoff_target, context=context, new_id=new_id,
            expected_version=expected_version,
        )  # fmt: skip
        with tool_errors():
            return await ops.supersede(caller(ctx), old_id, request)

    @server.tool(description=HISTORY_DESCRIPTION, annotations=_READ)
    async def memory_history(id: MemoryId, ctx: Context) -> HistoryResult:
        with tool_errors():
            return await ops.history(caller(ctx), id)

    @server.tool(description=MEMORY_AT_DESCRIPTION, annotations=_READ)
    async def memory_at(id: MemoryId, time: PointInTime, ctx: Context) -> MemoryOut:
        with tool_errors():
            return await ops.memory_at(caller(ctx), id, time)

    @server.tool(description=STATS_DESCRIPTION, annotations=_READ)
    async def get_memory_stats(ctx: Context) -> MemoryStatsOut:
        with tool_errors():
            return await ops.stats(caller(ctx))

    @server.tool(description=PING_DESCRIPTION, annotations=_READ)
    async def ping(ctx: Context) -> PingResult:
        with tool_errors():
            who = caller(ctx)
        return PingResult(
            ok=True, agent=who.agent_id, device=who.device, team=who.team, identity=who.identity,
            namespace=who.namespace, source=who.source, scopes=sorted(who.scopes), version=ENGRAM_VERSION,
        )  # fmt: skip

    @server.tool(description=LIST_AGENTS_DESCRIPTION, annotations=_READ)
    async def list_agents(ctx: Context) -> AgentsResult:
        with tool_errors():
            return await ops.agents(caller(ctx))

    @server.tool(description=LIST_TEAMS_DESCRIPTION, annotations=_READ)
    async def list_teams(
        ctx: Context, search: TeamSearch = None, limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    ) -> TeamsResult:
        with tool_errors():
            return await ops.teams(caller(ctx), search=search, limit=limit)

    @server.tool(description=CONSOLIDATE_DESCRIPTION, annotations=_WRITE)
    async def consolidate_team(ctx: Context, team: TeamName = None) -> ConsolidateResult:
        with tool_errors():
            return await ops.consolidate_team(caller(ctx), team)

    @server.tool(description=CONSOLIDATE_MEMORY_DESCRIPTION, annotations=_WRITE)
    async def consolidate_memory(
        ctx: Context,
        kind: JobKindArg = None,
        consolidated_content: ConsolidatedContent = None,
        memory_ids: MemoryIds = None,
        memory_type: CategoryArg = None,
        tag: SelectorTag = None,
        topic: SelectorTopic = None,
        force: ForceArg = False,
        name: PackArg = None,
        category: PackCategoryArg = None,
        summary: PackSummaryArg = None,
    ) -> ConsolidateMemoryResult:
        with tool_errors():
            if name is not None:
                if kind is not None:
                    raise InvalidArgument("name", "only goes with consolidated_content (a pack's category summary).")
                survivor, merged = await packs.consolidate(
                    caller(ctx), name, category or "", consolidated_content or "", summary or "", force=force
                )
                return ConsolidateMemoryResult(survivor=MemoryOut.of(survivor), merged_ids=merged, seq=survivor.seq)
            return await ops.consolidate_memory(
                caller(ctx), kind=kind, consolidated_content=consolidated_content, memory_ids=memory_ids,
                memory_type=memory_type, tag=tag, topic=topic, force=force,
            )  # fmt: skip

    @server.tool(description=DETECT_CONTRADICTIONS_DESCRIPTION, annotations=_READ)
    async def detect_contradictions(
        ctx: Context, topics: ContradictionTopics = None, limit: ContradictionLimit = DEFAULT_CONTRADICTIONS
    ) -> ContradictionsResult:
        with tool_errors():
            return await ops.contradictions(caller(ctx), topics=topics, limit=limit)

    @server.tool(description=CREATE_HANDOFF_DESCRIPTION, annotations=_WRITE)
    async def create_handoff(
        target_agent: TargetAgent,
        context: HandoffContext,
        ctx: Context,
        active_files: ActiveFiles = None,
        decisions_made: DecisionsMade = None,
        next_steps: NextSteps = None,
        tags: Tags = None,
        team: Team = None,
        project: Project = None,
        importance: ImportanceArg = None,
    ) -> SaveResult:
        request = HandoffRequest(
            target_agent=target_agent, context=context, active_files=active_files, decisions_made=decisions_made,
            next_steps=next_steps, tags=tags, team=team, project=project, importance=importance,
        )  # fmt: skip
        with tool_errors():
            return await ops.create_handoff(caller(ctx), request)

    @server.tool(description=LIST_HANDOFFS_DESCRIPTION, annotations=_READ)
    async def list_handoffs(
        ctx: Context,
        status: HandoffStatusArg = "pending",
        role: HandoffRole = "to_me",
        limit: ListLimit = DEFAULT_LIST_LIMIT,
        page_token: PageToken = None,
    ) -> ListResult:
        request = HandoffListRequest(status=status, role=role, limit=limit, page_token=page_token)
        with tool_errors():
            return await ops.handoffs(caller(ctx), request)

    @server.tool(description=ACCEPT_HANDOFF_DESCRIPTION, annotations=_WRITE)
    async def accept_handoff(
        id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        with tool_errors():
            return await ops.move_handoff(caller(ctx), id, "accepted", request)

    @server.tool(description=COMPLETE_HANDOFF_DESCRIPTION, annotations=_WRITE)
    async def complete_handoff(
        id: MemoryId, ctx: Context, note: HandoffNote = None, expected_version: ExpectedVersion = None
    ) -> SaveResult:
        request = HandoffMoveRequest(note=note, expected_version=expected_version)
        with tool_errors():
            return await ops.move_handoff(caller(ctx), id, "completed", request)

    register_context_features(
        server, backend=backend, cursors=cursors, settings=settings, caller=caller, event_log=event_log, packs=packs
    )
    register_pack_tools(server, packs, settings, caller)
    return server
