"""`engram hooks install|uninstall` for Gemini CLI (hooks in .gemini/settings.json) and Codex CLI (one notify
program in ~/.codex/config.toml): merged next to what is there, idempotent, undone byte for byte."""

from __future__ import annotations

import json
import subprocess
import time
import tomllib
from pathlib import Path

import pytest

from engram.hooks.install import GEMINI_EVENTS, MAIN, HooksError, install, installed, shell, uninstall
from engram.hooks.session import session_file
from engram.hooks.spool import SPOOL_FILE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    return user


def test_gemini_hooks_are_merged_beside_the_users_and_removed_byte_for_byte(home: Path, tmp_path: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    original = (
        b'{"general": {"vimMode": true},\n "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": '
        b'[{"type": "command", "command": "./lint.sh"}]}]}}\n'
    )
    settings.write_bytes(original)
    hooks_dir = tmp_path / "engram" / "hooks"

    assert install("gemini-cli", "user", tmp_path, hooks_dir, None).action == "installed"
    written = settings.read_bytes()
    assert install("gemini-cli", "user", tmp_path, hooks_dir, None).action == "already installed"
    assert settings.read_bytes() == written
    data = json.loads(written)
    assert data["general"] == {"vimMode": True} and set(data["hooks"]) == set(GEMINI_EVENTS)
    after_tool = data["hooks"]["AfterTool"]
    assert after_tool[0]["hooks"][0]["command"] == "./lint.sh"
    ours = next(g for g in after_tool if MAIN in g["hooks"][0]["command"])
    assert ours["matcher"] == "write_file|replace|run_shell_command"
    assert ours["hooks"][0]["timeout"] == 5000  # Gemini CLI counts milliseconds
    assert ours["hooks"][0]["command"].endswith("gemini-cli AfterTool")
    found = installed("gemini-cli", "user", tmp_path)
    assert found is not None and "BeforeAgent" in found.events

    assert uninstall("gemini-cli", "user", tmp_path, hooks_dir).action == "restored"
    assert settings.read_bytes() == original


def test_gemini_project_scope_writes_the_projects_settings_and_removes_them_again(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    hooks_dir = tmp_path / "engram" / "hooks"
    outcome = install("gemini-cli", "project", project, hooks_dir, tmp_path / "engram")
    assert outcome.path == project / ".gemini" / "settings.json"
    assert "--home" in outcome.path.read_text()
    uninstall("gemini-cli", "project", project, hooks_dir)
    assert not (project / ".gemini").exists()


def test_codex_gets_one_notify_line_above_its_tables_and_loses_it_again(home: Path, tmp_path: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = b'model = "o3"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    config.write_bytes(original)
    hooks_dir = tmp_path / "engram" / "hooks"

    assert install("codex", "user", tmp_path, hooks_dir, None).action == "installed"
    assert install("codex", "user", tmp_path, hooks_dir, None).action == "already installed"
    parsed = tomllib.loads(config.read_text())
    assert parsed["notify"][-4:] == ["-S", MAIN, "codex", "notify"] and parsed["model"] == "o3"
    assert parsed["profiles"]["fast"]["model"] == "o4-mini"  # the line went above the first table

    assert uninstall("codex", "user", tmp_path, hooks_dir).action == "restored"
    assert config.read_bytes() == original


def test_codex_refuses_to_replace_another_notify_program_and_a_project_scope(home: Path, tmp_path: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('notify = ["notify-send", "Codex"]\n')
    with pytest.raises(HooksError, match="already runs a notify program"):
        install("codex", "user", tmp_path, tmp_path / "hooks", None)
    assert config.read_text() == 'notify = ["notify-send", "Codex"]\n'
    with pytest.raises(HooksError, match="use --scope user"):
        install("codex", "project", tmp_path, tmp_path / "hooks", None)


def test_the_installed_codex_command_takes_a_turn_from_its_last_argument(home: Path, tmp_path: Path) -> None:
    engram_home = tmp_path / "engram"
    install("codex", "user", tmp_path, engram_home / "hooks", engram_home)
    words = tomllib.loads((home / ".codex" / "config.toml").read_text())["notify"]
    turn = {"type": "agent-turn-complete", "thread-id": "th-1", "turn-id": "t1", "cwd": str(tmp_path),
            "input-messages": ["We decided to use opaque cursors, not page numbers."],
            "last-assistant-message": "Done."}  # fmt: skip
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "ENGRAM_PORT": "9"}  # no node: the capture waits in the spool
    done = subprocess.run(["bash", "-c", shell([*words, json.dumps(turn)])], env=env, capture_output=True, timeout=30)
    assert done.returncode == 0 and done.stdout == b""
    spool = engram_home / "spool" / SPOOL_FILE
    deadline = time.monotonic() + 30  # the work runs in the detached child
    while not (spool.exists() and spool.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    (line,) = [json.loads(x) for x in spool.read_text().splitlines()]
    assert line["content"] == "Decision stated by the user: We decided to use opaque cursors, not page numbers."
    assert line["agent"] == "codex" and line["conversation_id"] == "th-1"
    assert session_file(engram_home / "hooks" / "sessions", "th-1").exists()
