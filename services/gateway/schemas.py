"""The gateway's published shapes: argument types shared by the MCP tools and the REST bodies, requests and
results. Enum values and limits come from the model and ingest, so the schemas cannot drift from what is accepted."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from engram import __version__
from engram.clients import JOB_KINDS, RESOLUTIONS
from engram.config import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from engram.model import (
    CONFIDENCES,
    HANDOFF_STATUSES,
    IMPORTANCES,
    MEMORY_TYPES,
    SENSITIVITIES,
    STATUSES,
    Handoff,
    Memory,
    MemoryVersion,
    Origin,
    Relation,
    format_time,
)
from engram.names import AGENT_PATTERN, IDENTITY_PATTERN, MAX_IDENTITY_CHARS, TEAM_PATTERN
from engram.results import AgentInfo, Contradiction, Job, TeamInfo
from engram.services.gateway.derived import DerivedModel
from engram.validation import MAX_FIELD_CHARS, MAX_LABEL_CHARS, MAX_LIST_ITEMS, MAX_SUMMARY_CHARS

ENGRAM_VERSION = __version__

DEFAULT_LIST_LIMIT = 20
MAX_SEQ = 2**53 - 1  # log sequences and line numbers: exact in any JSON number (a double), JavaScript included
# Versions count the changes of one memory; capped where JSON numbers are exact everywhere (JavaScript's, and
# the float64 that generic JSON tools read numbers as).
MAX_VERSION = 2**53 - 1

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

# Enum values come from the model, so the published schemas can never drift from what ingest accepts.
MemoryTypeName = Literal[MEMORY_TYPES]  # type: ignore[valid-type]
ImportanceName = Literal[IMPORTANCES]  # type: ignore[valid-type]
SensitivityName = Literal[SENSITIVITIES]  # type: ignore[valid-type]
ConfidenceName = Literal[CONFIDENCES]  # type: ignore[valid-type]
StatusName = Literal[STATUSES]  # type: ignore[valid-type]
HandoffStatusName = Literal[HANDOFF_STATUSES]  # type: ignore[valid-type]
JobKindName = Literal[JOB_KINDS]  # type: ignore[valid-type]
ResolutionName = Literal[RESOLUTIONS]  # type: ignore[valid-type]

# A duration from now, e.g. 30d: seconds, minutes, hours, days or weeks. Weeks have one digit less, so that
# every duration the pattern allows ends before the year 9999 (the last a time can be written in).
DURATION_PATTERN = r"^(?:[1-9][0-9]{0,5}[smhd]|[1-9][0-9]{0,4}w)$"

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
# Either form is published, so clients (and fuzzers) know both are accepted; the gateway parses them.
_EXPIRY = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": DURATION_PATTERN}]}
ExpiresAt = Annotated[
    Annotated[str, WithJsonSchema(_EXPIRY)] | None,
    Field(
        description="When the memory expires: an RFC 3339 time, or a duration from now such as 30d, 12h, 45m, "
        "90s or 2w. An expired memory leaves search and lists but stays readable by id and in its history."
    ),
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


def not_a_bool(value: object) -> object:
    """JSON Schema's integer takes 1 and 1.0, never true: pydantic would read true as 1."""
    if isinstance(value, bool):
        raise ValueError("give a whole number, not true or false")
    return value


