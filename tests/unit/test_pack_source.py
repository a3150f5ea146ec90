"""Tests for engram.packs.source: packs fetched from real git repositories and folders in temp dirs, with hooks
never run, links out of the pack, oversized packs and other schemes refused, and nothing left behind."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.errors import InvalidArgument, Unavailable
from engram.packs.format import PackLimits, read_pack_dir
from engram.packs.source import fetch_pack, parse_source, redact
from tests.helpers.packs import FITNESS_COACH, FITNESS_COACH_KNEE, commit_all, git, git_repo
from tests.helpers.tools import free_port

HOOK = "#!/bin/sh\necho ran > {marker}\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path / "work"


def assert_clean(work: Path) -> None:
    assert not work.exists() or list(work.iterdir()) == []


def test_a_pack_at_the_root_of_a_local_repository_is_fetched_whole_and_the_workdir_left_empty(
    tmp_path: Path, work: Path
) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    pack = fetch_pack(str(repo), work)

    expected = read_pack_dir(FITNESS_COACH)
    assert (pack.name, pack.meta, pack.files) == (expected.name, expected.meta, expected.files)
    assert "knowledge/muscle-building-basics.md" in pack.files
    assert_clean(work)


def test_a_file_url_and_a_path_with_spaces_and_non_ascii_letters_are_cloned(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path / "my packs — 健身", FITNESS_COACH)

    assert fetch_pack(repo.as_uri(), work).name == "fitness-coach"
    assert fetch_pack(str(repo), work, name="coach").name == "coach"
    assert_clean(work)


def test_a_repository_installs_what_is_committed_not_the_working_tree(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (repo / "knowledge" / "draft.md").write_text("# not committed yet\n")

    assert "knowledge/draft.md" not in fetch_pack(str(repo), work).files


def test_a_pack_in_a_subdir_is_fetched_and_keeps_its_extends(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH, FITNESS_COACH_KNEE, subdir="packs")

    child = fetch_pack(str(repo), work, subdir="packs/fitness-coach-knee")

    assert (child.name, child.extends) == ("fitness-coach-knee", "fitness-coach")
    assert "knowledge/return-to-running.md" in child.files
    assert_clean(work)


def test_a_plain_folder_is_read_in_place(work: Path) -> None:
    pack = fetch_pack(str(FITNESS_COACH_KNEE), work)

    assert pack.extends == "fitness-coach"
    assert not work.exists()


def test_a_repository_without_meta_json_at_the_top_points_to_subdir(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH, subdir="packs")

    with pytest.raises(InvalidArgument, match=r"no meta.json at its top.*--subdir"):
        fetch_pack(str(repo), work)
    with pytest.raises(InvalidArgument, match="has no folder 'packs/missing'"):
        fetch_pack(str(repo), work, subdir="packs/missing")
    assert_clean(work)


def test_no_hook_runs_not_even_from_this_machines_git_configuration_or_templates(
    tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's own hooks never travel with a clone; the danger is hooks this machine would add (a
    global core.hooksPath, a template directory): a plain clone with the same environment runs them."""
    repo = git_repo(tmp_path, FITNESS_COACH)
    marker = tmp_path / "hook-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("post-checkout", "post-merge", "reference-transaction"):
        (hooks / name).write_text(HOOK.format(marker=marker))
        (hooks / name).chmod(0o755)
    (repo / ".git" / "hooks" / "post-checkout").write_text(HOOK.format(marker=marker))
    (repo / ".git" / "hooks" / "post-checkout").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)

    subprocess.run(["git", "clone", "--quiet", str(repo), str(tmp_path / "plain")], check=True, timeout=60)
    assert marker.exists(), "the test's hook setup does not work: a plain clone should have run it"
    marker.unlink()

    assert fetch_pack(str(repo), work).name == "fitness-coach"
    assert not marker.exists()
    assert_clean(work)


@pytest.mark.parametrize(
    ("link", "target"),
    [("knowledge/x.md", "/etc/passwd"), ("knowledge/secrets", "/etc"), ("role-copy.md", "../outside.md")],
)
def test_a_link_leaving_the_pack_is_refused_whatever_its_name(
    tmp_path: Path, work: Path, link: str, target: str
) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (tmp_path / "outside.md").write_text("# a file next to the repository\n")
    (repo / link).symlink_to(target)
    commit_all(repo, "a link out")

    with pytest.raises(InvalidArgument, match=f"{link} is a link to outside the pack"):
        fetch_pack(str(repo), work)
    with pytest.raises(InvalidArgument, match="link to outside the pack"):  # the same folder, not cloned
        fetch_pack_folder(repo, tmp_path)
    assert_clean(work)


