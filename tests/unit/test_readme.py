"""The README documents what the code does: every setting in the configuration table, every client snippet."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from engram.config import Settings
from engram.connect import codex_toml

README = Path(__file__).resolve().parents[2] / "README.md"


def _configuration_table() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_every_setting_is_in_the_readme_configuration_table() -> None:
    table = _configuration_table()
    documented = set(re.findall(r"`(ENGRAM_[A-Z0-9_]+)`", table))
    expected = {f"ENGRAM_{f.name.upper()}" for f in dataclasses.fields(Settings)}

    assert sorted(expected - documented) == [], "settings missing from the README table"
    assert sorted(documented - expected) == [], "the README table names settings that do not exist"


def test_readme_codex_block_is_the_one_the_banner_prints() -> None:
    text = README.read_text(encoding="utf-8")
    url = "http://127.0.0.1:8765/mcp"
    assert "\n".join(codex_toml(url, keys_required=False)) in text
    assert "\n".join(codex_toml("http://HOST:8765/mcp", keys_required=True)) in text


def test_readme_points_to_a_design_document_that_exists() -> None:
    text = README.read_text(encoding="utf-8")
    assert "DESIGN.md" not in text
    assert (README.parent / "docs" / "design.md").is_file()
