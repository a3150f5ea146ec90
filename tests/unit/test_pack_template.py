"""Tests for engram.packs.template: `engram packs init` writes every file of the format and passes lint."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.errors import InvalidArgument
from engram.packs.format import read_pack_dir
from engram.packs.lint import lint_pack, parse_frontmatter
from engram.packs.template import init_pack


def test_a_new_pack_has_every_file_of_the_format_and_lints_clean(tmp_path: Path) -> None:
    folder = init_pack("contract-lawyer", tmp_path)

    pack = read_pack_dir(folder)

    assert folder == tmp_path / "contract-lawyer"
    assert pack.meta["name"] == "contract-lawyer" and pack.meta["description"].startswith("Contract lawyer: ")
    assert set(pack.files) == {
        "role.md", "workflow.md", "rules.md", "knowledge/_index.md", "knowledge/core-principles.md",
        "examples/_index.md", "examples/first-case.md",
    }  # fmt: skip
    assert "## Onboarding" in pack.files["rules.md"]
    assert "You are Contract lawyer." in pack.files["role.md"]
    assert parse_frontmatter(pack.files["examples/first-case.md"])["uses"] == ["knowledge/core-principles.md"]
    assert lint_pack(pack) == []


def test_a_name_with_quotes_and_unicode_stays_valid_json(tmp_path: Path) -> None:
    folder = init_pack('健身 "pro"', tmp_path)

    assert read_pack_dir(folder).meta["name"] == '健身 "pro"'


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "coach").mkdir()
    (tmp_path / "coach" / "role.md").write_text("mine")

    with pytest.raises(InvalidArgument, match="exists already"):
        init_pack("coach", tmp_path)
    assert [p.name for p in (tmp_path / "coach").iterdir()] == ["role.md"]


def test_a_bad_name_creates_nothing(tmp_path: Path) -> None:
    for name in ("../escape", "_global", ""):
        with pytest.raises(InvalidArgument):
            init_pack(name, tmp_path)
    assert list(tmp_path.iterdir()) == []
