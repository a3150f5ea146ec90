"""Argument types shared by the MCP tools and the REST bodies. Enum values and limits come from the model and
ingest, so the schemas cannot drift from what is accepted."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from engram.config import DEFAULT_MIN_RELEVANCE, MAX_SEARCH_LIMIT
from engram.grpc.clients import JOB_KINDS, RESOLUTIONS
from engram.model import (  # noqa: F401  # the list defaults: here for the gateway's modules that name them
    CONFIDENCES,
    DEFAULT_LIST_LIMIT,
    DEFAULT_LIST_ORDER,
    HANDOFF_STATUSES,
    IMPORTANCES,
    MEMORY_TYPES,
    SAVABLE_TYPES,
    SENSITIVITIES,
    STATUSES,
)
from engram.names import AGENT_PATTERN, IDENTITY_PATTERN, MAX_IDENTITY_CHARS, TEAM_PATTERN
from engram.validation import MAX_FIELD_CHARS, MAX_LABEL_CHARS, MAX_LIST_ITEMS, MAX_SUMMARY_CHARS

MAX_SEQ = 2**53 - 1  # log sequences and line numbers: exact in any JSON number (a double), JavaScript included
# Versions count the changes of one memory; capped where JSON numbers are exact everywhere (JavaScript's, and
# the float64 that generic JSON tools read numbers as).
MAX_VERSION = 2**53 - 1


# Enum values come from the model, so the published schemas can never drift from what ingest accepts.
MemoryTypeName = Literal[MEMORY_TYPES]  # type: ignore[valid-type]
SavableTypeName = Literal[SAVABLE_TYPES]  # type: ignore[valid-type]  # what a save may set: no internal types
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
        description="One self-contained statement, e.g. 'The user prefers tabs.'",
    ),
]
# The limits ingest enforces are published in the schemas too, so clients (and fuzzers) know them up front.
Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]
Tags = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Labels, e.g. ['billing']."),
]
Topics = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Subjects, e.g. ['auth']."),
]
MemoryTypeArg = Annotated[SavableTypeName | None, Field(description="Default general.")]
ImportanceArg = Annotated[ImportanceName | None, Field(description="Default normal.")]
SensitivityArg = Annotated[
    SensitivityName | None,
    Field(description="private: stays in the namespace; secret: on this device. Default normal."),
]
ConfidenceArg = Annotated[
    ConfidenceName | None,
    Field(description="stated (the user said so; default) or inferred (your conclusion)."),
]
Summary = Annotated[str | None, Field(max_length=MAX_SUMMARY_CHARS, description="One line for a long memory.")]
Metadata = Annotated[
    dict[str, Any] | None,
    Field(description="Any JSON object, returned as given."),
]
Team = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Its team.")]
Project = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Its project.")]
ConversationId = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="The conversation it came from.")]
_TIME = {"format": "date-time"}
ValidAt = Annotated[str | None, Field(json_schema_extra=_TIME, description="True from this time.")]
InvalidAt = Annotated[str | None, Field(json_schema_extra=_TIME, description="False from this time.")]
# Either form is published, so clients (and fuzzers) know both are accepted; the gateway parses them.
_EXPIRY = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "pattern": DURATION_PATTERN}]}
ExpiresAt = Annotated[
    Annotated[str, WithJsonSchema(_EXPIRY)] | None,
    Field(
        description="A time or a duration (30d, 12h, 45m, 90s, 2w) after which it leaves search; still readable by id."
    ),
]
HandoffTarget = Annotated[
    str | None,
    Field(
        pattern=f"^{AGENT_PATTERN}$",
        description="Hand the work over to this agent (a pending handoff).",
    ),
]
ContextArg = Annotated[
    str | None,
    Field(description="Text that situates it (e.g. the preceding turn); searched, not shown."),
]
SourceName = Literal["dense", "bm25", "questions"]
Sources = Annotated[
    list[SourceName] | None,
    Field(description="Retrievers; default all."),
]
MinRelevance = Annotated[
    float | None,
    Field(
        ge=0,
        le=1,
        description="Relevance floor: hits less close in meaning than this (cosine, 0-1) are left out unless they "
        f"match the query's words strongly; default the server's ({DEFAULT_MIN_RELEVANCE:g}), 0 keeps everything.",
    ),
]
Query = Annotated[str, Field(min_length=1, pattern=r"\S", description="Natural language or keywords.")]


def not_a_bool(value: object) -> object:
    """JSON Schema's integer takes 1 and 1.0, never true: pydantic would read true as 1."""
    if isinstance(value, bool):
        raise ValueError("give a whole number, not true or false")
    return value


