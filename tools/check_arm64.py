"""`make check-arm64`: does every runtime dependency install from wheels on a Jetson-class Linux aarch64 device?

The dependencies are Engram's own (pyproject.toml) and everything they require, as installed here, with the
requirement markers evaluated for the device (Linux, aarch64, each Python version checked). For each one and
each Python version, `pip download --no-deps --only-binary=:all:` asks PyPI for a wheel of the installed version
for the device's platforms; a package with no such wheel would have to be compiled on the device (or cannot be
installed at all). Prints one line per package and version, exits 1 if any wheel is missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
# JetPack 6.x is Ubuntu 22.04 (glibc 2.35) on aarch64; pip also accepts every older manylinux tag for it.
PLATFORMS = ("manylinux_2_35_aarch64", "manylinux_2_28_aarch64", "manylinux2014_aarch64")
# JetPack 6 ships Python 3.10, which Engram does not support (requires-python >= 3.11, and the current releases of
# numpy, onnxruntime, fastapi and others have no 3.10 wheels either): the device runs a Python 3.11 or 3.12 next to
# the system's (uv python install 3.11, or the deadsnakes PPA). `--python 3.10` shows what 3.10 would lack.
DEFAULT_PYTHONS = ("3.11", "3.12")
PARALLEL = 4


@dataclass(frozen=True, slots=True)
class Package:
    """A dependency to check: its name, the version to ask for, and who requires it."""

    name: str
    spec: str  # "==<installed version>", or the requirement's specifier when it is not installed here
    required_by: str


@dataclass(frozen=True, slots=True)
class Found:
    package: Package
    python: str
    wheel: str | None  # the wheel pip chose, or None
    error: str = ""

    @property
    def native(self) -> bool:
        return self.wheel is not None and not self.wheel.endswith("-any.whl")


def device_environment(python: str) -> dict[str, str]:
    """Marker values of a Linux aarch64 device running CPython ``python``."""
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    env.update(
        platform_machine="aarch64", platform_system="Linux", sys_platform="linux", os_name="posix",
        python_version=python, python_full_version=f"{python}.0", implementation_name="cpython",
        platform_python_implementation="CPython",
    )  # fmt: skip
    return env


def project_requirements(pyproject: Path) -> list[Requirement]:
    with pyproject.open("rb") as f:
        return [Requirement(line) for line in tomllib.load(f)["project"]["dependencies"]]


def closure(roots: Iterable[Requirement], pythons: Iterable[str]) -> list[Package]:
    """Every package the roots need on the device for any of ``pythons``, following installed metadata."""
    envs = [device_environment(p) for p in pythons]
    found: dict[str, Package] = {}
    pending = [(r, "pyproject.toml") for r in roots]
    while pending:
        requirement, parent = pending.pop()
        if requirement.marker is not None and not any(requirement.marker.evaluate(env | {"extra": ""}) for env in envs):
            continue
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:  # needed only on another Python (e.g. a backport): as required
            found[name] = Package(name, str(requirement.specifier), parent)
            continue
        found[name] = Package(name, f"=={dist.version}", parent)
        pending.extend((Requirement(line), name) for line in dist.requires or [])
    return sorted(found.values(), key=lambda p: p.name)


def download(package: Package, python: str, pip: list[str]) -> Found:
    """Asks pip for a wheel of ``package`` for the device running ``python``; keeps nothing."""
    with tempfile.TemporaryDirectory(prefix="engram-arm64-") as tmp:
        command = [
            *pip, "download", f"{package.name}{package.spec}", "--no-deps", "--only-binary=:all:",
            *(arg for platform in PLATFORMS for arg in ("--platform", platform)),
            "--python-version", python, "--implementation", "cp", "--dest", tmp,
            "--quiet", "--disable-pip-version-check", "--no-input",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode == 0 and wheels:
            return Found(package, python, wheels[0].name)
        lines = [line for line in done.stderr.splitlines() if line.strip().startswith("ERROR")]
        return Found(package, python, None, (lines[0] if lines else done.stderr.strip()[-200:]).strip())


def check(packages: list[Package], pythons: Iterable[str], pip: list[str]) -> Iterator[Found]:
    jobs = [(package, python) for package in packages for python in pythons]
    with ThreadPoolExecutor(PARALLEL) as pool:
        yield from pool.map(lambda job: download(job[0], job[1], pip), jobs)


def report(results: list[Found], pythons: list[str]) -> str:
    """One line per package: the wheel found for each Python version (native wheels first)."""
    by_package: dict[str, dict[str, Found]] = {}
    for result in results:
        by_package.setdefault(result.package.name, {})[result.python] = result
    native = {name for name, row in by_package.items() if any(f.native for f in row.values())}
    lines = []
    for name in sorted(by_package, key=lambda n: (n not in native, n)):
        row = by_package[name]
        package = row[pythons[0]].package
        kind = "native" if name in native else "pure"
        lines.append(f"{package.name}{package.spec}  [{kind}, required by {package.required_by}]")
        for python in pythons:
            found = row[python]
            lines.append(f"    {python}: {wheel_tags(found.wheel) if found.wheel else 'MISSING  ' + found.error}")
    return "\n".join(lines)


def wheel_tags(wheel: str) -> str:
    """The wheel's tags (python-abi-platform), which is what differs between devices."""
    match = re.match(r"^[^-]+-[^-]+(?:-\d[^-]*)?-(.+)\.whl$", wheel)
    return match.group(1) if match else wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_arm64", description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help=f"Python version to check (default {DEFAULT_PYTHONS})")
    args = parser.parse_args(argv)
    pythons = list(args.python or DEFAULT_PYTHONS)
    packages = closure(project_requirements(ROOT / "pyproject.toml"), pythons)
    print(f"{len(packages)} runtime dependencies, for Linux aarch64 ({', '.join(PLATFORMS)}), Python {pythons}")
    results = list(check(packages, pythons, [sys.executable, "-m", "pip"]))
    print(report(results, pythons))
    missing = [f for f in results if f.wheel is None]
    native = {f.package.name for f in results if f.native}
    print(f"\n{len(native)} native packages: {', '.join(sorted(native))}")
    if missing:
        print(f"MISSING: {len(missing)} wheels: " + ", ".join(f"{f.package.name} ({f.python})" for f in missing))
        return 1
    print("every dependency has a wheel for Linux aarch64 on every Python version checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