# Counts: whole numbers (1 or 1.0, as JSON Schema's integer), never a boolean.
SearchLimit = Annotated[
    int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Number of hits (1-100)."), BeforeValidator(not_a_bool)
]
ListLimit = Annotated[
    int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Number of memories (1-100)."), BeforeValidator(not_a_bool)
]
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
# Booleans are strict (true or false, not 0.0 or "yes"), as the published schemas say; REST query parameters
# declare their own (text) booleans.
IncludeArchived = Annotated[
    bool, Field(strict=True, description="Also return archived (deleted) memories; by default only active ones are.")
]
StatusFilter = Annotated[
    StatusName | list[StatusName] | None,
    Field(description="Only memories in this status (or any of these): active, archived, expired, superseded. "
          "Default: active only."),
]  # fmt: skip
TeamFilter = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Only memories of this team.")]
PackArg = Annotated[
    str | None, Field(max_length=64, description="An expert pack's name: the pack form (with category and summary).")
]
PackCategoryArg = Annotated[
    str | None, Field(max_length=64, description="The pack memory's category, e.g. 'preferences' (pack form).")
]
PackSummaryArg = Annotated[
    str | None, Field(max_length=500, description="The summary as memory/_index.md shows it (pack form).")
]
PackFilter = Annotated[
    str | None,
    Field(
        max_length=64,
        description="Only the memories of this expert pack (see list_engrams): its knowledge, examples and what it "
        "remembered. Without it, pack files are left out (captured pack memories are not).",
    ),
]
AsOf = Annotated[
    str | None,
    Field(
        json_schema_extra=_TIME,
        description="Search the memories as they were at this RFC 3339 time: their content then, the ones "
        "active then and valid in the world then (valid_at <= time < invalid_at). Omit for now.",
    ),
]
Explain = Annotated[bool, Field(strict=True, description="Add each ranking stage's rank and score to every hit.")]
Rerank = Annotated[
    bool | None,
    Field(strict=True, description="Force the cross-encoder reranker on or off; omit for the server default."),
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
ExpectedVersion = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_VERSION,
        description="Change it only if it is still at this version (the `version` you last read); otherwise "
        "the call fails naming the current version, so you can read it again and retry. Omit to change it "
        "whatever its version.",
    ),
]
NewId = Annotated[
    str | None,
    Field(
        min_length=1,
        json_schema_extra={"format": "uuid"},
        description="An existing memory that replaces the old one (instead of content for a new one).",
    ),
]
PointInTime = Annotated[
    str,
    Field(
        json_schema_extra=_TIME,
        description="The RFC 3339 time to look at, e.g. 2026-01-31T12:00:00Z.",
    ),
]
TeamName = Annotated[
    str | None,
    Field(
        pattern=f"^{TEAM_PATTERN}$",
        description="The team; omit for your own (the X-Engram-Team header, the key's team, or ENGRAM_TEAM).",
    ),
]
TeamSearch = Annotated[
    str | None,
    Field(
        min_length=1,
        pattern=r"\S",
        description="Also search the teams' summaries for this (natural language or keywords).",
    ),
]
TargetAgent = Annotated[
    str,
    Field(
        pattern=f"^{IDENTITY_PATTERN}$",
        max_length=MAX_IDENTITY_CHARS,
        description="The agent id that takes the work over, e.g. 'gemini-cli'.",
    ),
]
HandoffContext = Annotated[
    str,
    Field(
        min_length=1,
        pattern=r"\S",
        description="Where the work stands and what the next agent must know to continue it; the first line "
        "becomes the handoff's summary.",
    ),
]
# A handoff lists more than a memory's labels (a change touches many files), each item a line of text.
MAX_HANDOFF_ITEMS = 100
HandoffItem = Annotated[str, Field(min_length=1, max_length=MAX_SUMMARY_CHARS)]
ActiveFiles = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="Files being worked on, e.g. ['src/auth/session.py']."),
]
DecisionsMade = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="Decisions taken so far, each with its reason."),
]
NextSteps = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="What to do next, in order."),
]
HandoffStatusChoice = HandoffStatusName | Literal["all"]
HandoffRoleName = Literal["to_me", "from_me", "all"]
HandoffStatusArg = Annotated[
    HandoffStatusChoice,
    Field(description="Only handoffs in this state: pending (default), accepted, completed, expired, or all."),
]
HandoffRole = Annotated[
    HandoffRoleName,
    Field(description="to_me (default): handed to you; from_me: created by you; all: every handoff here."),
]
HandoffNote = Annotated[
    str | None,
    Field(max_length=MAX_SUMMARY_CHARS, description="Optional: what you say about it (e.g. the outcome)."),
]
# Consolidation: the memories one summary replaces at most (ingest's limit on one merge).
MAX_CONSOLIDATED = 100
JOB_KIND_HELP = (
    "Run this maintenance job on your namespace: expire (past expires_at), dedupe (merge near-duplicates), "
    "contradictions (flag pairs that disagree), team_summary (your team's), decay (idle memories to the cold tier), "
    "enrich_backfill (search questions, needs an LLM) or all of them."
)
CONSOLIDATED_HELP = (
    "Your summary of the memories named by memory_ids (or selected by memory_type, tag or topic): saved as a new "
    "memory that replaces them; they are archived with a merged-into relation to it."
)
JobKindArg = Annotated[JobKindName | None, Field(description=JOB_KIND_HELP)]
ConsolidatedContent = Annotated[str | None, Field(min_length=1, pattern=r"\S", description=CONSOLIDATED_HELP)]
MemoryIds = Annotated[
    list[Annotated[str, Field(min_length=1, json_schema_extra={"format": "uuid"})]] | None,
    Field(
        min_length=1,
        max_length=MAX_CONSOLIDATED,
        description=f"The memories your summary replaces (at most {MAX_CONSOLIDATED}).",
    ),
]
CategoryArg = Annotated[
    MemoryTypeName | None,
    Field(
        description="Without memory_ids: replace every active memory of this type (with tag and topic: that match "
        "them too). The summary gets this type (default 'general')."
    ),
]
SelectorTag = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="Without memory_ids: replace every active memory with this tag. The summary gets the tag.",
    ),
]
SelectorTopic = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="Without memory_ids: replace every active memory about this topic. The summary gets the topic. "
        "With kind contradictions: only look for contradictions about it.",
    ),
]
ForceArg = Annotated[
    bool,
    Field(
        strict=True,
        description="Also merge memories of other agents (needs an admin key); with kind dedupe, the same for "
        "near-duplicates.",
    ),
]
JobOptions = Annotated[
    dict[str, str] | None,
    Field(
        description="Options of the job, as text: dedupe takes force ('true', admin); contradictions takes topics "
        "(comma separated) and judge ('off'); team_summary takes team. The other kinds take none."
    ),
]
JobId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        json_schema_extra={"format": "uuid"},
        description="The job's id, as starting it answered.",
    ),
]
ContradictionTopics = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Only contradictions about any of these topics."),
]
ContradictionLimit = Annotated[
    int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Number of pairs (1-100)."), BeforeValidator(not_a_bool)
]
DEFAULT_CONTRADICTIONS = 20


