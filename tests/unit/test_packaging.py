"""The wheel and the sdist ship every package and data file of the tree (services/ as engram.services), built as
pip and the image build them, without setuptools' "Package ... is absent" warnings; the image copies what the
build reads."""

from __future__ import annotations

import re
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.helpers.wheel import ROOT, SOURCES, build, source_tree, tracked

pytestmark = [pytest.mark.slow]


def _installed_name(name: str) -> str:
    """Where a file of the tree lands in the wheel: services/ is installed as engram/services/."""
    return "engram/" + name if name.startswith("services/") else name


def test_the_wheel_and_the_sdist_hold_every_tracked_file_of_engram_and_services(tmp_path: Path) -> None:
    source = source_tree(tmp_path / "src")
    wheel = build("build_wheel", source, tmp_path / "dist")
    sdist = build("build_sdist", source, tmp_path / "dist")
    files = tracked("engram", "services")
    assert any(f.startswith("engram/hooks/") for f in files) and any(f.endswith(".js") for f in files)

    with zipfile.ZipFile(wheel.path) as archive:
        in_wheel = set(archive.namelist())
    missing = sorted(_installed_name(f) for f in files if _installed_name(f) not in in_wheel)
    assert not missing, f"the wheel lacks {len(missing)} tracked files: {missing[:20]}"
    stray = sorted(n for n in in_wheel if not n.startswith(("engram/", "engram-")) or "__pycache__" in n)
    assert not stray, f"the wheel holds files outside the package: {stray[:20]}"

    with tarfile.open(sdist.path) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = sorted(f for f in files if f not in in_sdist)
    assert not missing, f"the sdist lacks {len(missing)} tracked files: {missing[:20]}"

    for built in (wheel, sdist):
        assert "is absent from the `packages` configuration" not in built.output, built.output[-2000:]


def test_the_image_copies_every_file_the_build_reads() -> None:
    """The Dockerfile's build stage copies the sources one by one: each of them, or the install misses it."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied = {word.rstrip("/") for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.MULTILINE)
              for word in line.split()[:-1]}  # fmt: skip
    assert set(SOURCES) <= copied, f"the Dockerfile does not copy {sorted(set(SOURCES) - copied)}"
    assert re.search(r"pip install \.(\s|$)", dockerfile), "the image installs the package (not editable)"
