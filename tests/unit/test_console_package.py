"""The web console ships in the wheel: every file the gateway serves at /console is named by pyproject's
package-data, so an installed node serves the same console as a checkout."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from engram.services.gateway.console.routes import CONSOLE_DIR, CONTENT_TYPES, INDEX, load_assets

ROOT = Path(__file__).resolve().parents[2]


def _package_data() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns: list[str] = config["tool"]["setuptools"]["package-data"]["engram.services.gateway.console"]
    return patterns


def _globbed(path: str, pattern: str) -> bool:
    """As setuptools globs package-data: ``*`` never crosses a ``/``."""
    return path.count("/") == pattern.count("/") and fnmatch.fnmatchcase(path, pattern)


def test_every_console_file_is_in_the_package_data() -> None:
    gateway = CONSOLE_DIR.parent
    files = [p.relative_to(gateway).as_posix() for p in CONSOLE_DIR.rglob("*") if p.is_file() and "__" not in p.name]
    assert files
    missing = [f for f in files if not any(_globbed(f, pattern) for pattern in _package_data())]
    assert not missing, f"add these to [tool.setuptools.package-data] in pyproject.toml: {missing}"


def test_the_gateway_serves_every_console_file_with_a_known_type() -> None:
    assets = load_assets()
    on_disk = {p.relative_to(CONSOLE_DIR).as_posix() for p in CONSOLE_DIR.rglob("*") if p.is_file()}
    assert set(assets) == on_disk, "a console file has a type the gateway does not serve"
    assert INDEX in assets and "app.js" in assets and "style.css" in assets
    assert {Path(name).suffix for name in assets} <= set(CONTENT_TYPES)
