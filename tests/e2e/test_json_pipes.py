"""`engram … --json` against a real node: import and export answer in JSON, and every --json command whose reader
is gone (`| head` that stopped reading) ends quietly with exit 0, without a BrokenPipeError traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import NodeHandle, engram_env

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"  # the console script, as `make install` or a tool install puts it


def engram(node: NodeHandle, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENGRAM), *argv, "--url", node.http_url], env=engram_env(node.model_cache),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def to_a_closed_pipe(node: NodeHandle, *argv: str) -> subprocess.CompletedProcess[str]:
    """Runs with stdout a pipe whose reader has already gone: every write to it fails (EPIPE), whatever the timing,
    as the last writes to `| head` do once head has what it wants."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [str(ENGRAM), *argv, "--url", node.http_url], env=engram_env(node.model_cache),
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write_end)


@pytest.fixture(scope="module")
def jsonl(node: NodeHandle, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tag = f"pipes-{uuid.uuid4().hex[:8]}"
    path = tmp_path_factory.mktemp("pipes") / "memories.jsonl"
    rows = [
        json.dumps({"content": f"Pipe note {i} {tag}: the cache is warmed at 06:00", "tags": [tag]}) for i in range(3)
    ]
    path.write_text("\n".join([rows[0], '{"content": tru}', *rows[1:]]) + "\n")
    return path


def test_import_json_reports_counts_and_plain_rejects_on_stdout_only(node: NodeHandle, jsonl: Path) -> None:
    result = engram(node, "import", str(jsonl), "--json", "--restart")

    assert result.returncode == 3 and result.stderr == "", result.stderr
    answer = json.loads(result.stdout)
    assert answer["imported"] + answer["already_present"] == 3 and answer["last_line"] == 4
    assert answer["rejected"] == [{"line": 2, "reason": answer["rejected"][0]["reason"]}]
    assert answer["rejected"][0]["reason"].startswith("The line is not JSON at column 16: a word outside double")


def test_export_and_vault_import_json(node: NodeHandle, tmp_path: Path, jsonl: Path) -> None:
    engram(node, "import", str(jsonl), "--json")
    exported = engram(node, "export", str(tmp_path / "vault"), "--json")
    assert exported.returncode == 0 and exported.stderr == "", exported.stderr
    answer = json.loads(exported.stdout)
    assert answer["folder"] == str(tmp_path / "vault") and answer["written"] >= 3

    (tmp_path / "vault" / "broken.md").write_text("---\n\ttitle: x\n---\nBody.\n")
    again = engram(node, "import", str(tmp_path / "vault"), "--json")
    assert again.returncode == 3 and again.stderr == "", again.stderr
    back = json.loads(again.stdout)
    assert back["imported"] == 0 and back["already_present"] == answer["written"]
    assert back["rejected"] == [
        {
            "file": "broken.md",
            "reason": "its frontmatter is not valid YAML, line 2: a tab (YAML indents with spaces only)",
        }
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ("list", "--json"),
        ("search", "cache warmed", "--json"),
        ("stats", "--json"),
        ("status", "--json"),
        ("context", "--json"),
        ("import", "{jsonl}", "--json"),
        ("export", "{vault}", "--json"),
    ],
    ids=lambda argv: argv[0],
)
def test_a_json_command_whose_reader_is_gone_ends_quietly(
    node: NodeHandle, jsonl: Path, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    args = [a.format(jsonl=jsonl, vault=tmp_path / "vault") for a in argv]

    result = to_a_closed_pipe(node, *args)

    assert result.returncode in (0, 3), result.stderr  # import: 3 for the rejected line, as with a reader
    assert result.stderr == ""
