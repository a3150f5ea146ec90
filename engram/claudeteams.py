"""Claude Code's agent teams, as a process spawned inside one sees them: standard library only, since `engram mcp`
reads them before (or without) loading the gateway."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

# Claude Code's agent teams: ~/.claude/teams/<team>/config.json, rewritten as members join and leave.
CLAUDE_TEAM_VARIABLES = ("CLAUDE_TEAM_NAME", "CLAUDE_CODE_TEAM_NAME")
CLAUDE_TEAMS_READ = 5  # team configs read at most, newest first: the newest usable one wins
CLAUDE_TEAM_CONFIG_MAX_BYTES = 256 * 1024  # member prompts make configs a few KiB; more is not a team config

Valid = Callable[[str], bool]  # whether a name is a usable team name (engram.names.is_valid_namespace)


def claude_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Claude Code's config dir: CLAUDE_CONFIG_DIR (which moves ~/.claude), else ~/.claude."""
    configured = (environ if environ is not None else os.environ).get("CLAUDE_CONFIG_DIR")
    return Path(configured or str(Path.home() / ".claude")).expanduser()


def team_variable(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The first Claude Code team variable set (CLAUDE_TEAM_NAME, CLAUDE_CODE_TEAM_NAME) and its value."""
    for variable in CLAUDE_TEAM_VARIABLES:
        if (value := environ.get(variable)) is not None and value.strip():
            return variable, value.strip()
    return None


def newest_claude_team(claude_dir: Path, valid: Valid) -> str:
    """The newest active agent team of Claude Code under ``claude_dir`` (``~/.claude``), or "".

    Each team is ``teams/<name>/config.json``: ``{"name", "leadAgentId", "members": [{"name", "agentId",
    "isActive"?}]}``. Claude Code rewrites it as members join and leave, and deletes the directory when the team
    is deleted, so the most recently modified config is the team in use. A team whose every member is marked
    ``"isActive": false`` has stopped (nobody runs in it) and is skipped; so are unreadable or malformed configs
    and names that are not ``valid`` team names. At most CLAUDE_TEAMS_READ small files are read.
    """
    for config in _newest_first(claude_dir / "teams")[:CLAUDE_TEAMS_READ]:
        if name := _active_team_name(config, valid):
            return name
    return ""


def _newest_first(teams: Path) -> list[Path]:
    dated: list[tuple[float, Path]] = []
    try:
        for config in teams.glob("*/config.json"):
            try:
                dated.append((config.stat().st_mtime, config))
            except OSError:
                continue  # removed while we looked (TeamDelete)
    except OSError:
        return []
    return [config for _, config in sorted(dated, key=lambda d: d[0], reverse=True)]


def _active_team_name(config: Path, valid: Valid) -> str:
    try:
        with config.open("rb") as f:
            raw = f.read(CLAUDE_TEAM_CONFIG_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= CLAUDE_TEAM_CONFIG_MAX_BYTES else None
    except (OSError, ValueError):  # unreadable, half-written or not JSON (UnicodeDecodeError is a ValueError)
        return ""
    if not isinstance(data, dict):
        return ""
    members = data.get("members")
    if isinstance(members, list) and members and all(_stopped(m) for m in members):
        return ""
    name = data.get("name") or config.parent.name
    return name if isinstance(name, str) and valid(name) else ""


def _stopped(member: object) -> bool:
    return isinstance(member, dict) and member.get("isActive") is False
