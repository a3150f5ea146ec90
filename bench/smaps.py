"""Where a process's resident memory is, from /proc/<pid>/smaps: each mapping's RSS, grouped by what it maps."""

from __future__ import annotations

import re
from pathlib import Path

ARENA_ALIGN = 64 * 1024 * 1024  # glibc maps each thread arena's heap at a 64 MiB boundary
GUARD_MAX = 64 * 1024  # a thread stack's guard page(s) just below it
_MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")
# Index files by what they hold (Qdrant Edge's file names), checked in order.
_INDEX_FILES = (
    ("/wal/", "index: write-ahead log"),
    ("/payload_index/", "index: payload indexes"),
    ("/payload_storage/", "index: payloads"),
    ("/vector_index-", "index: vector graphs and sparse index"),
    ("chunk_", "index: vectors of appendable segments"),
    ("/vector_storage-", "index: vectors of indexed segments"),
)


def breakdown(pid: int, home: Path) -> dict[str, int]:
    """RSS in bytes per kind of mapping: the data dir's files by what they hold, shared libraries, other files,
    and anonymous memory as glibc's main heap, its thread arenas, thread stacks, and the rest (mmapped malloc
    chunks, Python's object arenas). Empty when the process is gone."""
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return out
    kind, previous_end, previous_guard = "", -1, False
    for line in text.splitlines():
        match = _MAPPING.match(line)
        if match:
            start, end = int(match[1], 16), int(match[2], 16)
            guard = match[3].startswith("---")
            kind = _kind(match[4].strip(), str(home), start, end, guard, previous_guard and previous_end == start)
            previous_end, previous_guard = end, guard and end - start <= GUARD_MAX
        elif line.startswith("Rss:"):
            out[kind] = out.get(kind, 0) + int(line.split()[1]) * 1024
    return {k: v for k, v in sorted(out.items(), key=lambda item: -item[1]) if v}


def _kind(path: str, home: str, start: int, end: int, guard: bool, after_guard: bool) -> str:
    if path.startswith(home + "/"):
        return next((name for part, name in _INDEX_FILES if part in path), "data dir: other files")
    if path == "[heap]":
        return "anon: glibc main heap"
    if path.startswith("["):
        return f"kernel {path}"
    if path:
        return "shared libraries" if ".so" in Path(path).name else "other files"
    if guard:
        return "anon: reserved (not resident)"
    if start % ARENA_ALIGN == 0:
        return "anon: glibc thread arenas"
    if after_guard:
        return "anon: thread stacks"
    return "anon: other (mmapped malloc chunks, Python's object arenas)"
