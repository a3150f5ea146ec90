"""`engram save|list|search|get` as a shell runs them (the console script, a subprocess) against a real node: save
with a secret redacted, list as a table and as JSON, search by an identifier and by meaning, get with every version,
and a reader that closes the pipe early."""

from __future__ import annotations

import json
import secrets
import string
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import NodeHandle, engram_env

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"  # the console script, as `make install` or a tool install puts it
BILLING = (
    "The billing service retries failed Stripe webhooks five times with exponential backoff; the runbook is "
    "in ticket BILL-4821."
)


def engram(node: NodeHandle, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ENGRAM), *argv, "--url", node.http_url, "--agent", "claude-code"],
        input=stdin, env=engram_env(node.model_cache), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def saved_id(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0 and result.stderr == "", result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("Saved ") and first.endswith(")"), first
    return first.split()[1]


def test_save_list_search_get_from_a_shell(node: NodeHandle) -> None:
    token = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
    billing = engram(node, "save", BILLING, "--type", "decision", "--tag", "billing", "--project", "shop")
    billing_id = saved_id(billing)
    assert billing.stdout.splitlines() == [billing.stdout.splitlines()[0]]  # nothing redacted, no note
    deploy = engram(node, "save", "--tag", "ci", stdin=f"CI pushes release images to the registry with {token}.\n")
    deploy_id = saved_id(deploy)
    assert deploy.stdout.splitlines()[1] == "redacted: 1 github_token"
    assert token not in deploy.stdout

    listed = engram(node, "list", "--full-ids")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["ID", "TYPE", "OWNER", "CREATED", "CONTENT"]
    assert [row.split()[:3] for row in rows] == [
        [deploy_id, "general", "claude-code"], [billing_id, "decision", "claude-code"],
    ]  # fmt: skip
    assert token not in listed.stdout
    as_json = engram(node, "list", "--json")
    document = json.loads(as_json.stdout)
    assert [m["id"] for m in document["memories"]] == [deploy_id, billing_id]
    assert (
        document["memories"][0]["content"] == "CI pushes release images to the registry with [REDACTED:github_token]."
    )
    assert document["next_page_token"] is None
    assert engram(node, "list", "--tag", "billing", "--full-ids").stdout.splitlines()[1].split()[0] == billing_id

    by_identifier = engram(node, "search", "BILL-4821", "--full-ids")
    assert by_identifier.returncode == 0, by_identifier.stderr
    top = by_identifier.stdout.splitlines()[1].split()
    assert (top[0], top[2]) == ("1", billing_id), by_identifier.stdout
    by_meaning = engram(node, "search", "what happens when a payment notification fails", "--explain")
    first = by_meaning.stdout.splitlines()[1].split()
    assert (first[0], first[2]) == ("1", "…" + billing_id[-8:]), by_meaning.stdout
    assert "dense #" in by_meaning.stdout.splitlines()[2]
    assert "meaning (dense) leads" in by_meaning.stdout, "explain says how the query's lists were fused"
    unrelated = engram(node, "search", "how do volcanoes form under the ocean?")
    assert unrelated.stdout.startswith("No memories match"), "nothing is close enough in meaning"
    everything = engram(node, "search", "how do volcanoes form under the ocean?", "--min-relevance", "0", "--json")
    assert len(json.loads(everything.stdout)["hits"]) == 2
    assert "out of range" in engram(node, "search", "x", "--min-relevance", "2").stderr
    nothing = engram(node, "search", "kubernetes", "--tag", "no-such-tag")
    assert nothing.returncode == 0
    assert nothing.stdout == (
        "No memories match 'kubernetes'. Try other or fewer words, --min-relevance 0 for weaker matches, fewer "
        "filters, --include-archived or --status to look beyond active memories, or `engram list` for the newest.\n"
    )

    assert engram(node, "update", billing_id, "--content", BILLING.replace("five", "seven")).returncode == 0
    got = engram(node, "get", billing_id, "--history")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(f"Memory {billing_id}\n")
    assert "  memory_type" in got.stdout and "  tags" in got.stdout and "  version" in got.stdout
    assert f"Memory {billing_id}: 2 versions, oldest first" in got.stdout
    assert "saved by claude-code" in got.stdout and "updated by claude-code" in got.stdout
    assert json.loads(engram(node, "get", billing_id, "--json").stdout)["version"] == 2


def test_saving_the_same_note_again_says_it_was_already_saved(node: NodeHandle) -> None:
    note = f"The release train leaves every second Thursday ({secrets.token_hex(4)})."
    first_id = saved_id(engram(node, "save", note))
    again = engram(node, "save", f"  the release train leaves every second thursday ({note.split('(')[1][:-1]}  ")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert again.stdout.startswith(f"Already saved as {first_id} (version 1, seq "), again.stdout
    as_json = json.loads(engram(node, "save", note, "--json").stdout)
    assert as_json["duplicate_of"] == as_json["id"] == first_id


def test_a_reader_that_stops_early_ends_the_listing_quietly(node: NodeHandle) -> None:
    lines = "".join(
        json.dumps({"content": f"Filler note {i}: " + "lorem ipsum dolor " * 250}) + "\n" for i in range(20)
    )
    imported = httpx.post(f"{node.http_url}/v1/memories:import", content=lines, timeout=60,
                          headers={"Content-Type": "application/x-ndjson"})  # fmt: skip
    assert imported.status_code == 200 and imported.json()["imported"] == 20, imported.text

    pipeline = f"'{ENGRAM}' list --json --url {node.http_url} | head -c 10; echo; echo \"exit ${{PIPESTATUS[0]}}\""
    result = subprocess.run(
        ["bash", "-c", pipeline], env=engram_env(node.model_cache), capture_output=True, text=True, timeout=60
    )

    assert result.stdout == '{\n  "memor\nexit 0\n'  # the listing (over 64 KiB) is cut by head, and ends with 0
    assert result.stderr == ""
