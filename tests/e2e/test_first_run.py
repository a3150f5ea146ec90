"""A new user's first commands: clear one-line errors, no noise, and a banner that can be pasted as it is."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engram import __version__
from tests.conftest import engram_env
from tests.helpers.procs import stop_process, wait_line

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"  # the console script, as `make install` or a tool install puts it


def test_serve_on_a_taken_port_says_so_in_one_line_and_exits_2(
    tmp_path: Path, model_cache: Path, taken_port: int
) -> None:
    result = subprocess.run(
        [str(ENGRAM), "serve", "--home", str(tmp_path), "--port", str(taken_port)],
        env=engram_env(model_cache),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"engram: port {taken_port} is in use (another engram?); try --port {taken_port + 1} or stop the other process"
    ]
    assert not (tmp_path / "run" / "nats.pid").exists(), "nothing should start once the port is known to be taken"
    assert not (tmp_path / "node.json").exists()


def test_version_flag_prints_the_version() -> None:
    result = subprocess.run([str(ENGRAM), "--version"], capture_output=True, text=True, timeout=30)

    assert result.returncode == 0
    assert result.stdout.strip() == f"engram {__version__}"


def test_keys_list_without_keys_says_how_to_create_one(tmp_path: Path, model_cache: Path) -> None:
    result = subprocess.run(
        [str(ENGRAM), "keys", "list", "--home", str(tmp_path)],
        env=engram_env(model_cache),
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr.startswith("no keys yet; create one with engram keys create --namespace")


def test_first_start_prints_no_build_noise_and_a_banner_with_the_full_engram_path(tmp_path: Path) -> None:
    fresh_cache = tmp_path / "models"  # a first start: the ONNX model and its int8 twin are built now
    process = subprocess.Popen(
        [str(ENGRAM), "serve", "--home", str(tmp_path / "home"), "--port", "0"],
        env=engram_env(fresh_cache, ENGRAM_LOG_LEVEL="INFO"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        lines.append(wait_line(process, "Engram ", timeout=180))
        while "Press Ctrl-C" not in lines[-1]:
            lines.append(wait_line(process, ""))
    finally:
        assert stop_process(process, signal.SIGINT) == 0
    output = "\n".join(lines)

    assert "Quantization" not in output and "pre-processing" not in output
    stdio = next(line for line in lines if line.startswith("Claude Code (stdio)"))
    assert f"-- {ENGRAM} mcp --home {tmp_path / 'home'}" in stdio
    assert "claude mcp add --scope user --transport http engram http://127.0.0.1:" in output
    assert "codex mcp add engram --url http://127.0.0.1:" in output
    assert "[mcp_servers.engram]" in output
    assert "gemini mcp add --scope user --transport http engram http://127.0.0.1:" in output
    assert '"httpUrl": "http://127.0.0.1:' in output
    assert "Authorization" not in output, "dev mode needs no key"


def test_banner_with_keys_required_shows_the_header_variants(tmp_path: Path, model_cache: Path) -> None:
    process = subprocess.Popen(
        [str(ENGRAM), "serve", "--home", str(tmp_path), "--port", "0"],
        env=engram_env(model_cache, ENGRAM_DEV_MODE="false"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert "API keys required" in wait_line(process, "Auth ")
        http = wait_line(process, "Claude Code (HTTP)")
        stdio = wait_line(process, "Claude Code (stdio)")
        codex = wait_line(process, "Codex ")
        toml_token = wait_line(process, "bearer_token_env_var")
        gemini = wait_line(process, "Gemini CLI")
        tools = wait_line(process, "Tools ")
        tools += wait_line(process, "")
    finally:
        assert stop_process(process, signal.SIGINT) == 0

    assert http.endswith("--header 'Authorization: Bearer <key>'")
    assert "--env ENGRAM_API_KEY=<key> engram --" in stdio
    assert codex.endswith("--bearer-token-env-var ENGRAM_API_KEY")
    assert toml_token == 'bearer_token_env_var = "ENGRAM_API_KEY"'
    assert "--header 'Authorization: Bearer <key>' engram http://" in gemini
    assert "/mcp?tools=full" in tools and "engram mcp --tools full" in tools  # every tool: one option away
