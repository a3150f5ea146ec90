"""A pack's files as memories and back: a file cut at its headings into parts (each a ``pack-file`` memory whose
metadata keeps the whitespace around it), and the parts put together again."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engram.model import PACK_FILE, Memory, MemoryInput
from engram.packs.format import META
from engram.scrub import scrub_text

META_TAG = "pack-meta"

CHUNK_CHARS = 2000  # a file longer than this is cut at its headings into parts of about this size

MAX_PART_CHARS = 6000  # a part is never longer (24 KiB of UTF-8 at most: within the content limit)

EMPTY = "(empty file)"  # the content of an empty file's memory (a memory has content)

_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)


@dataclass(slots=True)
class StoredFile:
    """A pack file as memories: its parts in order."""

    path: str
    parts: list[Memory]

    @property
    def text(self) -> str:
        return "".join(part_text(part) for part in self.parts)


@dataclass(slots=True)
class PackContents:
    """Everything of one pack in the index: its files and what it captured."""

    name: str
    meta: dict[str, Any]
    owner: str
    files: dict[str, StoredFile]
    captured: list[Memory]

    def file(self, path: str) -> str | None:
        stored = self.files.get(path)
        return stored.text if stored is not None else None


def split_file(text: str) -> list[str]:
    """The parts a file is stored in, whose concatenation is the file (scrubbed): a short file whole; a long one cut
    before its headings into parts of about CHUNK_CHARS (none longer than MAX_PART_CHARS). The whole text is
    scrubbed before it is cut, so that no secret is cut in two halves that each pass the scrubbing of its part."""
    text = scrub_text(text).text
    if len(text) <= CHUNK_CHARS:
        return [text]
    starts = [0, *(m.start() for m in _HEADING.finditer(text) if m.start() > 0), len(text)]
    sections = [text[a:b] for a, b in itertools.pairwise(starts) if b > a]
    parts: list[str] = []
    for section in sections:
        for piece in _cut(section):
            if parts and len(parts[-1]) + len(piece) <= CHUNK_CHARS:
                parts[-1] += piece
            else:
                parts.append(piece)
    return parts


def _cut(section: str) -> list[str]:
    """A section no longer than MAX_PART_CHARS, cut at blank lines (else anywhere) when it is longer."""
    if len(section) <= MAX_PART_CHARS:
        return [section]
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"(?<=\n\n)", section):
        while len(paragraph) > MAX_PART_CHARS:
            pieces += [current] if current else []
            current = ""
            pieces.append(paragraph[:MAX_PART_CHARS])
            paragraph = paragraph[MAX_PART_CHARS:]
        if len(current) + len(paragraph) > MAX_PART_CHARS:
            pieces.append(current)
            current = ""
        current += paragraph
    return [*pieces, current] if current else pieces


def part_text(memory: Memory) -> str:
    meta = memory.metadata
    if meta.get("empty"):
        return str(meta.get("lead", ""))
    return f"{meta.get('lead', '')}{memory.content}{meta.get('trail', '')}"


def part_input(name: str, path: str, index: int, count: int, text: str) -> MemoryInput:
    stripped = text.strip()
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :] if stripped else ""
    metadata: dict[str, Any] = {"pack": name, "pack_path": path, "part": index, "parts": count}
    if lead:
        metadata["lead"] = lead
    if trail:
        metadata["trail"] = trail
    if not stripped:
        metadata["empty"] = True
    heading = next((line.lstrip("# ").strip() for line in stripped.splitlines() if line.startswith("#")), "")
    if path == META:
        metadata["meta"] = json.loads(text)  # read by list_engrams without reassembling the file
    return MemoryInput(
        content=stripped or EMPTY,
        summary=f"{name}: {path}" + (f" — {heading}" if heading else ""),
        memory_type=PACK_FILE,
        tags=[META_TAG] if path == META else [],
        metadata_json=json.dumps(metadata, ensure_ascii=False),
        context=f"Expert pack {name}, file {path}" + (f", section {heading}" if heading else ""),
    )


def file_counts(paths: Iterable[str]) -> dict[str, int]:
    """A pack's files, knowledge files and examples (the indexes not counted), from its paths."""
    paths = list(paths)
    return {
        "files": len(paths),
        "knowledge": sum(1 for p in paths if p.startswith("knowledge/") and not p.endswith("_index.md")),
        "examples": sum(1 for p in paths if p.startswith("examples/") and not p.endswith("_index.md")),
    }
