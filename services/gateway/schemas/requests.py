"""What the gateway is asked: the requests of the operations (REST bodies; the MCP tools take the same fields
flat) and the rules across their fields, published in the schemas."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from engram.config import DEFAULT_SEARCH_LIMIT
from engram.model import FIXED_INPUTS, stored_name
from engram.services.gateway.schemas.arguments import (
    CONSOLIDATED_HELP,
    DEFAULT_LIST_LIMIT,
    DEFAULT_LIST_ORDER,
    JOB_KIND_HELP,
    ActiveFiles,
    AsOf,
    CategoryArg,
    ConfidenceArg,
    Content,
    ContextArg,
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
    JobKindName,
    JobOptions,
    ListLimit,
    ListOrder,
    MemoryId,
    MemoryIds,
    MemoryTypeArg,
    MemoryTypeName,
    Metadata,
    MinRelevance,
    MinSeq,
    NewId,
    NextSteps,
    OwnerAgent,
    PackFilter,
    PageToken,
    Project,
    Query,
    Rerank,
    ResolutionName,
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
    Topics,
    TypeFilter,
    ValidAt,
)
from engram.services.gateway.schemas.derived import DerivedModel


# One field per field of engram.model.MemoryInput, named as stored (metadata for metadata_json), with its limits and
# description: the update and supersede requests, the MCP tools' parameters and the REST bodies take them from here.
class SaveRequest(BaseModel):
    """A memory to save."""

    model_config = ConfigDict(extra="forbid")

    content: Content
    summary: Summary = None
    tags: Tags = None
    topics: Topics = None
    memory_type: MemoryTypeArg = None
    importance: ImportanceArg = None
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


# The fields update_memory may change: every save field but those fixed when a memory is saved.
FIXED_FIELDS = tuple(stored_name(name) for name in FIXED_INPUTS)
UPDATE_FIELDS = tuple(name for name in SaveRequest.model_fields if name not in FIXED_FIELDS)


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
REPLACEMENT_FIELDS = tuple(SaveRequest.model_fields)
# Rules across fields, published in the schemas (REST and MCP) and enforced by the operations; null means omitted.
UPDATE_RULE = any_given(UPDATE_FIELDS)
SUPERSEDE_RULE = one_of("content", "new_id", also_null=REPLACEMENT_FIELDS)


class UpdateRequest(DerivedModel):
    """The fields to change (at least one); a field left out, or null, keeps its value. Lists and metadata are
    replaced whole; an empty string, list or object clears a field."""

    __derived_from__ = SaveRequest  # its fields but the fixed ones (UPDATE_FIELDS), content optional here
    __left_out__ = FIXED_FIELDS
    model_config = ConfigDict(extra="forbid", json_schema_extra=UPDATE_RULE)

    content: Content | None = None
    expected_version: ExpectedVersion = None


class SupersedeRequest(SaveRequest):
    """What replaces a memory: either `content` (and any save field) for a new memory, or `new_id` of an existing
    one; exactly one of the two."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=SUPERSEDE_RULE)

    content: Content | None = None  # type: ignore[assignment]  # optional here: new_id may name the replacement
    new_id: NewId = None
    expected_version: ExpectedVersion = None


class UnsupersedeRequest(BaseModel):
    """Undoing a supersession: optionally the version of the superseded memory you read."""

    model_config = ConfigDict(extra="forbid")

    expected_version: ExpectedVersion = None


IMPORT_TYPES = (
    "Default general. pack-file needs a packs key, team-summary an admin, observation and session-summary come from "
    "hooks (X-Engram-Source: hook)."
)


# The widest dense vector an import line may bring: 4096 float32, in base64.
MAX_GIVEN_DIM = 4096
MAX_GIVEN_DENSE_CHARS = 4 * -(-4 * MAX_GIVEN_DIM // 3)


class ImportVectorsIn(BaseModel):
    """A pre-computed dense vector of the line's content (admin only): the node stores it instead of embedding."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        min_length=1, max_length=200, description="The embedding model that made it: the node's own (`/readyz`)."
    )
    dense: str = Field(
        min_length=1, max_length=MAX_GIVEN_DENSE_CHARS,
        description="The L2-normalised vector as event bodies carry it: little-endian float32, base64.",
    )  # fmt: skip


class ImportLineIn(SaveRequest):
    """One line of a bulk import: a save_memory object, plus an optional idempotency key and (admin only) the
    content's pre-computed dense vector."""

    # An import restores what an export wrote and delivers what agents' hooks captured: every type, internal ones too,
    # each only from the path that owns it (ingest checks: engram.ownership.require_may_write_type).
    memory_type: Annotated[MemoryTypeName | None, Field(description=IMPORT_TYPES)] = None  # type: ignore[assignment]
    source_id: Annotated[str | None, Field(max_length=256, description="Stored once per key (dedup window).")] = None
    vectors: Annotated[
        ImportVectorsIn | None,
        Field(description="Admin only: the content's dense vector made beforehand, stored instead of embedding it."),
    ] = None


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
    min_relevance: MinRelevance = None


class ListRequest(BaseModel):
    limit: ListLimit = DEFAULT_LIST_LIMIT
    filters: Filters = Field(default_factory=Filters)
    page_token: PageToken = None
    min_seq: MinSeq = None
    order: ListOrder = DEFAULT_LIST_ORDER


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
    content that reconciles both), override (with the winner's id) or supersede (accept a proposed update: the newer
    supersedes the older)."""

    model_config = ConfigDict(extra="forbid")

    id: MemoryId
    other_id: MemoryId
    resolution: ResolutionName = Field(description="keep_both, keep_newer, merge, override or supersede.")
    context: str | None = Field(default=None, description="keep_both: when the first memory (id) holds.")
    other_context: str | None = Field(default=None, description="keep_both: when the other memory holds.")
    content: str | None = Field(default=None, description="merge: the content of the memory that reconciles both.")
    winner_id: str | None = Field(default=None, description="override: the id of the memory that stays.")
