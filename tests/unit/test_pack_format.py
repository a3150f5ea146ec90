"""Tests for engram.packs.format: names, paths, meta.json, and reading and writing pack folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.errors import InvalidArgument
from engram.packs.format import (
    Pack,
    PackLimits,
    check_pack_name,
    check_pack_path,
    parse_meta,
    read_pack_dir,
    write_pack_dir,
)
from tests.helpers.packs import FITNESS_COACH, FITNESS_COACH_KNEE


def test_pack_names_take_unicode_and_refuse_slashes_dots_and_the_global_memory() -> None:
    assert check_pack_name(" fitness-coach ") == "fitness-coach"
    assert check_pack_name("健身教练") == "健身教练"
    for bad in ("", "a/b", "a\\b", ".hidden", "_global", "x\x00y", "n" * 65, None, 3):
        with pytest.raises(InvalidArgument):
            check_pack_name(bad)


@pytest.mark.parametrize(
    ("path", "normal"),
    [("role.md", "role.md"), ("./knowledge//x.md", "knowledge/x.md"), ("meta.json", "meta.json"),
     ("knowledge/训练.md", "knowledge/训练.md")],
)  # fmt: skip
def test_pack_paths_are_normalised(path: str, normal: str) -> None:
    assert check_pack_path(path) == normal


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("../x.md", "leaves the pack"),
        ("knowledge/../../x.md", "leaves the pack"),
        ("/etc/passwd.md", "is absolute"),
        ("C:/x.md", "is absolute"),
        ("knowledge\\x.md", "backslash"),
        ("knowledge/x\x00.md", "control character"),
        (".git/config.md", "hidden file"),
        ("knowledge/x.txt", "not a Markdown file"),
        ("", "is required"),
    ],
)
def test_paths_that_could_leave_the_pack_are_refused(path: str, problem: str) -> None:
    with pytest.raises(InvalidArgument, match=problem):
        check_pack_path(path)


def test_meta_must_be_a_json_object_with_a_valid_extends() -> None:
    assert parse_meta('{"name": "x", "extends": "fitness-coach"}')["extends"] == "fitness-coach"
    for text, problem in (("{", "not valid JSON"), ("[]", "must be a JSON object"), ('{"extends": "../x"}', "extends")):
        with pytest.raises(InvalidArgument, match=problem):
            parse_meta(text)


def test_the_fixture_packs_read_with_their_layout(tmp_path: Path) -> None:
    coach = read_pack_dir(FITNESS_COACH)
    knee = read_pack_dir(FITNESS_COACH_KNEE)

    assert coach.name == "fitness-coach" and coach.extends == "" and knee.extends == "fitness-coach"
    knowledge = [p for p in coach.files if p.startswith("knowledge/") and not p.endswith("_index.md")]
    examples = [p for p in coach.files if p.startswith("examples/") and not p.endswith("_index.md")]
    assert (len(knowledge), len(examples)) == (5, 3)
    assert "## Onboarding" in coach.files["rules.md"] and "## Onboarding" in knee.files["rules.md"]
    long_file = coach.files["knowledge/muscle-building-basics.md"]
    assert len(long_file) > 3000 and long_file.count("\n## ") >= 5  # long enough to be searched by heading
    assert coach.files["knowledge/_index.md"].count("### ") == 3


def test_a_pack_written_and_read_back_is_equal(tmp_path: Path) -> None:
    coach = read_pack_dir(FITNESS_COACH)
    write_pack_dir(coach, tmp_path / "out")

    again = read_pack_dir(tmp_path / "out")

    assert (again.name, again.meta, again.files) == (coach.name, coach.meta, coach.files)
    assert json.loads((tmp_path / "out" / "meta.json").read_text()) == coach.meta


def test_writing_refuses_a_path_outside_the_folder_before_writing_anything(tmp_path: Path) -> None:
    pack = Pack(name="x", meta={"name": "x"}, files={"role.md": "r", "../escape.md": "e"})

    with pytest.raises(InvalidArgument, match="leaves the pack"):
        write_pack_dir(pack, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "escape.md").exists()


def test_reading_skips_other_files_and_refuses_links_out_and_oversized_files(tmp_path: Path) -> None:
    folder = tmp_path / "pack"
    write_pack_dir(read_pack_dir(FITNESS_COACH_KNEE), folder)
    (folder / "photo.png").write_bytes(b"\x89PNG")
    (folder / ".git").mkdir()
    (folder / ".git" / "notes.md").write_text("not part of the pack")
    assert set(read_pack_dir(folder).files) == set(read_pack_dir(FITNESS_COACH_KNEE).files)

    with pytest.raises(InvalidArgument, match="at most 100"):
        read_pack_dir(folder, limits=PackLimits(max_file_bytes=100))
    (folder / "knowledge" / "passwd.md").symlink_to("/etc/passwd")
    with pytest.raises(InvalidArgument, match=r"knowledge/passwd.md is a link to outside the pack"):
        read_pack_dir(folder)


def test_a_folder_without_meta_json_or_with_non_utf8_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"has no meta.json"):
        read_pack_dir(tmp_path)
    (tmp_path / "meta.json").write_text('{"name": "x"}')
    (tmp_path / "role.md").write_bytes(b"\xff\xfe role")
    with pytest.raises(InvalidArgument, match=r"role.md is not UTF-8 text"):
        read_pack_dir(tmp_path)
