"""`engram packs` against a real secured node: install from local git repositories (a child pack from a subdir),
list, lint the installed packs, export and install the export again; the packs scope and lint errors refuse."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from engram import cli
from engram.packs.format import read_pack_dir
from tests.conftest import NodeHandle
from tests.helpers.packs import FITNESS_COACH, FITNESS_COACH_KNEE, git_repo

pytestmark = [pytest.mark.e2e]


def engram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def url(secured_node: NodeHandle, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """--url of the node, with ENGRAM_API_KEY a key of a new namespace with the packs scope."""
    key = secured_node.create_key(f"packs-{uuid.uuid4().hex[:8]}", "curator", scopes=("read", "write", "packs"))
    monkeypatch.setenv("ENGRAM_API_KEY", key)
    return ("--url", secured_node.http_url)


def test_install_list_lint_export_and_reinstall(
    url: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent_repo = git_repo(tmp_path / "parent", FITNESS_COACH)
    both_repo = git_repo(tmp_path / "both", FITNESS_COACH, FITNESS_COACH_KNEE, subdir="packs")
    assert engram(capsys, "packs", "list", *url)[:2] == (0, "No packs installed yet. Install one: engram packs "
                                                          "install <https git URL or folder>.\n")  # fmt: skip

    code, out, err = engram(capsys, "packs", "install", str(both_repo), "--subdir", "packs/fitness-coach-knee", *url)
    assert (code, out) == (1, ""), err  # its parent is not installed yet
    assert "error: meta.json: extends 'fitness-coach', which is not installed: install 'fitness-coach' first." in err

    code, out, err = engram(capsys, "packs", "install", str(parent_repo), *url)
    assert code == 0, err
    assert out == (
        f"Installed pack 'fitness-coach' (13 files) from {parent_repo}.\n"
        'Agents load it with load_engram(name="fitness-coach"); `engram packs list` shows it.\n'
    )
    assert err == (
        f"Fetching {parent_repo} ...\nFetched pack 'fitness-coach': 13 files, 5 knowledge files, 3 examples.\n"
    )
    code, out, err = engram(capsys, "packs", "install", str(both_repo), "--subdir", "packs/fitness-coach-knee", *url)
    assert (code, err.count("error:")) == (0, 0), err
    assert out.startswith("Installed pack 'fitness-coach-knee' (7 files)")

    code, _, err = engram(capsys, "packs", "install", parent_repo.as_uri(), *url)
    assert code == 1 and "(HTTP 409)" in err and "--replace updates it (its memories are kept)" in err
    code, out, err = engram(capsys, "packs", "install", parent_repo.as_uri(), "--replace", *url)
    assert code == 0 and out.startswith("Updated pack 'fitness-coach' (13 files)"), err

    code, out, _ = engram(capsys, "packs", "list", *url)
    assert code == 0
    header, parent_row, child_row = out.splitlines()
    assert header.split() == ["NAME", "VERSION", "KNOWLEDGE", "EXAMPLES", "FILES", "EXTENDS", "DESCRIPTION"]
    assert parent_row.split()[:6] == ["fitness-coach", "1.0.0", "5", "3", "13", "-"]
    assert child_row.split()[:6] == ["fitness-coach-knee", "1.0.0", "1", "1", "7", "fitness-coach"]
    listed = json.loads(engram(capsys, "packs", "list", "--json", *url)[1])
    assert [p["name"] for p in listed["packs"]] == ["fitness-coach", "fitness-coach-knee"]

    assert engram(capsys, "packs", "lint", *url)[:2] == (0, "fitness-coach: ok\nfitness-coach-knee: ok\n")
    assert engram(capsys, "packs", "lint", "fitness-coach-knee", *url)[:2] == (0, "fitness-coach-knee: ok\n")
    code, out, err = engram(capsys, "packs", "lint", "no-such-pack", *url)
    assert (code, out) == (1, "") and "HTTP 404" in err

    exported = tmp_path / "exported"
    code, out, err = engram(capsys, "packs", "export", "fitness-coach", str(exported), *url)
    assert code == 0, err
    assert out.startswith(f"Exported pack 'fitness-coach' to {exported}: meta.json and ")
    again, original = read_pack_dir(exported), read_pack_dir(FITNESS_COACH)
    assert again.meta == original.meta
    assert {p: t for p, t in again.files.items() if not p.startswith("memory/")} == original.files
    code, _, err = engram(capsys, "packs", "export", "fitness-coach", str(exported), *url)
    assert code == 2 and "is not an empty folder" in err
    assert engram(capsys, "packs", "export", "fitness-coach", str(exported), "--force", *url)[0] == 0

    code, out, err = engram(capsys, "packs", "install", str(exported), "--name", "coach-copy", *url)
    assert code == 0 and out.startswith("Installed pack 'coach-copy' (13 files)"), err
    copy = tmp_path / "copy"
    assert engram(capsys, "packs", "export", "coach-copy", str(copy), *url)[0] == 0
    assert read_pack_dir(copy).files == again.files


def test_installing_needs_the_packs_scope(
    secured_node: NodeHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = secured_node.create_key(f"packs-{uuid.uuid4().hex[:8]}", "writer", scopes=("read", "write"))
    monkeypatch.setenv("ENGRAM_API_KEY", key)

    code, out, err = engram(capsys, "packs", "install", str(FITNESS_COACH), "--url", secured_node.http_url)

    assert (code, out) == (1, "")
    assert "packs" in err and "(HTTP 403)" in err
    assert engram(capsys, "packs", "list", "--url", secured_node.http_url)[0] == 0


def test_lint_errors_block_an_install_unless_forced(
    url: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken-coach"
    shutil.copytree(FITNESS_COACH, broken)
    (broken / "knowledge" / "fat-loss-nutrition.md").unlink()

    code, out, err = engram(capsys, "packs", "install", str(broken), "--name", "broken-coach", *url)
    assert (code, out) == (1, "")
    assert "error: knowledge/_index.md: line 10 lists knowledge/fat-loss-nutrition.md, which is missing." in err

    code, out, err = engram(capsys, "packs", "install", str(broken), "--name", "broken-coach", "--force", *url)
    assert code == 0 and out.startswith("Installed pack 'broken-coach' (12 files)"), err
    code, out, _ = engram(capsys, "packs", "lint", "broken-coach", *url)
    assert code == 1 and out.startswith("broken-coach: 1 error, ")
