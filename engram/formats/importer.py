"""The JSON-lines import file: one save_memory object per line, read in chunks for the bulk import, with the
position an interrupted import resumes from (kept next to the file). `engram import` sends it (engram/cli/vault.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_CHUNK_LINES = 1000
# Well under the server's import body limit (ENGRAM_MAX_IMPORT_BYTES, 32 MiB by default).
DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
STATE_SUFFIX = ".engram-import.json"


@dataclass(slots=True)
class ImportReport:
    imported: int = 0  # newly stored
    already_present: int = 0  # already stored (same content, or same source_id): nothing new written
    rejected: list[tuple[int, str]] = field(default_factory=list)
    last_line: int = 0
    last_seq: int = 0
    seconds: float = 0.0

    def count(self, answer: dict[str, Any], *, last_line: int) -> None:
        """Adds one answer of the bulk import (imported, already present, rejected lines, last sequence)."""
        self.imported += answer["imported"]
        self.already_present += answer.get("already_present", 0)
        self.rejected.extend((r["line"], r["reason"]) for r in answer["rejected"])
        self.last_line = max(self.last_line, last_line)
        self.last_seq = answer["last_seq"] or self.last_seq


def state_path(source: Path) -> Path:
    return source.with_name(source.name + STATE_SUFFIX)


def resume_after(source: Path, *, restart: bool = False) -> int:
    """The last line an earlier import of source stored (0: start at the top)."""
    state = state_path(source)
    if restart or not state.exists():
        return 0
    return int(json.loads(state.read_text()).get("last_line", 0))


def save_position(source: Path, report: ImportReport) -> None:
    """Keeps how far the import got, so a rerun resumes after it."""
    state_path(source).write_text(json.dumps({"last_line": report.last_line, "last_seq": report.last_seq}))


def finished(source: Path) -> None:
    """Forgets the position: the next import of source starts from the top."""
    state_path(source).unlink(missing_ok=True)


def chunks(
    source: Path, start_after: int, size: int, max_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[tuple[int, list[str]]]:
    """(first line number, raw lines) chunks after line start_after, each at most size lines and about max_bytes
    (a single longer line is a chunk of its own); blank lines keep their numbers."""
    chunk: list[str] = []
    chunk_bytes = 0
    first = start_after + 1
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if number <= start_after:
                continue
            line = line.rstrip("\n")
            if chunk and chunk_bytes + len(line) > max_bytes:
                yield first, chunk
                chunk, chunk_bytes = [], 0
            if not chunk:
                first = number
            chunk.append(line)
            chunk_bytes += len(line) + 1
            if len(chunk) >= size:
                yield first, chunk
                chunk, chunk_bytes = [], 0
    if chunk:
        yield first, chunk


def count_lines(source: Path) -> int:
    with source.open("rb") as handle:
        return sum(1 for _ in handle)
