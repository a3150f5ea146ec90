"""Agents' hooks at their bounds (issue 33, points 6 and 7), run as Claude Code runs them (the installed command, a
shell, the payload on stdin) against a real node: what is dropped for privacy is dropped everywhere, a 50 MB or
deeply nested payload is bounded and never breaks the agent, a key the node refuses is parked and shown with its
cause, the spool of a node that is down stays bounded, a capture's source_id cannot be squatted, and every local file
stays private."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.hooks.session import session_file
from engram.keys import KeyStore
from tests.conftest import NodeHandle, engram_env, start_node
from tests.e2e.test_agent_hooks import Agent, _captured, _events, _project, _recorded, _setup, engram, wait_for

pytestmark = [pytest.mark.e2e]

HOOK_SCRIPT = "engram/hooks/__main__.py"
MiB = 1024 * 1024


def _local_files(engram_home: Path) -> dict[Path, str]:
    """Every file the hooks keep on this machine (the install's own record and backups aside)."""
    found = {}
    for folder in (engram_home / "hooks", engram_home / "spool"):
        for path in folder.rglob("*"):
            if path.is_file() and "backups" not in path.parts and path.name != "installed.json":
                found[path] = path.read_text(encoding="utf-8", errors="replace")
    return found


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _offline_agent(tmp_path: Path, model_cache: Path, **extra: str) -> tuple[Agent, dict[str, str], Path]:
    """Claude Code with Engram's hooks whose node does not answer (nothing listens on its port)."""
    home, engram_home = tmp_path / "user", tmp_path / "offline-home"
    home.mkdir()
    env = engram_env(model_cache, HOME=str(home), ENGRAM_HOME=str(engram_home), ENGRAM_PORT=str(_dead_port()), **extra)
    project = _project(tmp_path)
    done = engram("hooks", "install", "claude-code", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    return Agent(home, env, project, engram_home), env, engram_home


def _hook_processes(engram_home: Path) -> list[int]:
    """The hook processes (the one the agent runs and its background child) working for this data dir."""
    mine = f"ENGRAM_HOME={engram_home}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if HOOK_SCRIPT.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and mine in Path(
                f"/proc/{name}/environ"
            ).read_bytes().split(b"\0"):
                found.append(int(name))
        except OSError:
            continue
    return found


def _peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _fire_measured(agent: Agent, session: str, body: dict[str, Any], raw: bytes) -> tuple[float, float]:
    """Runs the event's hook with ``raw`` on stdin, as fire() does; the seconds the agent waited and the highest
    peak RSS (MB) of the hook's processes, the background one included, until it has taken the event in."""
    (command,) = agent.commands(str(body["hook_event_name"]))
    state = session_file(agent.engram_home / "hooks" / "sessions", session)
    before = _events(state)
    started = time.perf_counter()
    process = subprocess.Popen(["bash", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=agent.env, cwd=agent.project)  # fmt: skip
    peak = 0.0
    _, err = process.communicate(raw, timeout=60)
    waited = time.perf_counter() - started
    assert process.returncode == 0, err
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = _hook_processes(agent.engram_home)
        peak = max([peak, *(_peak_rss_mb(pid) for pid in pids)])
        if not pids and _events(state) > before:
            return waited, peak
        time.sleep(0.005)
    raise AssertionError("the hook's background process did not finish")


def test_what_is_dropped_for_privacy_reaches_no_summary_session_file_or_spool(
    tmp_path: Path, node: NodeHandle, api: httpx.Client
) -> None:
    recorded = _recorded("private_fix.json")
    agent, env = _setup(tmp_path, node)
    (agent.project / ".gitignore").write_text(recorded["gitignore"])
    session = f"{recorded['session_id']}-{tmp_path.name}"
    agent.replay(session, recorded["events"])
    assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 0

    captured = _captured(api, session)
    on_the_node = json.dumps(captured)
    local = json.dumps({str(p): text for p, text in _local_files(node.home).items()})
    for expected in recorded["expect"]["contains"]:
        assert expected in on_the_node
    for never in recorded["expect"]["never"]:
        assert never not in on_the_node, never
        assert never not in local, never
    summary = next(m for m in captured if m["memory_type"] == "session-summary")
    assert "Learned: Fixed: `pytest tests/test_api.py -q`" in summary["content"]
    assert "Open: nothing left failing." in summary["content"]  # the private command still failing is no open work
    assert "Changed: src/db.py, src/api.py." in summary["content"]  # the git-ignored log is not among the changes


def test_a_50_mb_payload_is_read_bounded_and_deep_json_never_breaks_the_agent(tmp_path: Path, node: NodeHandle) -> None:
    agent, _ = _setup(tmp_path, node)
    session = f"bounds-{tmp_path.name}"
    agent.fire(session, {"hook_event_name": "SessionStart", "source": "startup"})
    state = session_file(node.home / "hooks" / "sessions", session)

    body = {"hook_event_name": "PostToolUse", "session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": str(agent.project), "tool_name": "Bash", "tool_use_id": "toolu_big",
            "tool_input": {"command": "make build"},
            "tool_response": {"stdout": "compiling\n" * (5 * MiB), "stderr": "", "interrupted": False}}  # fmt: skip
    raw = json.dumps(body).encode()
    assert len(raw) >= 50 * MiB
    waited, peak = _fire_measured(agent, session, body, raw)
    assert waited < 5 and peak < 100, (waited, peak)  # the unbounded read peaked at 152 MB (1.7 GB for a prompt)

    prompt = "We decided to keep the session cache. " + "Context line of a pasted log. " * 100_000  # 3 MB, read whole
    body = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(agent.project), "prompt": prompt}
    waited, peak = _fire_measured(agent, session, body, json.dumps(body).encode())
    assert waited < 5 and peak < 100, (waited, peak)
    kept = json.loads(state.read_text())
    assert "cut by Engram's hook" in kept["prompts"][-1] and len(kept["prompts"][-1]) <= 2000
    for n in range(3):  # every later event rewrites a small file
        agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": f"Carry on with step {n}."})
        assert state.stat().st_size < 64 * 1024
    assert all(p.stat().st_size < 256 * 1024 for p in _local_files(node.home))

    nested = "[" * 200_000 + "]" * 200_000
    head = json.dumps({"hook_event_name": "SessionStart", "session_id": session, "cwd": str(agent.project)})
    deep = head[:-1] + f', "source": {nested}}}'
    for event in ("SessionStart", "PostToolUse"):
        (command,) = agent.commands(event)
        done = subprocess.run(["bash", "-c", command], input=deep.replace("SessionStart", event, 1), text=True,
                              capture_output=True, env=agent.env, cwd=agent.project, timeout=60)  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr and "RecursionError" not in done.stderr
        assert done.stdout.strip() == "" or json.loads(done.stdout)
    wait_for(lambda: not _hook_processes(node.home), "the hooks to finish")
    errors = node.home / "hooks" / "errors.log"
    assert not errors.exists() or "RecursionError" not in errors.read_text()


def test_local_files_are_private_and_older_modes_are_set_right(tmp_path: Path, node: NodeHandle) -> None:
    agent, _ = _setup(tmp_path, node)
    (node.home / "spool").mkdir(exist_ok=True)
    (node.home / "hooks" / "sessions").mkdir(parents=True, exist_ok=True)
    spool = node.home / "spool" / "captures.jsonl"
    spool.touch()
    for path, mode in ((node.home / "hooks", 0o755), (node.home / "hooks" / "sessions", 0o755),
                       (node.home / "spool", 0o755), (spool, 0o644)):  # fmt: skip
        os.chmod(path, mode)  # as an older version left them
    session = f"modes-{tmp_path.name}"
    agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "We decided to log in UTC everywhere."})
    wait_for(lambda: spool.exists() and not spool.read_text(), "the capture to be delivered")  # rewritten since
    agent.fire(session, {"hook_event_name": "SessionEnd", "reason": "exit"})
    wait_for(lambda: not _hook_processes(node.home), "the hooks to finish")

    files = list(_local_files(node.home))
    assert spool in files and session_file(node.home / "hooks" / "sessions", session) in files
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for folder in ("hooks", "hooks/sessions", "hooks/projects", "spool"):
        assert stat.S_IMODE((node.home / folder).stat().st_mode) == 0o700, folder


