"""Debian's chromium as Playwright drives it, for bench --console and the browser tests (tests/browser): Playwright
only drives the system binary that `make install` puts there; `playwright install` is never run (browser downloads
do not work here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--no-sandbox",  # runs as root in CI containers, where chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)


def launch_options() -> dict[str, Any]:
    """The keyword arguments of chromium.launch (sync or async API); a missing binary says what to run."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: run `make install` (it installs Debian's chromium)")
    return {"executable_path": str(CHROMIUM), "headless": True, "args": list(CHROMIUM_ARGS)}
