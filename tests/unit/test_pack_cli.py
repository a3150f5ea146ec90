"""`engram packs` without a node: init, the lint of folders, and the refusals that happen before anything is sent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engram import cli
from tests.helpers.packs import FITNESS_COACH, FITNESS_COACH_KNEE
from tests.helpers.tools import free_port


def engram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[str, ...]:
    """--url of a port nobody listens on, and a home without a running node."""
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "home"))
    return ("--url", f"http://127.0.0.1:{free_port()}")


def test_init_creates_a_pack_whose_placeholders_fail_lint_and_says_what_to_do_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    code, out, err = engram(capsys, "packs", "init", "contract-lawyer", "--dir", str(tmp_path))

    assert (code, err) == (0, "")
    folder = tmp_path / "contract-lawyer"
    assert out.startswith(f"Created pack 'contract-lawyer' in {folder}: meta.json, role.md")
    assert f"engram packs lint {folder}\n  engram packs install {folder}" in out
    code, out, _ = engram(capsys, "packs", "lint", str(folder), *no_node)
    assert code == 1 and out.startswith("contract-lawyer: 2 errors, 6 warnings\n")
    assert "error: role.md: is still the template's text" in out

    code, _, err = engram(capsys, "packs", "init", "contract-lawyer", "--dir", str(tmp_path))
    assert (code, err) == (1, f"engram: name: {folder} exists already: choose another name or --dir.\n")


def test_lint_of_a_folder_finds_the_parent_next_to_it_and_exits_1_on_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    assert engram(capsys, "packs", "lint", str(FITNESS_COACH_KNEE), *no_node)[:2] == (0, "fitness-coach-knee: ok\n")

    alone = tmp_path / "fitness-coach-knee"
    shutil.copytree(FITNESS_COACH_KNEE, alone)
    code, out, _ = engram(capsys, "packs", "lint", str(alone), *no_node)  # no parent folder, no node: warnings
    assert code == 0 and out.startswith("fitness-coach-knee: 0 errors, 3 warnings\n")
    assert "warning: meta.json: extends 'fitness-coach', not checked" in out

    broken = tmp_path / "fitness-coach"
    shutil.copytree(FITNESS_COACH, broken)
    (broken / "knowledge" / "fat-loss-nutrition.md").unlink()
    code, out, _ = engram(capsys, "packs", "lint", str(broken), "--json", *no_node)
    assert code == 1
    (result,) = json.loads(out)["packs"]
    assert result["issues"][0] == {
        "severity": "error",
        "path": "knowledge/_index.md",
        "message": "line 10 lists knowledge/fat-loss-nutrition.md, which is missing.",
    }


def test_install_refuses_other_schemes_and_broken_packs_before_sending_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    code, out, err = engram(capsys, "packs", "install", "ssh://git@github.com/owner/pack.git", *no_node)
    assert (code, out) == (1, "")
    assert err.startswith("engram: source: 'ssh://***@github.com/owner/pack.git': only https:// git URLs")

    broken = tmp_path / "coach"
    shutil.copytree(FITNESS_COACH, broken)
    (broken / "role.md").unlink()
    code, out, err = engram(capsys, "packs", "install", str(broken), *no_node)
    assert (code, out) == (1, "")
    assert "  error: role.md: is missing: write who the expert is.\n" in err
    assert "engram: not installed: the pack has lint errors (above)" in err and "--force" in err


def test_commands_that_need_the_node_say_how_to_reach_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    for argv in (("list",), ("lint",), ("lint", "fitness-coach"), ("export", "fitness-coach", str(tmp_path / "out"))):
        code, out, err = engram(capsys, "packs", *argv, *no_node)
        assert (code, out) == (2, ""), argv
        assert "no Engram node answers at" in err and "engram serve" in err
    code, _, err = engram(capsys, "packs", "install", str(FITNESS_COACH), "--force", *no_node)
    assert code == 2 and "no Engram node answers" in err
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_folder_that_is_not_empty_before_asking_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    (tmp_path / "notes.md").write_text("mine")

    code, _, err = engram(capsys, "packs", "export", "fitness-coach", str(tmp_path), *no_node)

    assert code == 2 and "is not an empty folder" in err and "--force" in err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]


def test_lint_of_a_folder_with_a_link_loop_or_without_meta_json_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_node: tuple[str, ...]
) -> None:
    folder = tmp_path / "coach"
    shutil.copytree(FITNESS_COACH, folder)
    (folder / "knowledge" / "loop.md").symlink_to("loop.md")

    code, out, err = engram(capsys, "packs", "lint", str(folder), *no_node)
    assert (code, out, err) == (1, "", "engram: pack: knowledge/loop.md is a link that leads nowhere (a loop).\n")

    code, _, err = engram(capsys, "packs", "lint", str(tmp_path / "nowhere"), *no_node)
    assert code == 1 and "has no meta.json at its top: it is not a pack folder." in err
