"""When a save repeats a memory: the content normalized, and the key by which the index finds the memory it repeats.

A memory repeats another when both are the same agent's, in the same namespace, and their keys are equal. The key
covers the normalized content (NFKC, case-folded, every run of whitespace one space, trailing sentence punctuation
and whitespace trimmed: "Use  pnpm." and "use pnpm" say the same) and the fields that decide where a memory is found
(its scope: team, project, conversation, pack, sensitivity), so the same words saved for another project, in another
conversation or pack, or at another sensitivity stay a memory of their own. The fields that only describe a memory
(type, tags, topics, importance, summary, metadata) are not part of it: a fact saved again as a "decision" instead of
a "fact" is the same fact, and the answer names the existing memory for the caller to update if the labels matter.
A session's summary (captured by the hooks, one per session) is the exception: its conversation is not part of its
key, so a session replayed or redone the same way repeats the summary it already has instead of adding its copy.

Handoffs (a message to another agent: sending one twice is two messages) and the files of an expert pack (parts of a
file, whose text may recur) have no key and never repeat anything. The key is computed from the scrubbed content, as
stored; the search index keeps it with every current version (engram.index.CONTENT_KEY).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from typing import Any

from engram.model import PACK_FILE, Memory

__all__ = ["SCOPE", "content_key", "key_of", "normalized"]

# Sentence punctuation a repeated fact often gains or loses at its end (ASCII, the ellipsis, CJK full stops).
# Closing quotes and brackets stay: they pair with an opening one.
TRAILING = ".,;:!?\u2026\u3002\uff01\uff1f\uff0e\uff0c\uff1b\uff1a"
SCOPE = ("team", "project", "conversation_id", "pack", "sensitivity")  # where a memory is found
SESSION_SUMMARY = "session-summary"  # its key leaves out its conversation (the session it summarizes)
KEY_CHARS = 32  # 128 bits of sha256: no two contents of one agent share a key by chance


def normalized(text: str) -> str:
    """``text`` as two saves of the same thing compare: NFKC, case-folded, whitespace collapsed, the end trimmed."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.rstrip(TRAILING + " ")


def content_key(values: Mapping[str, Any]) -> str:
    """The key of a memory given as its JSON form (a log entry's or the index's payload); "" for a memory that never
    repeats another: a handoff, a pack file, or content that normalizes to nothing."""
    if values.get("handoff") or values.get("memory_type") == PACK_FILE:
        return ""
    text = normalized(str(values.get("content") or ""))
    if not text:
        return ""
    metadata = values.get("metadata")
    pack = metadata.get("pack", "") if isinstance(metadata, Mapping) else ""
    scope = {name: values.get(name) or "" for name in SCOPE if name != "pack"}
    if values.get("memory_type") == SESSION_SUMMARY:
        scope["conversation_id"] = ""
    scope["pack"] = pack if isinstance(pack, str) else ""
    scope["sensitivity"] = scope["sensitivity"] or "normal"
    identity = json.dumps([text, *(scope[name] for name in SCOPE)], ensure_ascii=False)
    return hashlib.sha256(identity.encode()).hexdigest()[:KEY_CHARS]


def key_of(memory: Memory) -> str:
    """content_key of a memory."""
    return content_key(
        {
            "content": memory.content,
            "memory_type": memory.memory_type,
            "handoff": memory.handoff is not None,
            "metadata": memory.metadata,
            **{name: getattr(memory, name) for name in SCOPE if name != "pack"},
        }
    )
