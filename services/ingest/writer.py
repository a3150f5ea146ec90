"""Saves memories: validate, scrub secrets, embed (dense + sparse), append to the log, answer with its sequence."""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from engram.embed import Embedder
from engram.embed.sparse import Bm25Encoder
from engram.events import MEMORY_SAVED, event_body
from engram.ids import uuid7
from engram.log import EventLog
from engram.model import Caller, Handoff, Memory, MemoryInput
from engram.scrub import Redaction, merge, scrub_text, scrub_value
from engram.services.ingest.validation import Limits, validate

__all__ = ["MemoryWriter", "SaveResult"]


@dataclass(frozen=True, slots=True)
class SaveResult:
    memory: Memory
    seq: int
    redactions: tuple[Redaction, ...]


class MemoryWriter:
    """The write path of DESIGN.md. A save is acknowledged only after JetStream has stored it."""

    def __init__(self, log: EventLog, embedder: Embedder, sparse: Bm25Encoder, limits: Limits) -> None:
        self._log = log
        self._embedder = embedder
        self._sparse = sparse
        self._limits = limits

    async def save(self, caller: Caller, draft: MemoryInput) -> SaveResult:
        clean = validate(draft, self._limits)
        draft = clean.draft
        content = scrub_text(draft.content)
        summary = scrub_text(draft.summary)
        metadata, metadata_redactions = scrub_value(clean.metadata)
        now = time.time()
        memory = Memory(
            id=uuid7(),
            namespace=caller.namespace,
            content=content.text,
            owner_agent=caller.agent_id,
            summary=summary.text,
            memory_type=draft.memory_type,
            confidence=draft.confidence,
            topics=draft.topics,
            tags=draft.tags,
            importance=draft.importance,
            source=caller.source,
            team=draft.team,
            project=draft.project,
            conversation_id=draft.conversation_id,
            metadata=metadata if isinstance(metadata, dict) else {},
            sensitivity=draft.sensitivity,
            created_at=now,
            updated_at=now,
            valid_at=draft.valid_at,
            invalid_at=draft.invalid_at,
            expires_at=draft.expires_at,
            handoff=Handoff(draft.handoff_target, "pending", now) if draft.handoff_target else None,
        )
        vectors = await asyncio.to_thread(self._vectors, memory.content)
        body = event_body(MEMORY_SAVED, memory, caller, vectors=vectors)
        seq = await self._log.append(caller.namespace, MEMORY_SAVED, body, msg_id=f"{memory.id}:{memory.version}")
        memory.seq = seq
        return SaveResult(memory, seq, merge(content.redactions, summary.redactions, metadata_redactions))

    def _vectors(self, text: str) -> dict[str, Any]:
        dense = np.asarray(self._embedder.embed([text])[0], dtype="<f4")
        sparse = self._sparse.document(text)
        return {
            "model": self._embedder.model_id,
            "dense": base64.b64encode(dense.tobytes()).decode(),
            "sparse_model": self._sparse.model_id,
            "sparse": {"indices": sparse.indices, "values": sparse.values},
        }
