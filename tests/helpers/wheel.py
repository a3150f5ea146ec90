"""Engram's wheel and sdist, built as pip builds them (setuptools' build_meta) from a copy of the git-tracked
files: what a clean clone, `pipx install .` or the image's `pip install .` gets."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "engram", "services")  # what the build reads (the Dockerfile too)
# build_meta in a child: its output (setuptools' warnings) is what the test reads.
_BUILD = "import sys; from setuptools import build_meta as b; print(getattr(b, sys.argv[1])(sys.argv[2]))"


@dataclass(frozen=True, slots=True)
class Built:
    path: Path
    output: str  # what the build printed (stdout and stderr)


def tracked(*folders: str) -> list[str]:
    """The git-tracked files under the folders, relative to the checkout."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", *folders], capture_output=True,
                            check=True).stdout  # fmt: skip
    return [name for name in listed.decode().split("\0") if name]


def source_tree(dest: Path) -> Path:
    """A copy of the tracked files the build reads (no .venv, build/ or egg-info): a clean clone's, or the image's."""
    for name in tracked(*SOURCES):
        target = dest / name
        if (ROOT / name).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
    return dest


def build(kind: str, source: Path, out: Path) -> Built:
    """build_wheel or build_sdist of the tree at source, into out."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", _BUILD, kind, str(out)], cwd=source, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return Built(out / done.stdout.strip().splitlines()[-1], done.stdout + done.stderr)
