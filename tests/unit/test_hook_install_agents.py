"""`engram hooks install|uninstall` for Gemini CLI (hooks in .gemini/settings.json) and Codex CLI (one notify
program in ~/.codex/config.toml): merged next to what is there, idempotent, undone byte for byte; a project's
settings (which a team commits) name no path of this machine; status finds every install its records name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from engram.config import Settings
from engram.hooks.install import (
    CLAUDE_EVENTS,
    GEMINI_EVENTS,
    HOOK_COMMAND,
    MAIN,
    HooksError,
    everywhere,
    install,
    installed,
    shell,
    uninstall,
)
from engram.hooks.session import session_file
from engram.hooks.spool import SPOOL_FILE
from engram.hooks.target import TargetError, applied, forget, save


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
    outcome = install("gemini-cli", "project", project, hooks_dir, None)
    assert outcome.path == project / ".gemini" / "settings.json"
    assert installed("gemini-cli", "project", project) is not None
    uninstall("gemini-cli", "project", project, hooks_dir)
    assert not (project / ".gemini").exists()


@pytest.mark.parametrize(("agent", "folder"), [("claude-code", ".claude"), ("gemini-cli", ".gemini")])
def test_a_projects_settings_name_no_path_of_this_machine_and_run_engram_hook_through_path(
    home: Path, tmp_path: Path, agent: str, folder: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    install(agent, "project", project, tmp_path / "engram" / "hooks", None)
    text = (project / folder / "settings.json").read_text()
    for local in (sys.executable, MAIN, str(tmp_path), str(home), os.path.dirname(sys.executable)):
        assert local not in text
    commands = [h["command"] for groups in json.loads(text)["hooks"].values() for g in groups for h in g["hooks"]]
    events = CLAUDE_EVENTS if agent == "claude-code" else GEMINI_EVENTS
    assert len(commands) == len(events) and all(c.endswith(f"{HOOK_COMMAND} {agent} {e}") for c, e in
                                                zip(commands, events, strict=True))  # fmt: skip

    # A teammate without Engram: the guard says what to do, on stderr, and the hook fails (agents show that).
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    done = subprocess.run(["bash", "-c", commands[0]], input="{}", capture_output=True, text=True, env=bare)
    assert done.returncode == 1 and done.stdout == ""
    assert f"{HOOK_COMMAND} is not on PATH; install Engram" in done.stderr


def test_status_finds_the_installs_its_records_name_from_any_folder(home: Path, tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    hooks_dir = tmp_path / "engram" / "hooks"
    install("claude-code", "user", project, hooks_dir, None)
    install("claude-code", "project", project, hooks_dir, None)
    install("gemini-cli", "project", project, hooks_dir, None)
    found = {(i.agent, i.scope, i.path) for i in everywhere(elsewhere, hooks_dir)}
    assert found == {
        ("claude-code", "user", home / ".claude" / "settings.json"),
        ("claude-code", "project", project / ".claude" / "settings.json"),
        ("gemini-cli", "project", project / ".gemini" / "settings.json"),
    }


def test_codex_gets_one_notify_line_above_its_tables_and_loses_it_again(home: Path, tmp_path: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = b'model = "o3"\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    config.write_bytes(original)
    hooks_dir = tmp_path / "engram" / "hooks"

    assert install("codex", "user", tmp_path, hooks_dir, None).action == "installed"
    assert install("codex", "user", tmp_path, hooks_dir, None).action == "already installed"
    parsed = tomllib.loads(config.read_text())
    assert parsed["notify"][-5:] == ["-S", "-P", MAIN, "codex", "notify"] and parsed["model"] == "o3"
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


def test_the_node_named_at_install_is_kept_private_and_used_by_the_hooks(tmp_path: Path) -> None:
    settings = Settings.from_env({}, home=tmp_path / "engram")
    hooks_dir = settings.home / "hooks"
    with pytest.raises(TargetError, match="--url must be the node's http:// or https:// address"):
        save(hooks_dir, "engram.example.com", "k")
    path = save(hooks_dir, "https://engram.example.com/", "secret-key")
    assert path.stat().st_mode & 0o777 == 0o600
    used = applied(settings)
    assert (used.hook_url, used.api_key) == ("https://engram.example.com", "secret-key")
    assert forget(hooks_dir) and applied(settings) == settings


def test_a_later_install_keeps_the_node_named_until_local_is_asked(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram import cli

    data = tmp_path / "engram"
    hooks_dir = data / "hooks"
    assert cli.main(["hooks", "install", "claude-code", "--url", "https://engram.example.com", "--key", "k1",
                     "--home", str(data)]) == 0  # fmt: skip
    assert "The hooks deliver to https://engram.example.com with the key given" in capsys.readouterr().out
    assert cli.main(["hooks", "install", "gemini-cli", "--home", str(data)]) == 0
    assert "named by an earlier install" in capsys.readouterr().out
    assert applied(Settings.from_env({}, home=data)).hook_url == "https://engram.example.com"
    assert cli.main(["hooks", "install", "gemini-cli", "--local", "--home", str(data)]) == 0
    assert "local node again" in capsys.readouterr().out and not (hooks_dir / "node.json").exists()


# The launchers pip 25.3 and pip 26.0 write for `engram-hook` (distlib's template, pip's own since 26.0).
OLD_PIP_LAUNCHER = """#!/venv/bin/python
# -*- coding: utf-8 -*-
import re
import sys
from engram.hooks.command import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
NEW_PIP_LAUNCHER = """#!/venv/bin/python
import sys
from engram.hooks.command import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("case", [(OLD_PIP_LAUNCHER, True), (NEW_PIP_LAUNCHER, False)], ids=["pip-25", "pip-26"])
def test_a_project_install_says_when_the_engram_hook_on_path_imports_re_at_each_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: tuple[str, bool]
) -> None:
    from engram import cli

    launcher, said = case

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / HOOK_COMMAND).write_text(launcher)
    (bin_dir / HOOK_COMMAND).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["hooks", "install", "claude-code", "--scope", "project", "--home", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert ("was written by a pip before 26.0 and imports re at each event" in out) is said, out
    assert "engram-hook is not on PATH here" not in out
