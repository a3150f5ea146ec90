"""What the gateway answers: the results of the operations, as REST and the MCP tools publish them."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engram import __version__
from engram.model import Handoff, Memory, MemoryVersion, Origin, Relation, format_time
from engram.results import AgentInfo, Contradiction, Job, TeamInfo
from engram.services.gateway.schemas.derived import DerivedModel

ENGRAM_VERSION = __version__


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
    already_present: bool = Field(
        default=False,
        description="Already stored: it repeats your active memory `id` (same content, normalized, and scope), or an "
        "import stored its source_id.",
    )


class ImportResult(BaseModel):
    imported: int = Field(description="How many memories were newly stored.")
    already_present: int = Field(
        default=0,
        description="Lines already stored (your active memory with the same content, an earlier line of this "
        "import, or an import with the same source_id): nothing new was written.",
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
    duplicate_of: str | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="Set when this save repeated your active memory (same content, normalized, and scope): its id. "
        "Nothing new was stored; id, version, seq and memory are that memory's. Absent otherwise.",
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
    explain_note: str | None = Field(
        default=None, exclude_if=lambda v: not v, description="With explain: how this query's lists were fused."
    )


class SupersededByOtherOut(BaseModel):
    """One of the caller's memories another agent superseded lately (newest wins): the owner may undo it."""

    id: str = Field(description="Your memory, now superseded (its content and owner unchanged).")
    title: str = Field(description="Its summary, else the start of its content.")
    superseded_by: str = Field(description="The memory that replaced it.")
    by: str = Field(description="The agent that superseded it.")
    at: str | None = Field(description="When (RFC 3339).")


class ListResult(BaseModel):
    memories: list[MemoryOut] = Field(description="Most recent first.")
    next_page_token: str | None = Field(description="Pass it as page_token for the next page; null at the end.")
    superseded_by_others: list[SupersededByOtherOut] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="On a first page: your memories other agents superseded in the last 7 days (undo one with "
        "unsupersede_memory).",
    )  # fmt: skip


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


class UnsupersedeResult(BaseModel):
    """What unsupersede answers: the memory, active again, and its former replacement."""

    id: str = Field(description="The id of the memory, active again.")
    version: int
    seq: int = Field(description="Log sequence of the write; pass it as min_seq to read it back anywhere.")
    memory: MemoryOut = Field(description="The memory, active again (superseded_by cleared).")
    replacement: MemoryOut | None = Field(description="Its former replacement, without the supersedes relation.")


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
    """Two active memories that seem to disagree, or a proposed update (the newer replaces the older), flagged by the
    contradictions job for the user to decide."""

    __derived_from__ = Contradiction

    memory: MemoryOut = Field(description="The newer memory (it carries the contradicts relation).")
    other: MemoryOut = Field(description="The older memory.")
    score: float = Field(description="How likely they contradict each other (0 to 1).")
    why: str = Field(description="What differs, e.g. another value for the same attribute.")
    kind: str = Field(
        default="contradiction",
        description="contradiction, or update: the newer states the change; resolution supersede accepts it.",
    )
    rule: str = Field(default="", description="The rule (or model) that raised it: value, antonym, person, update...")

    @classmethod
    def of(cls, contradiction: Contradiction) -> ContradictionOut:
        return cls(
            memory=MemoryOut.of(contradiction.memory), other=MemoryOut.of(contradiction.other),
            score=round(contradiction.score, 4), why=contradiction.why, kind=contradiction.kind,
            rule=contradiction.rule,
        )  # fmt: skip


class ContradictionsResult(BaseModel):
    contradictions: list[ContradictionOut] = Field(
        description="The open contradictions and proposed updates (both memories still active), most likely first."
    )


class ResolveResult(BaseModel):
    """The pair as it is after the user's resolution (for merge, the new memory first) and what was done."""

    memories: list[MemoryOut]
    summary: str


def _with_times(value: Any, *names: str) -> dict[str, Any]:
    """A result dataclass as a dict, its epoch-second ``names`` as RFC 3339 text."""
    data = dataclasses.asdict(value)
    return {**data, **{name: format_time(data[name]) for name in names}}