# --- results ------------------------------------------------------------------------------------------------


# The memory's public shape is derived from engram.model: a field added there is published here too. Fields
# declared below only add a description to the derived one.


class OriginOut(DerivedModel):
    """Where a memory was first written."""

    __derived_from__ = Origin

    device: str = Field(default="", description="The device of the agent that saved it (agent@device).")


class RelationOut(DerivedModel):
    """A link to another memory: supersedes, contradicts, context-dependent, merged-into."""

    __derived_from__ = Relation


class HandoffOut(DerivedModel):
    """Work handed over to another agent."""

    __derived_from__ = Handoff

    status: str = Field(
        default="pending", description="pending, then accepted and completed; expired when nobody accepted it in time."
    )
    expires_at: str | None = Field(default=None, description="When it expires if still pending (RFC 3339).")


class MemoryVersionOut(DerivedModel):
    """One version of a memory: what it said, who wrote it, when, from which client."""

    __derived_from__ = MemoryVersion

    event: str = Field(default="", description="The change that made this version: memory_saved, memory_updated, ...")


class MemoryOut(DerivedModel):
    """A memory as every API shows it (``Memory.to_dict()``): RFC 3339 times, metadata exactly as saved."""

    __derived_from__ = Memory

    # Fields a newer service adds before this gateway knows them pass through instead of being dropped.
    model_config = ConfigDict(extra="allow")

    version: int = Field(default=1, description="Its version: 1 when saved, one more for every change.")
    history: list[MemoryVersionOut] = Field(
        default_factory=list, description="Earlier versions, oldest first (get_memory fills it; searches do not)."
    )
    status: str = Field(default="active", description="active, archived, expired or superseded.")
    superseded_by: str = Field(default="", description="The id of the memory that replaced this one, if any.")
    context: str = Field(default="", description="Text that situates the memory; searched, not part of it.")
    updated_by: str = Field(default="", description="The agent that wrote this version.")

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


class SimilarMemoryOut(BaseModel):
    """Another agent's memory that a warning points at."""

    id: str
    owner_agent: str
    similarity: float = Field(description="Cosine similarity of meaning to the memory just saved (0 to 1).")
    preview: str = Field(description="The start of its content.")


class WarningOut(BaseModel):
    """Something worth a look about a write that succeeded (the write itself is done)."""

    kind: Literal["similar_finding"] = Field(description="similar_finding: other agents recorded a finding very "
                                             "like this one.")  # fmt: skip
    message: str = Field(description="What it means and what to do about it.")
    memories: list[SimilarMemoryOut]


class SaveResult(BaseModel):
    """What save_memory answers: the stored memory, what was redacted from it, and warnings about it."""

    id: str
    version: int
    seq: int = Field(description="Log sequence of the write; pass it as min_seq to read it back anywhere.")
    memory: MemoryOut
    redactions: list[RedactionOut] = Field(description="Secrets removed before storing; empty if none.")
    warnings: list[WarningOut] = Field(
        default_factory=list, description="Non-blocking: e.g. similar findings of other agents; empty if none."
    )


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


