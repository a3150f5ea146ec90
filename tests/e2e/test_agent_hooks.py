"""Agents' hooks end to end: `engram hooks install` writes Claude Code's settings, the commands it wrote are run with
a recorded session's payloads against a real node, the captures arrive (scrubbed, once, even across a node
restart) and the next session start injects them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.hooks.session import session_file
from tests.conftest import NodeHandle, engram_env, start_node

pytestmark = [pytest.mark.e2e]

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks"
WAIT = 60.0


def engram(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engram.services.node", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def wait_for(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Agent:
    """Claude Code as far as hooks go: runs the commands of its settings file with each event's payload."""

    def __init__(self, home: Path, env: dict[str, str], project: Path, engram_home: Path) -> None:
        self.settings = home / ".claude" / "settings.json"
        self.env, self.project, self.engram_home = env, project, engram_home

    def commands(self, event: str) -> list[str]:
        groups = json.loads(self.settings.read_text()).get("hooks", {}).get(event, [])
        return [h["command"] for g in groups for h in g["hooks"] if "engram" in h["command"]]

    def fire(self, session: str, payload: dict[str, Any]) -> str:
        """Runs the event's hook commands as Claude Code does (a shell, the payload on stdin); their stdout."""
        event = payload["hook_event_name"]
        body = json.loads(json.dumps(payload).replace("{cwd}", str(self.project)))
        body |= {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(self.project)}
        state = session_file(self.engram_home / "hooks" / "sessions", session)
        before = _events(state)
        out = []
        for command in self.commands(event):
            started = time.perf_counter()
            done = subprocess.run(["bash", "-c", command], input=json.dumps(body), capture_output=True, text=True,
                                  env=self.env, cwd=self.project, timeout=30)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert event == "SessionStart" or time.perf_counter() - started < 5
            out.append(done.stdout)
        # Claude Code sends one event after another: the next waits until this one was taken in.
        wait_for(lambda: _events(state) > before, f"{event} to be captured")
        return "".join(out)

    def replay(self, session: str, events: list[dict[str, Any]]) -> None:
        for payload in events:
            self.fire(session, payload)


def _events(state: Path) -> int:
    try:
        return int(json.loads(state.read_text() or "{}").get("events", 0))
    except (OSError, ValueError):
        return 0


