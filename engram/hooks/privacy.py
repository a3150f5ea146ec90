"""What is never captured: a paused capture, a project that opted out, private and git-ignored files."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from pathlib import Path

OPT_OUT_FILE = ".engram-ignore"  # in a project (or any folder above the working directory): nothing is captured
PAUSED_FILE = "paused"  # in <home>/hooks: `engram hooks pause`
# Files whose content or changes are never captured, wherever they are (matched against each part of a path).
PRIVATE_PATTERNS = (
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore", "id_rsa*", "id_ed25519*", "id_ecdsa*",
    ".netrc", ".npmrc", ".pypirc", ".pgpass", "credentials", "credentials.*", "*.secret", "*.secrets",
    "secrets.*", ".ssh", ".aws", ".gnupg", ".docker", ".kube", "secrets", ".git-credentials",
)  # fmt: skip
GIT_TIMEOUT = 2.0
MAX_PATH_WORDS = 50  # of one command, asked of git
# Shell words: split at blanks, quotes, operators, redirections and assignments (`--env-file=.env`, `2>out.log`).
_WORD_SPLIT = re.compile(r"[\s'\"`;&|<>()=$,]+")
_PROGRAM = re.compile(r"(?:^|[;&|(]|&&|\|\|)\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([^\s;&|()]+)")


def paused(hooks_dir: Path) -> bool:
    return (hooks_dir / PAUSED_FILE).exists()


def opted_out(cwd: str) -> Path | None:
    """The opt-out file that covers this working directory, if any (it or a folder above it has one)."""
    if not cwd:
        return None
    here = Path(cwd)
    for folder in (here, *here.parents):
        candidate = folder / OPT_OUT_FILE
        if candidate.is_file():
            return candidate
    return None


def private(path: str) -> bool:
    """A path to a credential or key file, or inside a folder of them."""
    parts = [p for p in Path(path).parts if p not in ("/", "")]
    return any(fnmatch.fnmatch(part, pattern) for part in parts for pattern in PRIVATE_PATTERNS)


def mentions_private(text: str) -> bool:
    """A command that names a private file (e.g. `cat .env`, `source .env&&make`, `--env-file=.env`)."""
    return any(private(word) for word in _path_words(text))


def paths_in(command: str) -> list[str]:
    """The words of a command that may name a file (with a '/' or a '.'), but not the programs it runs: a
    program under a git-ignored folder (`.venv/bin/pytest`) does not make the command about that folder."""
    programs = {m.group(1) for m in _PROGRAM.finditer(command)}
    return [word for word in dict.fromkeys(_path_words(command)) if word not in programs][:MAX_PATH_WORDS]


def _path_words(text: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(text) if ("/" in w or "." in w) and not w.startswith("-") and "://" not in w]


def git_ignored(paths: list[str], cwd: str) -> set[str]:
    """The paths git ignores in the working directory's repository (none outside a repository). Paths outside the
    working directory are not asked (git refuses the whole question for one of them)."""
    paths = [p for p in paths if _within(p, cwd)]
    if not paths or not cwd or not os.path.isdir(cwd):
        return set()
    try:
        done = subprocess.run(
            ["git", "-C", cwd, "check-ignore", "--stdin", "-z"], input="\0".join(paths) + "\0",
            capture_output=True, text=True, timeout=GIT_TIMEOUT,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return set()
    return {p for p in done.stdout.split("\0") if p}


def _within(path: str, cwd: str) -> bool:
    if os.path.isabs(path):
        return bool(cwd) and os.path.commonpath([os.path.abspath(path), os.path.abspath(cwd)]) == os.path.abspath(cwd)
    return not path.startswith(("..", "~"))


def project_of(cwd: str) -> str:
    """The project a working directory belongs to: its git remote's repository name, else the repository's
    folder name, else the folder's own name."""
    if not cwd:
        return ""
    remote = _git(cwd, "config", "--get", "remote.origin.url")
    if remote:
        name = remote.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return name.removesuffix(".git")
    top = _git(cwd, "rev-parse", "--show-toplevel")
    return os.path.basename(top or os.path.abspath(cwd))


def _git(cwd: str, *args: str) -> str:
    if not os.path.isdir(cwd):
        return ""
    try:
        done = subprocess.run(["git", "-C", cwd, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
