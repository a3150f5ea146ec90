"""Argument types shared by the MCP tools and the REST bodies. Enum values and limits come from the model and
ingest, so the schemas cannot drift from what is accepted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from engram.config import MAX_SEARCH_LIMIT
from engram.grpc.clients import JOB_KINDS, RESOLUTIONS
from engram.model import CONFIDENCES, HANDOFF_STATUSES, IMPORTANCES, MEMORY_TYPES, SENSITIVITIES, STATUSES
from engram.names import AGENT_PATTERN, IDENTITY_PATTERN, MAX_IDENTITY_CHARS, TEAM_PATTERN
from engram.validation import MAX_FIELD_CHARS, MAX_LABEL_CHARS, MAX_LIST_ITEMS, MAX_SUMMARY_CHARS

DEFAULT_LIST_LIMIT = 20
MAX_SEQ = 2**53 - 1  # log sequences and line numbers: exact in any JSON number (a double), JavaScript included
# Versions count the changes of one memory; capped where JSON numbers are exact everywhere (JavaScript's, and
# the float64 that generic JSON tools read numbers as).
MAX_VERSION = 2**53 - 1


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