def _recorded(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "webapp"
    (project / "src" / "auth").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", "git@github.com:acme/webapp.git"], check=True)
    return project


def _setup(tmp_path: Path, node: NodeHandle) -> tuple[Agent, dict[str, str]]:
    home = tmp_path / "user"
    home.mkdir()
    env = engram_env(node.model_cache, HOME=str(home), ENGRAM_HOME=str(node.home))
    project = _project(tmp_path)
    done = engram("hooks", "install", "claude-code", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    return Agent(home, env, project, node.home), env


def _captured(api: httpx.Client, session: str) -> list[dict[str, Any]]:
    found = api.get("/v1/memories", params={"conversation_id": session, "limit": 100})
    assert found.status_code == 200, found.text
    return [m for m in found.json()["memories"] if m.get("memory_type") in ("observation", "session-summary")]


def test_install_merges_idempotently_and_uninstall_restores_the_file_byte_for_byte(tmp_path: Path) -> None:
    home, engram_home = tmp_path / "user", tmp_path / "engram-home"
    (home / ".claude").mkdir(parents=True)
    original = (
        b'{"model": "opus",\n "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
        b'"command": "echo mine"}]}]}}\n'
    )
    settings = home / ".claude" / "settings.json"
    settings.write_bytes(original)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {"HOME": str(home)}
    env["ENGRAM_HOME"] = str(engram_home)

    assert engram("hooks", "install", "claude-code", env=env, cwd=tmp_path).returncode == 0
    first = settings.read_bytes()
    again = engram("hooks", "install", "claude-code", env=env, cwd=tmp_path)
    assert "already installed" in again.stdout and settings.read_bytes() == first
    data = json.loads(first)
    assert data["model"] == "opus"
    assert data["hooks"]["PostToolUse"][0]["hooks"][0]["command"] == "echo mine"
    assert set(data["hooks"]) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop",
                                  "PreCompact", "SessionEnd"}  # fmt: skip
    status = engram("hooks", "status", env=env, cwd=tmp_path).stdout
    assert f"claude-code  user     {settings}" in status and "capture: on" in status

    assert engram("hooks", "uninstall", "claude-code", env=env, cwd=tmp_path).returncode == 0
    assert settings.read_bytes() == original

    # Changed since the install: only Engram's entries go, the user's change stays.
    engram("hooks", "install", "claude-code", env=env, cwd=tmp_path)
    changed = json.loads(settings.read_text()) | {"theme": "dark"}
    settings.write_text(json.dumps(changed))
    assert "removed" in engram("hooks", "uninstall", "claude-code", env=env, cwd=tmp_path).stdout
    assert json.loads(settings.read_text()) == json.loads(original) | {"theme": "dark"}

    # A file that did not exist is removed again, and the project scope writes the project's settings.
    project = tmp_path / "proj"
    project.mkdir()
    engram("hooks", "install", "claude-code", "--scope", "project", env=env, cwd=project)
    assert (project / ".claude" / "settings.json").is_file()
    engram("hooks", "uninstall", "claude-code", "--scope", "project", env=env, cwd=project)
    assert not (project / ".claude").exists()


def test_a_recorded_session_is_captured_scrubbed_and_injected_at_the_next_session_start(
    tmp_path: Path, node: NodeHandle, api: httpx.Client
) -> None:
    recorded = _recorded("flaky_login.json")
    agent, env = _setup(tmp_path, node)
    session = f"{recorded['session_id']}-{tmp_path.name}"
    agent.replay(session, recorded["events"])
    assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 0

    captured = _captured(api, session)
    everything = json.dumps(captured)
    for expected in recorded["expect"]["contains"]:
        assert expected in everything
    for secret in recorded["expect"]["secrets"] + recorded["expect"]["never"]:
        assert secret not in everything
    assert "[REDACTED:github_token]" in everything
    kinds = [m["metadata"]["kind"] for m in captured]
    assert kinds.count("file-change") == 1  # two edits of one file: merged
    assert kinds.count("session-summary") == 1
    summary = next(m for m in captured if m["memory_type"] == "session-summary")
    assert "Changed: src/auth/session.py" in summary["content"]
    assert len(summary["metadata"]["observations"]) == len(captured) - 1
    assert all(m["project"] == "webapp" and m["owner_agent"].startswith("claude-code") for m in captured)
    assert {m["source"] for m in captured} == {"hook"}  # what the console's feed and browser show as its source

    answer = json.loads(agent.fire(f"next-{session}", {"hook_event_name": "SessionStart", "source": "startup"}))
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Engram session context" in context and "pytest-timeout" in context


def test_captures_wait_in_the_spool_while_the_node_is_down_and_are_delivered_once(
    tmp_path: Path, model_cache: Path
) -> None:
    node = start_node(tmp_path / "engram-home", model_cache)
    recorded = _recorded("flaky_login.json")
    agent, env = _setup(tmp_path, node)
    session = f"spool-{tmp_path.name}"
    events = recorded["events"]
    agent.replay(session, events[:4])
    wait_for(lambda: not (node.home / "spool" / "captures.jsonl").read_text(), "the first captures to be delivered")
    assert node.stop() == 0

    agent.replay(session, events[4:])  # the node is down: everything stays in the spool
    status = engram("hooks", "status", env=env, cwd=agent.project).stdout
    assert "capture(s) waiting" in status and "spool: 0 " not in status
    assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 1

    node = start_node(node.home, model_cache)
    try:
        assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 0
        assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 0  # nothing left, nothing twice
        with httpx.Client(base_url=node.http_url, timeout=60) as api:
            captured = _captured(api, session)
        state = json.loads(session_file(node.home / "hooks" / "sessions", session).read_text())
        assert len(captured) == len(state["captured"]) + 1  # every observation once, and the summary
        assert len({m["content"] for m in captured}) == len(captured)
    finally:
        assert node.stop() == 0
