"""Pack fixtures for the tests: the folders under tests/data/packs, and local git repositories made of them (what
`engram packs install` and `install_engram` clone in tests instead of an https:// repository)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

PACKS = Path(__file__).resolve().parents[1] / "data" / "packs"
FITNESS_COACH = PACKS / "fitness-coach"
FITNESS_COACH_KNEE = PACKS / "fitness-coach-knee"  # extends fitness-coach
AUTHOR = "Engram Tests <tests@engram.invalid>"
COMMIT_TIME = "2026-01-01T00:00:00Z"


def git(cwd: Path, *args: str) -> str:
    """Runs git in ``cwd`` without this machine's configuration, with a fixed author and time; returns stdout."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": AUTHOR.split(" <")[0],
        "GIT_AUTHOR_EMAIL": AUTHOR.split("<")[1].rstrip(">"),
        "GIT_COMMITTER_NAME": AUTHOR.split(" <")[0],
        "GIT_COMMITTER_EMAIL": AUTHOR.split("<")[1].rstrip(">"),
        "GIT_AUTHOR_DATE": COMMIT_TIME,
        "GIT_COMMITTER_DATE": COMMIT_TIME,
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


def commit_all(repo: Path, message: str = "pack") -> None:
    """Stages everything in ``repo`` (links as links) and commits it."""
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "-m", message)


def git_repo(tmp: Path, *folders: Path, subdir: str = "") -> Path:
    """A new git repository in ``tmp``/repo holding a copy of each pack folder (at its root when there is one
    folder and no ``subdir``, else each under ``subdir``/<folder name>), committed on branch main."""
    repo = tmp / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    for folder in folders:
        target = repo / subdir / folder.name if subdir or len(folders) > 1 else repo
        shutil.copytree(folder, target, symlinks=True, dirs_exist_ok=True)
    commit_all(repo)
    return repo