class DeleteResult(BaseModel):
    """What delete answers: the archived memory, or after a purge how much was erased."""

    id: str
    seq: int = Field(description="Log sequence of the write; pass it as min_seq to read it back anywhere.")
    purged: bool = Field(description="True: erased for good (admin). False: archived, kept in its history.")
    memory: MemoryOut | None = Field(description="The archived memory at its new version; null after a purge.")
    erased: int = Field(default=0, description="Log entries removed for good by a purge.")


class SupersedeResult(BaseModel):
    """What supersede answers: the memory that now holds (new or existing) and the one it replaced."""

    id: str = Field(description="The id of the replacing memory.")
    version: int
    seq: int = Field(description="Log sequence of the write; pass it as min_seq to read it back anywhere.")
    memory: MemoryOut = Field(description="The replacing memory.")
    superseded: MemoryOut = Field(description="The replaced memory, now status superseded, with superseded_by.")
    redactions: list[RedactionOut] = Field(description="Secrets removed from the new memory; empty if none.")


class HistoryResult(BaseModel):
    memory_id: str
    versions: list[MemoryVersionOut] = Field(
        description="Every version, oldest first; the last is the current one. Each says who wrote it, from "
        "which client, when, and the change that made it (event)."
    )


class MemoryStatsOut(BaseModel):
    """Counts of the memories of your namespace."""

    namespace: str
    memories: int = Field(description="Active memories.")
    total: int = Field(description="Every memory, whatever its status.")
    by_agent: dict[str, int] = Field(description="Memories per owning agent (every status).")
    by_type: dict[str, int] = Field(description="Memories per memory_type (every status).")
    by_status: dict[str, int] = Field(description="Memories per status: active, archived, expired, superseded.")
    by_team: dict[str, int] = Field(description="Memories per team (every status; memories without a team are not "
                                    "counted).")  # fmt: skip
    applied_seq: int = Field(description="Log sequence the index had applied when it answered.")
    log_last_seq: int = Field(description="The newest log sequence (0 when the log cannot be asked).")


class PingResult(BaseModel):
    ok: bool
    agent: str = Field(description="The agent id your memories are saved under.")
    device: str = Field(description="The device you run on (X-Engram-Device, the key's device or ENGRAM_DEVICE).")
    team: str = Field(description="Your team (X-Engram-Team, the key's team or ENGRAM_TEAM); empty if none.")
    identity: str = Field(description="agent@device: how other agents see you.")
    namespace: str
    source: str
    scopes: list[str]
    version: str


class AgentOut(DerivedModel):
    """An agent of the namespace, as the log knows it."""

    __derived_from__ = AgentInfo

    first_seen: str | None = Field(default=None, description="Its first write (RFC 3339).")
    last_seen: str | None = Field(default=None, description="Its latest write (RFC 3339).")
    memories: int = Field(description="Active memories it owns.")
    writes: int = Field(default=0, description="Log entries it wrote: saves, updates, deletes, handoff changes.")

    @classmethod
    def of(cls, agent: AgentInfo) -> AgentOut:
        return cls.model_validate(_with_times(agent, "first_seen", "last_seen"))


class AgentsResult(BaseModel):
    agents: list[AgentOut] = Field(description="Every agent that wrote to the namespace, most recently seen first.")


class TeamOut(DerivedModel):
    """A team of the namespace."""

    __derived_from__ = TeamInfo

    memories: int = Field(description="Active memories of the team.")
    summary_id: str = Field(default="", description="Its current team-summary memory; empty before consolidate_team.")
    last_activity: str | None = Field(default=None, description="The latest write in the team (RFC 3339).")

    @classmethod
    def of(cls, team: TeamInfo) -> TeamOut:
        return cls.model_validate(_with_times(team, "last_activity"))


class TeamsResult(BaseModel):
    teams: list[TeamOut]
    summaries: list[HitOut] | None = Field(
        default=None, exclude_if=lambda v: v is None, description="With search: the team summaries that match."
    )


class JobOut(DerivedModel):
    """A consolidation job and how it went."""

    __derived_from__ = Job

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls.model_validate(_with_times(job, "started_at", "finished_at"))


