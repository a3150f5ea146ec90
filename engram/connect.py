"""How MCP clients connect to a node: the lines the banner prints for Claude Code, Codex, Gemini CLI and Cursor."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

from engram.process.children import python_module

KEY_PLACEHOLDER = "<key>"
KEY_ENV = "ENGRAM_API_KEY"


def engram_command() -> list[str]:
    """The command that runs this engram from any directory: a full path, since `engram` may not be on PATH."""
    invoked = Path(sys.argv[0])
    if invoked.name == "engram" and invoked.is_file():
        return [str(invoked.absolute())]  # not resolved: a pipx/uv link stays valid across upgrades
    beside = Path(sys.executable).parent / "engram"  # the script of the same environment
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("engram")
    if found:
        return [str(Path(found).absolute())]
    return python_module("engram.services.node")


def connect_lines(mcp_url: str, home: str, *, keys_required: bool, command: list[str] | None = None) -> list[str]:
    """Copy-paste lines that register this node with each client, at user scope (every project)."""
    stdio = shlex.join([*(command or engram_command()), "mcp", "--home", home])
    bearer = f"Authorization: Bearer {KEY_PLACEHOLDER}"
    header = f" --header {shlex.quote(bearer)}" if keys_required else ""
    key_env = f" --env {KEY_ENV}={KEY_PLACEHOLDER}" if keys_required else ""
    http_entry: dict[str, object] = {"url": mcp_url}
    gemini_entry: dict[str, object] = {"httpUrl": mcp_url}
    codex_token = ""
    if keys_required:
        http_entry["headers"] = gemini_entry["headers"] = {"Authorization": f"Bearer {KEY_PLACEHOLDER}"}
        codex_token = f" --bearer-token-env-var {KEY_ENV}"
    lines = [
        "Connect a client (user scope: every project):",
        f"  Claude Code (HTTP)   claude mcp add --scope user --transport http engram {mcp_url}{header}",
        f"  Claude Code (stdio)  claude mcp add --scope user{key_env} engram -- {stdio}",
        f"  Codex                codex mcp add engram --url {mcp_url}{codex_token}",
        "                       or in ~/.codex/config.toml:",
        *(f"                         {line}" for line in codex_toml(mcp_url, keys_required=keys_required)),
        f"  Gemini CLI           gemini mcp add --scope user --transport http{header} engram {mcp_url}",
        f"                       or in ~/.gemini/settings.json: {_servers(gemini_entry)}",
        f"  Cursor               ~/.cursor/mcp.json: {_servers(http_entry)}",
        f"  Tools                the everyday ones (core, under 20 KB of context); every tool: {mcp_url}?tools=full",
        "                       (HTTP) or engram mcp --tools full (stdio)",
    ]
    if keys_required:
        lines += [
            f"  {KEY_PLACEHOLDER} is an API key: engram keys create --namespace NS --agent AGENT@DEVICE [--team TEAM]",
            f"  (Codex reads it from ${KEY_ENV}: export {KEY_ENV}={KEY_PLACEHOLDER} before starting codex)",
        ]
    return lines


def codex_toml(mcp_url: str, *, keys_required: bool) -> list[str]:
    """The ~/.codex/config.toml table for this node (Codex takes a bearer token only from an env variable)."""
    lines = ["[mcp_servers.engram]", f"url = {json.dumps(mcp_url)}"]
    if keys_required:
        lines.append(f'bearer_token_env_var = "{KEY_ENV}"')
    return lines


def _servers(entry: dict[str, object]) -> str:
    return json.dumps({"mcpServers": {"engram": entry}})
