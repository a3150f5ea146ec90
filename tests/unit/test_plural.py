"""Counts read as English: one memory, two memories."""

from __future__ import annotations

from pathlib import Path

from engram import plural
from engram.formats.vault import ExportReport


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert plural.memories(1) == "1 memory"
    assert plural.memories(0) == "0 memories"
    assert plural.memories(2_000, "active") == "2,000 active memories"
    assert plural.memories(1, "new") == "1 new memory"
    assert plural.counted(1, "line") == "1 line" and plural.counted(3, "line") == "3 lines"


def test_an_export_of_one_memory_says_memory() -> None:
    report = ExportReport(folder=Path("/vault"), written=1, skipped_secret=1)
    assert report.summary().startswith("wrote 1 memory to /vault; skipped 1 secret memory")