class ConsolidateResult(BaseModel):
    """What consolidate_team answers: the job that ran, and the team summary it wrote."""

    team: str
    job: JobOut
    summary: MemoryOut | None = Field(description="The team-summary memory (it supersedes the previous one).")


class ConsolidateMemoryResult(BaseModel):
    """What consolidate_memory answers: the job it ran (kind), or the summary that replaced a set of memories
    (consolidated_content) and the ids of the memories merged into it."""

    job: JobOut | None = Field(
        default=None, exclude_if=lambda v: v is None, description="With kind: the job that ran, and how it went."
    )
    survivor: MemoryOut | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="With consolidated_content: the summary memory; its metadata.merged_from lists the originals.",
    )
    merged_ids: list[str] = Field(
        default_factory=list, description="The memories merged into the summary, now archived (merged-into relation)."
    )
    seq: int | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Log sequence of the last write (a min_seq for reads).",
    )
    redactions: list[RedactionOut] = Field(default_factory=list, description="Secrets removed from the summary.")


class ContradictionOut(DerivedModel):
    """Two active memories that seem to disagree, flagged by the contradictions job for the user to resolve."""

    __derived_from__ = Contradiction

    memory: MemoryOut = Field(description="The newer memory (it carries the contradicts relation).")
    other: MemoryOut = Field(description="The older memory.")
    score: float = Field(description="How likely they contradict each other (0 to 1).")
    why: str = Field(description="What differs, e.g. another value for the same attribute.")

    @classmethod
    def of(cls, contradiction: Contradiction) -> ContradictionOut:
        return cls(
            memory=MemoryOut.of(contradiction.memory), other=MemoryOut.of(contradiction.other),
            score=round(contradiction.score, 4), why=contradiction.why,
        )  # fmt: skip


class ContradictionsResult(BaseModel):
    contradictions: list[ContradictionOut] = Field(
        description="The open contradictions (both memories still active), most likely first."
    )


class ResolveResult(BaseModel):
    """The pair as it is after the user's resolution (for merge, the new memory first) and what was done."""

    memories: list[MemoryOut]
    summary: str


def _with_times(value: Any, *names: str) -> dict[str, Any]:
    """A result dataclass as a dict, its epoch-second ``names`` as RFC 3339 text."""
    data = dataclasses.asdict(value)
    return {**data, **{name: format_time(data[name]) for name in names}}


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


# The fields update_memory may change (named as in the request); `metadata` is MemoryInput.metadata_json.
UPDATE_FIELDS = (
    "content", "summary", "tags", "topics", "memory_type", "importance", "metadata", "team", "project",
    "sensitivity", "confidence", "valid_at", "invalid_at", "expires_at", "context",
)  # fmt: skip


def any_given(names: Sequence[str]) -> dict[str, Any]:
    """A JSON Schema rule: at least one of ``names`` is given and not null."""
    return {"anyOf": [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names]}


def one_of(first: str, second: str, *, also_null: Sequence[str] = ()) -> dict[str, Any]:
    """A JSON Schema rule: exactly one of two text fields; with ``second``, the fields ``also_null`` are null too."""
    return {
        "anyOf": [
            {"required": [first], "properties": {first: {"type": "string"}, second: {"type": "null"}}},
            {
                "required": [second],
                "properties": {second: {"type": "string"}, **{name: {"type": "null"} for name in (first, *also_null)}},
            },
        ]
    }


# The save fields a supersede may give for the new memory (everything a save takes).
REPLACEMENT_FIELDS = (
    "content", "tags", "topics", "memory_type", "importance", "summary", "metadata", "team", "project",
    "conversation_id", "sensitivity", "confidence", "valid_at", "invalid_at", "expires_at", "handoff_target",
    "context",
)  # fmt: skip
# Rules across fields, published in the schemas (REST and MCP) and enforced by the operations; null means omitted.
UPDATE_RULE = any_given(UPDATE_FIELDS)
SUPERSEDE_RULE = one_of("content", "new_id", also_null=REPLACEMENT_FIELDS)


