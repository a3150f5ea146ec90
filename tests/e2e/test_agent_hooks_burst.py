"""Bursts of hook events (issue 35): events fired back to back and in parallel, as an agent's parallel tool calls send
them, are taken in by one capture worker per data dir, in order and once; a killed worker is replaced by the next
hook and loses nothing; the inbox the events wait in is private and empty once they are captured."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.hooks.inbox import EVENTS, FOLDER, TAKING
from engram.hooks.session import session_file
from tests.conftest import NodeHandle
from tests.e2e.test_agent_hooks import Agent, _captured, _events, _recorded, _setup, engram, wait_for
from tests.e2e.test_agent_hooks_bounds import _hook_processes, _offline_agent

pytestmark = [pytest.mark.e2e]

PARALLEL = 8


def _body(agent: Agent, session: str, payload: dict[str, Any]) -> str:
    body = json.loads(json.dumps(payload).replace("{cwd}", str(agent.project)))
    return json.dumps(body | {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
                              "cwd": str(agent.project)})  # fmt: skip


def _burst(agent: Agent, session: str, payloads: list[dict[str, Any]], *, width: int = 1) -> list[str]:
    """Fires the events as an agent does, ``width`` at once, the next ones as soon as these answered (not waiting for
    their capture); what each hook printed."""
    out = []
    for at in range(0, len(payloads), width):
        running = []
        for payload in payloads[at : at + width]:
            (command,) = agent.commands(payload["hook_event_name"])
            process = subprocess.Popen(["bash", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=agent.env, cwd=agent.project, text=True)  # fmt: skip
            running.append((payload, process, time.perf_counter()))
        for payload, process, started in running:
            answer, err = process.communicate(_body(agent, session, payload), timeout=30)
            assert process.returncode == 0, err
            assert payload["hook_event_name"] == "SessionStart" or time.perf_counter() - started < 5
            out.append(answer)
    return out


def _state(agent: Agent, session: str) -> dict[str, Any]:
    return dict(json.loads(session_file(agent.engram_home / "hooks" / "sessions", session).read_text()))


def _assert_private(inbox: Path) -> None:
    assert stat.S_IMODE(inbox.stat().st_mode) == 0o700
    for path in inbox.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_burst_of_events_is_captured_in_order_exactly_once_by_one_worker(
    tmp_path: Path, node: NodeHandle, api: httpx.Client
) -> None:
    recorded = _recorded("flaky_login.json")
    agent, env = _setup(tmp_path, node)
    inbox = node.home / "hooks" / FOLDER
    session = f"burst-{tmp_path.name}"
    events = recorded["events"]
    _burst(agent, session, events)  # back to back: each event right after the previous one answered
    _assert_private(inbox)
    assert len(_hook_processes(node.home)) <= 1  # the hooks are done; one worker captures for all of them
    wait_for(lambda: _events(session_file(node.home / "hooks" / "sessions", session)) == len(events), "the capture")
    tools = [p for p in events if p["hook_event_name"] == "PostToolUse"]
    parallel = f"parallel-{tmp_path.name}"
    _burst(agent, parallel, tools * 2, width=PARALLEL)  # an agent's parallel tool calls
    wait_for(lambda: not _hook_processes(node.home), "the worker to finish")
    assert engram("hooks", "flush", env=env, cwd=agent.project).returncode == 0

    state = _state(agent, session)
    assert state["events"] == len(events) and _state(agent, parallel)["events"] == 2 * len(tools)  # each once
    captured = _captured(api, session)
    everything = json.dumps(captured)
    for expected in recorded["expect"]["contains"]:  # what a replay one event at a time finds (test_agent_hooks)
        assert expected in everything
    for secret in recorded["expect"]["secrets"] + recorded["expect"]["never"]:
        assert secret not in everything
    kinds = [m["metadata"]["kind"] for m in captured]
    assert kinds.count("file-change") == 1 and kinds.count("session-summary") == 1
    summary = next(m for m in captured if m["memory_type"] == "session-summary")
    assert len(summary["metadata"]["observations"]) == len(captured) - 1 == len(state["captured"])
    assert len({m["content"] for m in captured}) == len(captured)
    assert sorted(p.name for p in inbox.iterdir()) == [".lock", ".worker"]  # the events left no trace
    _assert_private(inbox)
    assert not (node.home / "hooks" / "errors.log").exists()


def _kill_worker_mid_way(agent: Agent, session: str, prompts: list[str]) -> None:
    """Fires the prompts back to back and kills the capture worker once it has captured two of them."""
    state = session_file(agent.engram_home / "hooks" / "sessions", session)
    before = _events(state)
    _burst(agent, session, [{"hook_event_name": "UserPromptSubmit", "prompt": p} for p in prompts])
    wait_for(lambda: _events(state) >= before + 2, "the worker to start capturing")
    (worker,) = _hook_processes(agent.engram_home)
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: not _hook_processes(agent.engram_home), "the worker to be gone")
    inbox = agent.engram_home / "hooks" / FOLDER
    assert (inbox / TAKING).exists() and _events(state) < before + len(prompts)  # killed mid-way: the rest wait
    _assert_private(inbox)


def _prompts(rng: random.Random, numbers: range) -> list[str]:
    vocabulary = ["".join(rng.choice("abcdefghijklmnop") for _ in range(7)) for _ in range(400)]
    return [f"Prompt {n}: " + " ".join(rng.choices(vocabulary, k=7000)) for n in numbers]  # ~55 KB: slow to scrub


def test_a_killed_worker_is_replaced_by_the_next_hook_or_by_flush_and_nothing_is_lost(
    tmp_path: Path, model_cache: Path
) -> None:
    agent, env, engram_home = _offline_agent(tmp_path, model_cache)
    inbox = engram_home / "hooks" / FOLDER
    session = f"killed-{tmp_path.name}"
    state = session_file(engram_home / "hooks" / "sessions", session)
    rng = random.Random(35)
    prompts = _prompts(rng, range(16))
    _kill_worker_mid_way(agent, session, prompts)
    status = engram("hooks", "status", env=env, cwd=agent.project).stdout
    assert "event(s) waiting for the capture worker" in status, status

    last = "Prompt 16: we decided to keep the inbox private."
    _burst(agent, session, [{"hook_event_name": "UserPromptSubmit", "prompt": last}])  # the next hook starts a worker
    wait_for(lambda: not _hook_processes(engram_home), "the new worker to finish")
    kept = [p.split(":")[0] for p in json.loads(state.read_text())["prompts"]]
    once = [p for i, p in enumerate(kept) if i == 0 or kept[i - 1] != p]  # the event being captured when the
    assert once == [f"Prompt {n}" for n in range(17)]  # worker died may be taken in again, right after itself
    assert len(prompts) + 1 <= _events(state) <= len(prompts) + 2
    assert not (inbox / TAKING).exists() and not (inbox / EVENTS).exists()
    _assert_private(inbox)

    _kill_worker_mid_way(agent, session, _prompts(rng, range(17, 27)))  # no hook comes after: flush takes them
    engram("hooks", "flush", env=env, cwd=agent.project)  # exits 1: no node answers, the captures stay in the spool
    kept = [p.split(":")[0] for p in json.loads(state.read_text())["prompts"]]
    assert [p for i, p in enumerate(kept) if i == 0 or kept[i - 1] != p][-10:] == [f"Prompt {n}" for n in range(17, 27)]
    assert (
        not (inbox / TAKING).exists()
        and "waiting for the capture worker" not in engram("hooks", "status", env=env, cwd=agent.project).stdout
    )