def test_a_key_the_node_refuses_parks_its_captures_and_status_says_why(tmp_path: Path, model_cache: Path) -> None:
    node = start_node(tmp_path / "engram-home", model_cache, ENGRAM_DEV_MODE="false")
    try:
        keys = KeyStore(node.settings.keys_path)
        record, secret = keys.create(namespace="default", agent="claude-code", scopes=("read", "write"))
        agent, env = _setup(tmp_path, node)
        agent.env["ENGRAM_API_KEY"] = env["ENGRAM_API_KEY"] = secret
        spool, parked = node.home / "spool" / "captures.jsonl", node.home / "spool" / "parked.jsonl"
        session = f"keys-{tmp_path.name}"
        agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "We decided to ship on Tuesdays."})
        wait_for(lambda: spool.exists() and not spool.read_text(), "the first capture to be delivered")

        keys.revoke(record.key_id)
        agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "Let's use UUIDv7 for every new id."})
        wait_for(lambda: not _hook_processes(node.home), "the hook to finish")
        assert parked.read_text().count("\n") == 1 and not spool.read_text()
        agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "Always squash merge pull requests."})
        wait_for(lambda: not _hook_processes(node.home), "the hook to finish")
        assert parked.read_text().count("\n") == 2 and not spool.read_text()  # parked, not retried at each event
        status = engram("hooks", "status", env=env, cwd=agent.project).stdout
        assert "spool: 0 capture(s) waiting" in status
        assert "parked: 2 capture(s) of claude-code" in status and "answered 401" in status, status
        flushed = engram("hooks", "flush", env=env, cwd=agent.project)
        assert flushed.returncode == 1 and "answered 401" in flushed.stdout, flushed.stdout
        assert "start the node" not in flushed.stdout

        tries = ((("read",), "claude-code", "We decided to pin every dependency."),
                 (("read", "write"), "gemini-cli", "Never commit generated files."))  # fmt: skip
        for n, (scopes, agent_name, prompt) in enumerate(tries):
            _, other = keys.create(namespace="default", agent=agent_name, scopes=scopes)
            agent.env["ENGRAM_API_KEY"] = env["ENGRAM_API_KEY"] = other  # another key: the parked go again
            agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
            wait_for(lambda: not _hook_processes(node.home), "the hook to finish")
            assert not spool.read_text() and parked.read_text().count("\n") == 3 + n
            status = engram("hooks", "status", env=env, cwd=agent.project).stdout
            assert "answered 403" in status and "key with the write scope" in status, status

        _, good = keys.create(namespace="default", agent="claude-code", scopes=("read", "write"))
        agent.env["ENGRAM_API_KEY"] = env["ENGRAM_API_KEY"] = good
        agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "We decided to keep the changelog."})
        wait_for(lambda: not _hook_processes(node.home), "the hook to finish")
        assert not parked.exists() and not spool.read_text()
        assert "parked" not in engram("hooks", "status", env=env, cwd=agent.project).stdout
        with httpx.Client(base_url=node.http_url, timeout=60, headers={"Authorization": f"Bearer {good}"}) as api:
            contents = " ".join(m["content"] for m in _captured(api, session))
        for said in ("ship on Tuesdays", "UUIDv7", "squash merge", "every dependency", "generated files", "changelog"):
            assert said in contents, said
    finally:
        assert node.stop() == 0


