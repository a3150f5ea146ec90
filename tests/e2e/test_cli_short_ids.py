"""`engram` commands that take a memory id take the short one every table shows (its last 8 characters), or any
unique end or start of it, against a real node: a clear error when it matches none or several; and `engram import -`
reads JSON lines from stdin."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import NodeHandle, engram_env

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"  # the console script, as `make install` or a tool install puts it


def engram(node: NodeHandle, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENGRAM), *argv, "--url", node.http_url], input=stdin, env=engram_env(node.model_cache),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_import_from_stdin_and_commands_take_the_short_ids_tables_show(node: NodeHandle) -> None:
    tag = f"short-{uuid.uuid4().hex[:8]}"
    lines = [json.dumps({"content": f"Short id note {i} {tag}: the {word} queue drains at night", "tags": [tag]})
             for i, word in enumerate(("billing", "mail"))]  # fmt: skip
    imported = engram(node, "import", "-", "--json", stdin="\n".join(lines) + "\n")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["source"] == "-" and report["imported"] == 2 and report["last_line"] == 2

    listed = engram(node, "list", "--tag", tag, "--agent", "claude-code")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()[1:]
    shown = rows[0].split()[0]
    assert shown.startswith("…") and len(shown) == 9  # as copied from the table
    short = shown.removeprefix("…")
    whole = json.loads(engram(node, "list", "--tag", tag, "--json", "--agent", "claude-code").stdout)["memories"]
    expected = next(m for m in whole if m["id"].endswith(short))

    got = engram(node, "get", shown, "--json", "--agent", "claude-code")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["id"] == expected["id"]
    history = engram(node, "history", short[-6:], "--agent", "claude-code")
    assert history.returncode == 0 and expected["content"] in history.stdout, history.stderr

    # The start of a UUIDv7 is its creation time: memories saved together share it.
    ambiguous = engram(node, "get", expected["id"][:4], "--agent", "claude-code")
    assert (
        ambiguous.returncode == 2
        and "memories' ids" in ambiguous.stderr
        and "give more of its characters" in (ambiguous.stderr)
    )
    missing = engram(node, "get", "ffff0000ffff", "--agent", "claude-code")
    assert missing.returncode == 1 and "no memory's id ends (or begins) with 'ffff0000ffff'" in missing.stderr
