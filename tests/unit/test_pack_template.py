"""Tests for engram.packs.template: `engram packs init` writes every file of the format, and lint fails it until
its placeholder text is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.errors import InvalidArgument
from engram.packs.format import read_pack_dir
from engram.packs.lint import has_errors, lint_pack, parse_frontmatter
from engram.packs.template import init_pack


def test_a_new_pack_has_every_file_of_the_format_and_lints_clean_once_written(tmp_path: Path) -> None:
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
    for path in pack.files:
        pack.files[path] = pack.files[path].replace("Describe here", "Write here").replace(" in one line", ", briefly")
        pack.files[path] = pack.files[path].replace("Problem:", "Question:").replace("the ", "each ")
    pack.files["knowledge/core-principles.md"] = "# Core principles\n\nContracts are read whole, twice.\n"
    pack.meta["description"] = "Reads contracts for small businesses"
    assert lint_pack(pack) == []


def test_an_untouched_template_fails_lint_naming_what_to_replace(tmp_path: Path) -> None:
    pack = read_pack_dir(init_pack("contract-lawyer", tmp_path))

    issues = lint_pack(pack)

    assert has_errors(issues)
    assert [(i.severity, i.path) for i in issues if i.severity == "error"] == [
        ("error", "meta.json"),
        ("error", "role.md"),
    ]
    assert {i.path for i in issues if i.severity == "warning"} == set(pack.files) - {"role.md"}
    assert all("template" in i.message for i in issues)


def test_a_pack_named_otherwise_in_its_meta_is_still_recognised_as_the_template(tmp_path: Path) -> None:
    pack = read_pack_dir(init_pack("coach", tmp_path))
    pack.files["role.md"] = pack.files["role.md"].replace("You are Coach.", "You are Marathon coach.")

    assert any(i.path == "role.md" and i.severity == "error" for i in lint_pack(pack))


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