def test_the_spool_of_a_node_that_is_down_stays_bounded_and_its_source_ids_cannot_be_squatted(
    tmp_path: Path, node: NodeHandle, api: httpx.Client
) -> None:
    agent, env, engram_home = _offline_agent(tmp_path, node.model_cache, ENGRAM_HOOK_SPOOL_MAX_BYTES=str(64 * 1024))
    spool = engram_home / "spool" / "captures.jsonl"
    session = f"offline-{tmp_path.name}"
    older = [{"content": f"Older capture {n}: " + secrets.token_hex(400), "memory_type": "observation",
              "tags": ["hook"], "source_id": f"hook:{secrets.token_hex(16)}", "agent": "claude-code",
              "device": "laptop"} for n in range(100)]  # fmt: skip
    spool.parent.mkdir(parents=True, exist_ok=True)
    spool.write_text("".join(json.dumps(c) + "\n" for c in older))  # the node has been down for a while
    agent.fire(session, {"hook_event_name": "UserPromptSubmit", "prompt": "We decided to rotate logs daily."})

    assert spool.stat().st_size <= 64 * 1024
    lines = [json.loads(line) for line in spool.read_text().splitlines()]
    capture = lines[-1]
    assert "rotate logs daily" in capture["content"] and lines[0]["content"] != older[0]["content"]
    assert re.fullmatch(r"hook:[0-9a-f]{32}", capture["source_id"]) and session not in capture["source_id"]
    status = engram("hooks", "status", env=env, cwd=agent.project).stdout
    dropped = re.search(r"dropped: the (\d+) oldest capture\(s\)", status)
    assert dropped and int(dropped.group(1)) == 101 - len(lines), status

    # Another agent that learnt the capture's source_id imports first under it: the capture is still stored, as its
    # own agent's, and the squatter's memory stays the squatter's.
    squat = api.post("/v1/memories:import", content=json.dumps({"content": "junk", "source_id": capture["source_id"],
                     "tags": [session]}), headers={"X-Engram-Agent-ID": "mallory"})  # fmt: skip
    assert squat.status_code == 200 and squat.json()["imported"] == 1, squat.text
    port = node.http_url.rsplit(":", 1)[1]
    flushed = engram("hooks", "flush", env=env | {"ENGRAM_PORT": port}, cwd=agent.project)
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr
    assert f"sent {len(lines)}: {len(lines)} stored, 0 already stored" in flushed.stdout, flushed.stdout
    assert "dropped: the" in flushed.stdout
    assert "dropped" not in engram("hooks", "status", env=env | {"ENGRAM_PORT": port}, cwd=agent.project).stdout
    mine = [m for m in _captured(api, session) if "rotate logs daily" in m["content"]]
    assert len(mine) == 1 and mine[0]["owner_agent"].startswith("claude-code")
    junk = api.get("/v1/memories", params={"tags": session, "limit": 10}).json()["memories"]
    assert [(m["content"], m["owner_agent"]) for m in junk] == [("junk", "mallory")]