def fetch_pack_folder(repo: Path, tmp_path: Path) -> None:
    """The repository's working tree read as a plain folder (a copy without .git, links kept)."""
    folder = tmp_path / "folder"
    shutil.copytree(repo, folder, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    fetch_pack(str(folder), tmp_path / "work-folder")


@pytest.mark.parametrize(
    ("link", "target", "problem"),
    [
        ("knowledge/loop.md", "loop.md", "leads nowhere (a loop)"),
        ("knowledge/gone.md", "gone-away.md", "does not exist"),
    ],
)
def test_a_link_that_loops_or_leads_nowhere_is_refused(
    tmp_path: Path, work: Path, link: str, target: str, problem: str
) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (repo / link).symlink_to(target)
    commit_all(repo, "a broken link")

    with pytest.raises(InvalidArgument, match=re.escape(f"{link} is a link ") + ".*" + re.escape(problem)):
        fetch_pack(str(repo), work)
    assert_clean(work)


def test_a_link_to_a_folder_inside_the_pack_is_not_followed(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (repo / "knowledge" / "again").symlink_to(".")
    commit_all(repo, "a link to its own folder")

    assert not any(path.startswith("knowledge/again/") for path in fetch_pack(str(repo), work).files)


def test_a_link_inside_the_pack_is_read_as_its_target(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (repo / "knowledge" / "alias.md").symlink_to("beginner-training-plan.md")
    commit_all(repo, "an alias")

    pack = fetch_pack(str(repo), work)

    assert pack.files["knowledge/alias.md"] == pack.files["knowledge/beginner-training-plan.md"]


def test_a_subdir_that_links_out_of_the_repository_is_refused(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH, subdir="packs")
    (repo / "packs" / "elsewhere").symlink_to(FITNESS_COACH_KNEE)
    commit_all(repo, "a linked folder")

    with pytest.raises(InvalidArgument, match="is a link that leaves"):
        fetch_pack(str(repo), work, subdir="packs/elsewhere")
    assert_clean(work)


@pytest.mark.parametrize("subdir", ["../fitness-coach", "packs/../../x", "/etc", ".git", "packs\\x", "a\x00b"])
def test_a_subdir_leaving_the_repository_is_refused_before_cloning(work: Path, subdir: str) -> None:
    with pytest.raises(InvalidArgument, match="subdir"):
        fetch_pack(str(FITNESS_COACH), work, subdir=subdir)
    assert not work.exists()


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    with pytest.raises(InvalidArgument, match=r"muscle-building-basics.md is .* bytes; at most 2000"):
        fetch_pack(str(repo), work, limits=PackLimits(max_file_bytes=2000))
    assert_clean(work)


def test_too_many_files_are_refused(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    with pytest.raises(InvalidArgument, match="more than 5 Markdown files"):
        fetch_pack(str(repo), work, limits=PackLimits(max_files=5))
    assert_clean(work)


def test_a_pack_over_the_total_size_is_refused(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    with pytest.raises(InvalidArgument, match="larger than"):
        fetch_pack(str(repo), work, limits=PackLimits(max_bytes=5000))


def test_a_repository_larger_than_the_clone_budget_is_stopped_and_removed(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    (repo / "video.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # not Markdown, but it is cloned all the same
    commit_all(repo, "a large file")

    with pytest.raises(InvalidArgument, match=r"too large to be a pack.*--subdir"):
        fetch_pack(str(repo), work, limits=PackLimits(max_bytes=256 * 1024))
    assert_clean(work)


def test_a_repository_with_too_many_files_for_the_clone_budget_is_refused(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    for i in range(200):
        (repo / f"image-{i}.png").write_bytes(b"png")
    commit_all(repo, "many files")

    with pytest.raises(InvalidArgument, match="too large to be a pack"):
        fetch_pack(str(repo), work, limits=PackLimits(max_files=15))
    assert_clean(work)


@pytest.mark.parametrize(
    "source",
    [
        "ssh://git@github.com/owner/pack.git",
        "git@github.com:owner/pack.git",
        "git://github.com/owner/pack.git",
        "http://github.com/owner/pack.git",
        "ext::sh -c touch% /tmp/pwned",
        "-oProxyCommand=touch /tmp/pwned",
        "--upload-pack=touch /tmp/pwned",
        "fd::3",
        "https://",
        "https://-oProxyCommand=x/y",
        "file://example.com/srv/pack",
        "",
        "   ",
    ],
)
def test_other_schemes_and_option_like_sources_are_refused_before_git_runs(work: Path, source: str) -> None:
    with pytest.raises(InvalidArgument, match=r"^source: "):
        fetch_pack(source, work)
    assert not work.exists()


def test_a_missing_folder_is_refused_with_what_to_give(work: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="is not a folder; give an https:// git URL"):
        fetch_pack(str(tmp_path / "nowhere"), work)


def test_local_sources_can_be_refused_for_remote_callers(tmp_path: Path, work: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    for source in (str(repo), repo.as_uri(), str(FITNESS_COACH)):
        with pytest.raises(InvalidArgument, match="local folders cannot be installed here"):
            fetch_pack(source, work, local=False)
    assert parse_source("https://example.com/owner/pack.git", local=False).url.startswith("https://")


def test_credentials_in_a_url_never_appear_in_errors(work: Path) -> None:
    url = f"https://reader:s3cr3t-token@127.0.0.1:{free_port()}/owner/pack.git"

    with pytest.raises(Unavailable) as caught:
        fetch_pack(url, work, timeout=30)

    assert "s3cr3t" not in str(caught.value) and "reader" not in str(caught.value)
    assert "***@127.0.0.1" in str(caught.value) and "Check the URL" in str(caught.value)
    assert redact("https://a:b@host/x") == "https://***@host/x"
    assert_clean(work)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers (a stalled https server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_clone_that_outlasts_its_timeout_is_stopped_and_removed(silent_server: int, work: Path) -> None:
    with pytest.raises(Unavailable, match="took longer than 1 s"):
        fetch_pack(f"https://127.0.0.1:{silent_server}/owner/pack.git", work, timeout=1)
    assert_clean(work)


def test_without_git_the_error_says_to_install_it(tmp_path: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))

    with pytest.raises(Unavailable, match="git is not installed: install git"):
        fetch_pack(str(repo), work)
    assert_clean(work)


def test_the_helper_repository_is_committed_with_the_fixed_author(tmp_path: Path) -> None:
    repo = git_repo(tmp_path, FITNESS_COACH)

    assert (
        git(repo, "log", "--format=%an <%ae> %aI").strip()
        == "Engram Tests <tests@engram.invalid> 2026-01-01T00:00:00+00:00"
    )
