"""The `engram` command answers at once: each command imports its own group only, and the everyday ones (the
version, finding and saving memories, the node's status) none of the heavy modules the node needs (issue 34)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engram import cli
from engram.cli.common import NodeSettings, _Unfilled, terminal_columns
from engram.config import DEFAULT_PORT, Settings, SettingsError

# Modules that cost tens to hundreds of milliseconds each to import, none of which these commands use.
HEAVY = (
    "numpy", "onnxruntime", "onnx", "tokenizers", "grpc", "google.protobuf", "qdrant_edge", "fastapi", "starlette",
    "pydantic", "mcp", "httpx", "nats", "rich", "asyncio",
)  # fmt: skip
# Each command line, run in a fresh interpreter (a refused connection for the ones that call the node).
LIGHT_COMMANDS = (
    ["--version"],
    ["version"],
    ["search", "--help"],
    ["search", "redis port", "--url", "http://127.0.0.1:9"],
    ["save", "a fact", "--url", "http://127.0.0.1:9"],
    ["list", "--url", "http://127.0.0.1:9"],
    ["get", "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "--url", "http://127.0.0.1:9"],
    ["update", "--help"],
    ["handoffs", "--help"],
    ["hooks", "--help"],
)
PROBE = """
import contextlib, io, json, sys
from engram.cli import main
quiet = (contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()))
with quiet[0], quiet[1], contextlib.suppress(SystemExit):
    main(json.loads(sys.argv[1]))
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(argv: list[str], cwd: Path) -> set[str]:
    """The modules a fresh interpreter holds after running ``engram ARGV`` (no ENGRAM_* variable but the data dir)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("ENGRAM_")}
    env["ENGRAM_HOME"] = str(cwd / "home")
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, cwd=cwd,
                          timeout=60, check=True, env=env)  # fmt: skip
    return set(json.loads(done.stdout))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY))


@pytest.mark.parametrize("argv", LIGHT_COMMANDS, ids=" ".join)
def test_everyday_commands_import_none_of_the_heavy_modules(argv: list[str], tmp_path: Path) -> None:
    modules = imported_by(argv, tmp_path)
    assert heavy(modules) == [], f"engram {' '.join(argv)} imports {heavy(modules)}"


def test_a_command_imports_its_own_group_only(tmp_path: Path) -> None:
    groups = {m.removeprefix("engram.cli.") for m in imported_by(["search", "--help"], tmp_path) if
              m.startswith("engram.cli.")}  # fmt: skip
    assert "find" in groups and not groups & {"models", "node", "packs", "vault", "coordination", "sync", "keys"}


def test_the_version_is_answered_without_any_group() -> None:
    modules = imported_by(["--version"], Path.cwd())
    assert not {m for m in modules if m.startswith("engram.cli.")}


def test_the_group_table_names_the_commands_each_group_registers() -> None:
    for group, commands in cli.GROUPS.items():
        parser = cli.build_parser(commands[0])
        registered = set(parser._subparsers._group_actions[0].choices) - {"version"}  # type: ignore[union-attr]
        assert registered == set(commands), group
    every = set(cli.build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert every == {c for commands in cli.GROUPS.values() for c in commands} | {"version"}


@pytest.mark.parametrize(
    "argv",
    [["search", "redis port", "--limit", "3", "--tag", "a", "--after", "2026-01-31", "--json"], ["list", "--all"],
     ["save", "-", "--type", "fact"], ["get", "3f4a5b", "--history"]],
)  # fmt: skip
def test_a_command_parses_alike_when_only_it_is_built(argv: list[str]) -> None:
    alone, every = cli.build_parser(argv[0]), cli.build_parser()
    assert {name for name, p in _commands(alone).items() if not isinstance(p, _Unfilled)} == {argv[0]}
    assert vars(alone.parse_args(argv)) == vars(every.parse_args(argv))
    assert _commands(alone)[argv[0]].format_help() == _commands(every)[argv[0]].format_help()


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "57", "300"])
def test_the_terminal_width_is_shutils(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for fallback in (80, 120):
        assert terminal_columns(fallback) == shutil.get_terminal_size((fallback, 24)).columns


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    commands: dict[str, argparse.ArgumentParser] = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr,assignment]
    return commands


def test_version_flag_and_command_print_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from engram import __version__

    assert cli.main(["--version"]) == 0 and capsys.readouterr().out == f"engram {__version__}\n"
    assert cli.main(["version"]) == 0 and capsys.readouterr().out == f"{__version__}\n"


def test_engram_alone_prints_every_command_with_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: engram") and "find memories by meaning and by words" in out and "serve" in out


# What save, search, list and get do without for a plain http node (each ~2-30 ms of a start): http.client and the
# email parser it imports, and the socket module (a request on _socket: engram.plainhttp), ssl, dataclasses and
# typing, the settings' and the memory model's modules (engram.cli.common.NodeSettings, engram.vocab), and shutil
# (argparse's help formatter imports it for the terminal's width: engram.cli.common.HelpFormatter), and datetime until
# a time is given (engram.vocab imports it when it formats or parses one).
UNUSED_BY_FIND = (
    "http.client", "email", "ssl", "socket", "dataclasses", "typing", "inspect", "engram.config", "engram.model",
    "shutil", "datetime",
)  # fmt: skip


@pytest.mark.parametrize("argv", [["search", "redis port"], ["save", "a fact"], ["list"], ["get", "3f4a5b"],
                                  ["get", "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "--history"],
                                  ["search", "x", "--url", "http://127.0.0.1:9"]], ids=" ".join)  # fmt: skip
def test_finding_and_saving_over_plain_http_load_no_http_client_ssl_or_dataclasses(
    argv: list[str], tmp_path: Path
) -> None:
    modules = imported_by(argv, tmp_path)
    assert [m for m in modules if m.split(".")[0] in UNUSED_BY_FIND or m in UNUSED_BY_FIND] == []


def test_an_https_node_is_asked_through_http_client_and_ssl(tmp_path: Path) -> None:
    modules = imported_by(["search", "redis port", "--url", "https://127.0.0.1:9"], tmp_path)
    assert {"ssl", "http.client"} <= modules


@pytest.mark.parametrize(
    "env",
    [{}, {"ENGRAM_HOME": "~/elsewhere"}, {"ENGRAM_HOME": "", "ENGRAM_PORT": " 9000 "}, {"ENGRAM_API_KEY": "ek_1"},
     {"ENGRAM_PORT": "0", "ENGRAM_API_KEY": ""}, {"HOME_OF_SOMETHING": "x"}],
)  # fmt: skip
@pytest.mark.parametrize("home", [None, "~/given", ""])
def test_node_settings_read_what_settings_read(env: dict[str, str], home: str | None) -> None:
    assert NodeSettings.enough(env)
    light, full = NodeSettings.from_env(env, home=home), Settings.from_env(env, home=home)
    assert (light.home, light.port, light.api_key) == (full.home, full.port, full.api_key)
    assert NodeSettings.from_env({}).port == DEFAULT_PORT


@pytest.mark.parametrize("port", ["abc", "99999", "-1", "1.5"])
def test_node_settings_refuse_a_port_as_settings_do(port: str) -> None:
    with pytest.raises(SettingsError) as full:
        Settings.from_env({"ENGRAM_PORT": port})
    with pytest.raises(SettingsError, match=f"^{re.escape(str(full.value))}$"):
        NodeSettings.from_env({"ENGRAM_PORT": port})


def test_any_other_engram_variable_goes_through_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert not NodeSettings.enough({"ENGRAM_FUSION": "rrf"}) and NodeSettings.enough({"ENGRAM_FUSION": ""})
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    monkeypatch.setenv("ENGRAM_FUSION", "bad")
    assert cli.main(["search", "x", "--url", "http://127.0.0.1:9"]) == 2
    assert capsys.readouterr().err == "engram: ENGRAM_FUSION must be 'adaptive', 'relative' or 'rrf', got 'bad'\n"


def test_engram_mcp_serves_without_the_embedder_or_the_index(tmp_path: Path) -> None:
    """`engram mcp` (started by an agent at every session) serves MCP and passes each call to the node over gRPC: the
    model runtime, the vector index and the HTTP stack stay out of it."""
    modules = "engram.services.node.stdio, engram.services.gateway.mcp.stdio, engram.process.launcher"
    probe = f"import json, sys\nimport {modules}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=True)  # fmt: skip
    loaded = heavy(set(json.loads(done.stdout)))
    unwanted = ("numpy", "onnxruntime", "onnx", "tokenizers", "qdrant_edge", "fastapi", "httpx", "nats")
    assert [m for m in loaded if m.split(".")[0] in unwanted] == []


WHOLE = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
ID_TEXTS = (
    WHOLE, f" {WHOLE.upper()} ", WHOLE.replace("-", ""), f"{{{WHOLE}}}", f"urn:uuid:{WHOLE}", "3f4a5b", "",
    f"{WHOLE}\n", "\u0660" + WHOLE[1:], WHOLE[:-1] + "g", WHOLE.replace("-", "_"),
)  # fmt: skip


@pytest.mark.parametrize("text", ID_TEXTS)
def test_get_knows_a_whole_id_as_engram_ids_does(text: str) -> None:
    from engram.cli.find import _whole_id
    from engram.ids import is_uuid

    assert _whole_id(text) == is_uuid(text.strip().lower())
