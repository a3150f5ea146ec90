"""The gateway serves every file of the web console with a known type. That the wheel ships them all (as every
other data file of the tree) is tests/unit/test_packaging.py's check, on a wheel it builds."""

from __future__ import annotations

from pathlib import Path

from engram.services.gateway.console.routes import CONSOLE_DIR, CONTENT_TYPES, INDEX, load_assets


def test_the_gateway_serves_every_console_file_with_a_known_type() -> None:
    assets = load_assets()
    on_disk = {p.relative_to(CONSOLE_DIR).as_posix() for p in CONSOLE_DIR.rglob("*") if p.is_file()}
    assert set(assets) == on_disk, "a console file has a type the gateway does not serve"
    assert INDEX in assets and "app.js" in assets and "style.css" in assets
    assert {Path(name).suffix for name in assets} <= set(CONTENT_TYPES)