class UpdateRequest(BaseModel):
    """The fields to change (at least one); a field left out, or null, keeps its value. Lists and metadata are
    replaced whole; an empty string, list or object clears a field."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=UPDATE_RULE)

    content: Content | None = None
    summary: Summary = None
    tags: Tags = None
    topics: Topics = None
    memory_type: MemoryTypeArg = None
    importance: ImportanceArg = None
    metadata: Metadata = None
    team: Team = None
    project: Project = None
    sensitivity: SensitivityArg = None
    confidence: ConfidenceArg = None
    valid_at: ValidAt = None
    invalid_at: InvalidAt = None
    expires_at: ExpiresAt = None
    context: ContextArg = None
    expected_version: ExpectedVersion = None


class SupersedeRequest(SaveRequest):
    """What replaces a memory: either `content` (and any save field) for a new memory, or `new_id` of an existing
    one; exactly one of the two."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SUPERSEDE_RULE)

    content: Content | None = None  # type: ignore[assignment]  # optional here: new_id may name the replacement
    new_id: NewId = None
    expected_version: ExpectedVersion = None


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
    team: TeamFilter = None
    status: StatusFilter = None
    include_archived: IncludeArchived = False
    pack: PackFilter = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Query
    limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    filters: Filters = Field(default_factory=Filters)
    as_of: AsOf = None
    explain: Explain = False
    rerank: Rerank = None
    min_seq: MinSeq = None
    sources: Sources = None


class ListRequest(BaseModel):
    limit: ListLimit = DEFAULT_LIST_LIMIT
    filters: Filters = Field(default_factory=Filters)
    page_token: PageToken = None
    min_seq: MinSeq = None


class HandoffRequest(BaseModel):
    """Work handed over to another agent: where it stands, and optionally the files, decisions and next steps."""

    model_config = ConfigDict(extra="forbid")

    target_agent: TargetAgent
    context: HandoffContext
    active_files: ActiveFiles = None
    decisions_made: DecisionsMade = None
    next_steps: NextSteps = None
    tags: Tags = None
    team: Team = None
    project: Project = None
    importance: ImportanceArg = None


class HandoffListRequest(BaseModel):
    status: HandoffStatusArg = "pending"
    role: HandoffRole = "to_me"
    limit: ListLimit = DEFAULT_LIST_LIMIT
    page_token: PageToken = None
    min_seq: MinSeq = None


class HandoffMoveRequest(BaseModel):
    """Accepting or completing a handoff: an optional note, and the version you read."""

    model_config = ConfigDict(extra="forbid")

    note: HandoffNote = None
    expected_version: ExpectedVersion = None


class JobRequest(BaseModel):
    """A consolidation job to run on the caller's namespace."""

    model_config = ConfigDict(extra="forbid")

    kind: JobKindName = Field(description=JOB_KIND_HELP)
    options: JobOptions = None


# The memories a consolidation replaces: named by id, or selected by type, tag or topic (null means omitted).
SELECTION_FIELDS = ("memory_ids", "memory_type", "tag", "topic")
SELECTION_RULE = any_given(SELECTION_FIELDS)
# consolidate_memory either runs a job (kind) or replaces memories with a summary (consolidated_content).
CONSOLIDATE_RULE = one_of("kind", "consolidated_content")
# delete_memory: by id, or an expert pack's memory by name, category and summary; not both.
DELETE_RULE = {
    "anyOf": [
        {"required": ["id"], "properties": {"id": {"type": "string"}, "name": {"type": "null"}}},
        {
            "required": ["name", "category", "summary"],
            "properties": {
                "id": {"type": "null"}, "name": {"type": "string"}, "category": {"type": "string"},
                "summary": {"type": "string"},
            },
        },
    ]
}  # fmt: skip


class ConsolidateRequest(BaseModel):
    """Your summary of a set of memories, which replaces them: name them (memory_ids) or select them (memory_type,
    tag, topic)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SELECTION_RULE)

    consolidated_content: str = Field(min_length=1, pattern=r"\S", description=CONSOLIDATED_HELP)
    memory_ids: MemoryIds = None
    memory_type: CategoryArg = None
    tag: SelectorTag = None
    topic: SelectorTopic = None
    force: ForceArg = False


class ResolveRequest(BaseModel):
    """The user's answer to a flagged contradiction: keep_both (with when each holds), keep_newer, merge (with the
    content that reconciles both) or override (with the winner's id)."""

    model_config = ConfigDict(extra="forbid")

    id: MemoryId
    other_id: MemoryId
    resolution: ResolutionName = Field(description="keep_both, keep_newer, merge or override.")
    context: str | None = Field(default=None, description="keep_both: when the first memory (id) holds.")
    other_context: str | None = Field(default=None, description="keep_both: when the other memory holds.")
    content: str | None = Field(default=None, description="merge: the content of the memory that reconciles both.")
    winner_id: str | None = Field(default=None, description="override: the id of the memory that stays.")
