"""Saves memories: validate, scrub secrets, embed (dense + sparse), append to the log, answer with its sequence."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

import numpy as np

from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import DiskFull, EngramError, InvalidArgument, Unavailable
from engram.events import MEMORY_ENRICHED, MEMORY_SAVED, event_body
from engram.ids import is_uuid, uuid7
from engram.log import Appended, Log, Stale
from engram.model import Caller, Handoff, Memory, MemoryInput, Origin, format_time
from engram.results import ImportItem, ImportSummary, SaveResult
from engram.scrub import Redaction, merge, scrub_text, scrub_value
from engram.services.ingest.validation import Limits, validate

__all__ = ["MemoryWriter"]

DEFAULT_IMPORT_BATCH = 128  # larger batches sort into tighter padding buckets
MAX_QUESTIONS = 8
MAX_QUESTION_CHARS = 300


class _Stop(Exception):
    """Ends an import early; the summary already says why."""


# The log or the disk refusing a write refuses every later one too: the import stops there (and says where to
# resume) rather than rejecting each remaining line with the same reason.
STOPS_AN_IMPORT = (Unavailable, DiskFull)


class SpaceCheck(Protocol):
    def require_space(self) -> None:
        """Raises DiskFull when there is no room for another write."""
        ...


class MemoryWriter:
    """The write path of DESIGN.md. A save is acknowledged only after JetStream has stored it."""

    def __init__(
        self,
        log: Log,
        embedder: Embedder,
        sparse: Bm25Encoder,
        limits: Limits,
        *,
        device: str = "",
        disk: SpaceCheck | None = None,
    ) -> None:
        self._device = device
        self._disk = disk
        self._log = log
        self._embedder = embedder
        self._sparse = sparse
        self._limits = limits

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveResult:
        memory, redactions = self.prepare(caller, draft)
        (vectors,) = await asyncio.to_thread(self.vectors, [memory])
        seq, _ = await self._append(caller, memory, vectors, msg_id=f"{memory.id}:{memory.version}")
        memory.seq = seq
        return SaveResult(memory, seq, redactions)

    async def import_stream(
        self, caller: Caller, items: AsyncIterator[ImportItem], *, batch: int = DEFAULT_IMPORT_BATCH
    ) -> ImportSummary:
        """Imports items in order: invalid ones are rejected with a reason, the rest embedded in batches.

        The next batch is embedded while the previous one is appended, so the log and the embedder overlap.
        Every memory of one import is created at the request's arrival time (like a transaction's timestamp):
        listings order them by id within that time, so they come out the same however fast the import ran.
        """
        arrived = time.time()
        summary = ImportSummary()
        pending: list[tuple[ImportItem, Memory]] = []
        embedding: tuple[list[tuple[ImportItem, Memory]], asyncio.Task[list[dict[str, Any]]]] | None = None

        async def flush(current: list[tuple[ImportItem, Memory]]) -> None:
            nonlocal embedding
            vectors = asyncio.to_thread(self.vectors, [memory for _, memory in current])
            task = asyncio.create_task(vectors)  # held in `embedding` until awaited (or cancelled on a stop)
            previous, embedding = embedding, (current, task)
            if previous is not None:
                await self._append_batch(caller, previous[0], await previous[1], summary)

        try:
            async for item in items:
                summary.last_line = max(summary.last_line, item.line)
                try:
                    memory, redactions = self.prepare(caller, item.draft, now=arrived)
                except InvalidArgument as e:
                    summary.rejected.append((item.line, str(e)))
                    continue
                summary.redactions.extend(redactions)
                pending.append((item, memory))
                if len(pending) >= batch:
                    await flush(pending)
                    pending = []
            if pending:
                await flush(pending)
            if embedding is not None:
                current, embedding = embedding, None
                await self._append_batch(caller, current[0], await current[1], summary)
        except _Stop:
            if embedding is not None:  # vectors of a batch that will not be stored
                embedding[1].cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await embedding[1]
        summary.redactions = list(merge(summary.redactions))
        return summary

    async def enrich(self, caller: Caller, memory_id: str, questions: Sequence[str], *, model: str) -> int:
        """Appends reverse-HyDE questions (with their vectors) for a memory; returns the log sequence."""
        if not is_uuid(memory_id):
            raise InvalidArgument("id", "is not a memory id.")
        cleaned = [scrub_text(q.strip()).text for q in questions if q and q.strip()]
        if not cleaned or len(cleaned) > MAX_QUESTIONS:
            raise InvalidArgument("questions", f"give between 1 and {MAX_QUESTIONS} questions.")
        if any(len(q) > MAX_QUESTION_CHARS for q in cleaned):
            raise InvalidArgument("questions", f"each question must be at most {MAX_QUESTION_CHARS} characters.")
        dense = await asyncio.to_thread(self._embedder.embed, cleaned)
        if self._disk is not None:
            self._disk.require_space()
        body = {
            "schema": 1,
            "event": MEMORY_ENRICHED,
            "namespace": caller.namespace,
            "agent": caller.agent_id,
            "source": caller.source,
            "memory_id": memory_id,
            "time": format_time(time.time()),
            "questions": cleaned,
            "question_model": model,
            "vectors": {"model": self._embedder.model_id, "questions": [_b64(row) for row in dense]},
        }
        appended = await self._log.append(
            caller.namespace, MEMORY_ENRICHED, body, msg_id=f"{memory_id}:enriched:{_digest(cleaned)}"
        )
        return appended.seq

    async def _append_batch(
        self,
        caller: Caller,
        batch: list[tuple[ImportItem, Memory]],
        vectors: list[dict[str, Any]],
        summary: ImportSummary,
    ) -> None:
        for (item, memory), vector in zip(batch, vectors, strict=True):
            msg_id = f"import:{caller.namespace}:{item.source_id}" if item.source_id else f"{memory.id}:1"
            try:
                seq, duplicate = await self._append(caller, memory, vector, msg_id=msg_id, resolve_duplicate=True)
            except STOPS_AN_IMPORT as e:
                summary.stop(item.line, e)
                raise _Stop from e
            except EngramError as e:
                summary.rejected.append((item.line, str(e)))
                continue
            (summary.present if duplicate else summary.imported).append((item.line, memory.id, seq))
            summary.last_seq = max(summary.last_seq, seq)

    async def append_new(self, caller: Caller, memory: Memory) -> int:
        """Embeds and appends a memory prepared by prepare() as memory_saved; returns its log sequence."""
        (vectors,) = await asyncio.to_thread(self.vectors, [memory])
        seq, _ = await self._append(caller, memory, vectors, msg_id=f"{memory.id}:{memory.version}")
        return seq

    async def append_entry(
        self,
        caller: Caller,
        event: str,
        body: dict[str, Any],
        *,
        msg_id: str,
        based_on: int = 0,
        stale: Stale | None = None,
    ) -> Appended:
        """Appends one event body (after the disk check), conditionally when ``stale`` is given."""
        if self._disk is not None:
            self._disk.require_space()
        return await self._log.append(caller.namespace, event, body, msg_id=msg_id, based_on=based_on, stale=stale)

    def scrubbed_source(self, caller: Caller) -> str:
        return scrub_text(caller.source).text

    async def _append(
        self, caller: Caller, memory: Memory, vectors: dict[str, Any], *, msg_id: str, resolve_duplicate: bool = False
    ) -> tuple[int, bool]:
        """Appends a memory; returns its log sequence and whether the log already had it (same msg_id)."""
        if self._disk is not None:
            self._disk.require_space()
        body = event_body(MEMORY_SAVED, memory, caller, vectors=vectors)
        appended = await self._log.append(caller.namespace, MEMORY_SAVED, body, msg_id=msg_id)
        if appended.duplicate and resolve_duplicate:
            # A retried import item: JetStream kept the first copy; answer with that memory's id.
            original = await self._log.read(appended.seq)
            if original is not None:
                memory.id = original.body.get("memory_id", memory.id)
        return appended.seq, appended.duplicate

    def prepare(
        self, caller: Caller, draft: MemoryInput, *, now: float | None = None
    ) -> tuple[Memory, tuple[Redaction, ...]]:
        clean = validate(draft, self._limits)
        draft = clean.draft
        found: list[Redaction] = []

        def text(value: str) -> str:
            result = scrub_text(value)
            found.extend(result.redactions)
            return result.text

        def labels(values: list[str]) -> list[str]:
            return list(dict.fromkeys(text(value) for value in values))

        metadata, metadata_redactions = scrub_value(clean.metadata)
        found.extend(metadata_redactions)
        now = time.time() if now is None else now
        # Every free-text field is scrubbed, labels included: a token pasted into a tag or a project name is
        # as much a leak as one in the content.
        memory = Memory(
            id=uuid7(),
            namespace=caller.namespace,
            content=text(draft.content),
            owner_agent=caller.agent_id,
            summary=text(draft.summary),
            memory_type=draft.memory_type,
            confidence=draft.confidence,
            topics=labels(draft.topics),
            tags=labels(draft.tags),
            importance=draft.importance,
            source=text(caller.source),
            updated_by=caller.agent_id,
            team=text(draft.team),
            project=text(draft.project),
            conversation_id=text(draft.conversation_id),
            metadata=metadata if isinstance(metadata, dict) else {},
            sensitivity=draft.sensitivity,
            created_at=now,
            updated_at=now,
            valid_at=draft.valid_at,
            invalid_at=draft.invalid_at,
            expires_at=draft.expires_at,
            handoff=Handoff(draft.handoff_target, "pending", now) if draft.handoff_target else None,
            context=text(draft.context),
            origin=Origin(device=self._device),
        )
        return memory, merge(found)

    def vectors(self, memories: list[Memory]) -> list[dict[str, Any]]:
        # Dense embeds the content alone: context dilutes its meaning. BM25 also indexes the context,
        # whose exact words often name what the content only refers to (measured in docs/search.md).
        dense = self._embedder.embed([memory.content for memory in memories])
        out = []
        for memory, row in zip(memories, dense, strict=True):
            sparse = self._sparse.document(memory.search_text())
            out.append(
                {
                    "model": self._embedder.model_id,
                    "dense": _b64(row),
                    "sparse_model": self._sparse.model_id,
                    "sparse": {"indices": sparse.indices, "values": sparse.values},
                }
            )
        return out


def _digest(texts: list[str]) -> str:
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


def _b64(row: np.ndarray) -> str:
    return base64.b64encode(np.asarray(row, dtype="<f4").tobytes()).decode()
