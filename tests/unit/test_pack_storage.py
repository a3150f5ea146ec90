"""How packs are kept as memories: files cut at headings and given back exactly, the seed's memory/ files rendered
from captured memories, expiry dates."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.errors import InvalidArgument
from engram.model import Memory, Relation
from engram.services.gateway.operations.packs.render import onboarding_block, render_memory_files, seed_expiry
from engram.services.gateway.operations.packs.storage import (
    CHUNK_CHARS,
    MAX_PART_CHARS,
    part_input,
    part_text,
    split_file,
)

PACKS = Path(__file__).resolve().parents[1] / "data" / "packs"


def _stored(text: str, path: str = "knowledge/x.md") -> str:
    """A file through the memories it is stored in, and back."""
    pieces = split_file(text)
    parts = []
    for i, piece in enumerate(pieces):
        draft = part_input("p", path, i, len(pieces), piece)
        parts.append(Memory(id=str(i), namespace="ns", content=draft.content, owner_agent="a",
                            metadata=json.loads(draft.metadata_json)))  # fmt: skip
    return "".join(part_text(part) for part in parts)


@pytest.mark.parametrize(
    "text",
    [
        "", "   \n", "# Title\n", "no heading at all " * 400, "\n\n# Lead blank lines\n\ntext\n\n\n",
        "".join(f"## Section {i}\n\n" + "Words of the section. " * 60 + "\n\n" for i in range(12)),
        "# One giant section\n\n" + ("A paragraph of text. " * 50 + "\n\n") * 40,
        "x" * (MAX_PART_CHARS * 3 + 7),
    ],
)  # fmt: skip
def test_a_file_comes_back_exactly_from_its_parts(text: str) -> None:
    assert _stored(text) == text


def test_a_long_file_is_cut_at_its_headings_into_parts_of_bounded_size() -> None:
    text = (PACKS / "fitness-coach" / "knowledge" / "muscle-building-basics.md").read_text()
    assert len(text) > CHUNK_CHARS
    parts = split_file(text)
    assert len(parts) > 1 and "".join(parts) == text
    assert all(part.lstrip().startswith("#") for part in parts)  # each part begins at a heading
    assert all(len(part) <= MAX_PART_CHARS for part in parts)


def _captured(summary: str, created: float, *, category: str = "prefs", **fields: object) -> Memory:
    return Memory(id=summary, namespace="ns", content=f"content of {summary}", owner_agent="a", summary=summary,
                  created_at=created, metadata={"pack": "p", "category": category}, **fields)  # type: ignore[arg-type]  # fmt: skip


def test_the_memory_files_hold_active_archived_and_expired_entries_apart() -> None:
    now = 2_000_000_000.0
    memories = [
        _captured("kept", 1.0),
        _captured("consolidated away", 2.0, status="archived", relations=[Relation(kind="merged-into", memory_id="x")]),
        _captured("deleted", 3.0, status="archived"),
        _captured("due", 4.0, expires_at=now - 1),
        _captured("expired by the job", 5.0, status="expired", category="health"),
        *(_captured(f"entry {i}", 10.0 + i) for i in range(60)),
    ]
    files = render_memory_files(memories, now=now)
    assert "kept" in files["memory/prefs.md"] and "deleted" not in json.dumps(files)
    assert "consolidated away" in files["memory/prefs-archive.md"]
    assert "due" in files["memory/prefs-expired.md"] and "expired by the job" in files["memory/health-expired.md"]
    hot = files["memory/_index.md"]
    assert hot.count("- `memory/prefs.md`") == 50 and "entry 59" in hot and "] kept" not in hot  # the latest 50
    assert files["memory/_index_full.md"].count("\n") == 61  # every active entry


def test_the_seeds_expiry_date_ends_with_that_day() -> None:
    moment = seed_expiry("2026-06-01", now=0)
    assert moment == datetime(2026, 6, 2, tzinfo=UTC).timestamp()
    with pytest.raises(InvalidArgument, match="expires"):
        seed_expiry("2026-13-45", now=0)
    with pytest.raises(InvalidArgument, match="expires"):
        seed_expiry("soon", now=0)


def test_the_onboarding_block_is_the_rules_onboarding_section() -> None:
    rules = (PACKS / "fitness-coach" / "rules.md").read_text()
    block = onboarding_block(rules)
    assert block and "## " not in block
    assert onboarding_block("# Rules\n- be kind\n") == ""