# Counts: whole numbers (1 or 1.0, as JSON Schema's integer), never a boolean.
SearchLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Hits."), BeforeValidator(not_a_bool)]
ListLimit = Annotated[
    int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Memories per page."), BeforeValidator(not_a_bool)
]
FilterTags = Annotated[list[str] | None, Field(description="Only with all these tags.")]
FilterTopics = Annotated[list[str] | None, Field(description="Only about any of these.")]
OwnerAgent = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Only this agent's.")]
TypeFilter = Annotated[
    MemoryTypeName | list[MemoryTypeName] | None,
    Field(description="Only of these types."),
]
CreatedAfter = Annotated[str | None, Field(json_schema_extra=_TIME, description="Only created after.")]
CreatedBefore = Annotated[str | None, Field(json_schema_extra=_TIME, description="Only created before.")]
# Booleans are strict (true or false, not 0.0 or "yes"), as the published schemas say; REST query parameters
# declare their own (text) booleans.
IncludeArchived = Annotated[bool, Field(strict=True, description="Also archived (deleted) ones.")]
StatusFilter = Annotated[
    StatusName | list[StatusName] | None,
    Field(description="Only in these statuses; default active."),
]  # fmt: skip
TeamFilter = Annotated[str | None, Field(max_length=MAX_FIELD_CHARS, description="Only this team's.")]
PackArg = Annotated[str | None, Field(max_length=64, description="Pack form: the pack.")]
PackCategoryArg = Annotated[str | None, Field(max_length=64, description="Pack form: its category.")]
PackSummaryArg = Annotated[str | None, Field(max_length=500, description="Pack form: its summary in memory/_index.md.")]
PackFilter = Annotated[
    str | None,
    Field(
        max_length=64,
        description="Only this expert pack's memories (list_engrams); else its files are left out.",
    ),
]
AsOf = Annotated[
    str | None,
    Field(
        json_schema_extra=_TIME,
        description="The memories as they were then: content, status, validity.",
    ),
]
Explain = Annotated[bool, Field(strict=True, description="Each ranking stage's rank and score per hit.")]
Detail = Annotated[
    Literal["compact", "full"],
    Field(description="full: every field."),
]
Rerank = Annotated[
    bool | None,
    Field(strict=True, description="Force the reranker on or off."),
]
MinSeq = Annotated[
    int | None,
    Field(
        ge=0,
        le=MAX_SEQ,
        description="Wait for this seq (from a write) to be searchable.",
    ),
]
PageToken = Annotated[str | None, Field(description="The previous page's next_page_token.")]
# The orders of a listing: the search service's (engram.index.ORDERS, which a unit test compares).
ListOrderName = Literal["created", "updated"]
ListOrder = Annotated[ListOrderName, Field(description="Newest first by created (default) or updated.")]
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        json_schema_extra={"format": "uuid"},
        description="The memory's id.",
    ),
]
ExpectedVersion = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_VERSION,
        description="Fail unless it is still at this version (the one you read).",
    ),
]
NewId = Annotated[
    str | None,
    Field(
        min_length=1,
        json_schema_extra={"format": "uuid"},
        description="An existing memory that replaces it (instead of content).",
    ),
]
PointInTime = Annotated[
    str,
    Field(
        json_schema_extra=_TIME,
        description="e.g. 2026-01-31T12:00:00Z",
    ),
]
TeamName = Annotated[
    str | None,
    Field(
        pattern=f"^{TEAM_PATTERN}$",
        description="Default: yours.",
    ),
]
TeamSearch = Annotated[
    str | None,
    Field(
        min_length=1,
        pattern=r"\S",
        description="Also search the team summaries for this.",
    ),
]
TargetAgent = Annotated[
    str,
    Field(
        pattern=f"^{IDENTITY_PATTERN}$",
        max_length=MAX_IDENTITY_CHARS,
        description="The agent taking over, e.g. 'gemini-cli'.",
    ),
]
HandoffContext = Annotated[
    str,
    Field(
        min_length=1,
        pattern=r"\S",
        description="Where the work stands, what the next agent must know; the first line is its summary.",
    ),
]
# A handoff lists more than a memory's labels (a change touches many files), each item a line of text.
MAX_HANDOFF_ITEMS = 100
HandoffItem = Annotated[str, Field(min_length=1, max_length=MAX_SUMMARY_CHARS)]
ActiveFiles = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="Files being worked on."),
]
DecisionsMade = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="Decisions so far, with reasons."),
]
NextSteps = Annotated[
    list[HandoffItem] | None,
    Field(max_length=MAX_HANDOFF_ITEMS, description="What to do next, in order."),
]
HandoffStatusChoice = HandoffStatusName | Literal["all"]
HandoffRoleName = Literal["to_me", "from_me", "all"]
HandoffStatusArg = Annotated[
    HandoffStatusChoice,
    Field(description="Default pending."),
]
HandoffRole = Annotated[
    HandoffRoleName,
    Field(description="to_me (default), from_me or all."),
]
HandoffNote = Annotated[
    str | None,
    Field(max_length=MAX_SUMMARY_CHARS, description="e.g. the outcome."),
]
# Consolidation: the memories one summary replaces at most (ingest's limit on one merge).
MAX_CONSOLIDATED = 100
JOB_KIND_HELP = (
    "A maintenance job: dedupe merges near-duplicates, contradictions flags pairs that disagree, decay moves idle "
    "memories to the cold tier, enrich_backfill needs an LLM."
)
CONSOLIDATED_HELP = "Your summary: a new memory replacing those of memory_ids or the selector."
JobKindArg = Annotated[JobKindName | None, Field(description=JOB_KIND_HELP)]
ConsolidatedContent = Annotated[str | None, Field(min_length=1, pattern=r"\S", description=CONSOLIDATED_HELP)]
MemoryIds = Annotated[
    list[Annotated[str, Field(min_length=1, json_schema_extra={"format": "uuid"})]] | None,
    Field(
        min_length=1,
        max_length=MAX_CONSOLIDATED,
        description="The memories it replaces.",
    ),
]
CategoryArg = Annotated[
    MemoryTypeName | None,
    Field(description="Selector: every active memory of this type; the summary's type."),
]
SelectorTag = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="Selector: every active memory with this tag.",
    ),
]
SelectorTopic = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="Selector: every active memory about it (kind contradictions: only about it).",
    ),
]
ForceArg = Annotated[
    bool,
    Field(
        strict=True,
        description="Also other agents' memories (admin key).",
    ),
]
JobOptions = Annotated[
    dict[str, str] | None,
    Field(
        description="dedupe: force ('true'); contradictions: topics (comma separated), judge ('off'); "
        "team_summary: team."
    ),
]
JobId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        json_schema_extra={"format": "uuid"},
        description="The job's id.",
    ),
]
ContradictionTopics = Annotated[
    list[Label] | None,
    Field(max_length=MAX_LIST_ITEMS, description="Only about any of these."),
]
ContradictionLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="Pairs."), BeforeValidator(not_a_bool)]
DEFAULT_CONTRADICTIONS = 20
