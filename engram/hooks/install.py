"""Engram's entries in agents' settings files: install (merged, idempotent, the file backed up first), uninstall
(the backup restored byte for byte while the file is as Engram left it, else exactly Engram's entries removed) and
status. Records of what was installed where: <home>/hooks/installed.json; backups: <home>/hooks/backups/.

Claude Code and Gemini CLI read a `hooks` object in a JSON settings file (event -> matcher groups -> command
handlers); Codex CLI runs one `notify` program named in ~/.codex/config.toml. docs/hooks.md shows what is written.

A user's settings (their home folder) name this interpreter and file by path: the fastest start. A project's settings
are committed and shared by a team, so they name no path of this machine: `engram-hook`, found through each
teammate's PATH, behind a guard that says what to do where Engram is not installed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.hooks.payloads import CLAUDE_CODE, CODEX, GEMINI_CLI

USER, PROJECT = "user", "project"
SCOPES = (USER, PROJECT)
MAIN = str(Path(__file__).resolve().with_name("__main__.py"))  # the hook command runs this file (engram.hooks)
MARKER = "engram/hooks/__main__.py"  # how an entry of a user's settings is known as Engram's
HOOK_COMMAND = "engram-hook"  # the console script (pyproject.toml) a project's settings run through PATH
LAUNCHER_HEAD = 1024  # a console script's launcher is a dozen lines: what slow_launcher reads of it
MARKERS = (MARKER, HOOK_COMMAND)
# A project's hooks run this first: a teammate without Engram gets one line saying why and what to do (exit 1: the
# agents show a failing hook's stderr), not a bare "command not found".
GUARD = (
    f"command -v {HOOK_COMMAND} >/dev/null 2>&1 || {{ echo 'Engram hooks: {HOOK_COMMAND} is not on PATH; install "
    "Engram (uv tool install / pipx install) or remove its hooks from this file' >&2; exit 1; }; "
)
RECORDS = "installed.json"

# Claude Code: the tools whose use is worth a process (edits and shell commands); reads and searches are not.
CLAUDE_TOOLS = "Edit|Write|MultiEdit|NotebookEdit|Bash"
# event -> (matcher, timeout in seconds; Claude Code's unit)
CLAUDE_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 10),
    "UserPromptSubmit": (None, 5),
    "PostToolUse": (CLAUDE_TOOLS, 5),
    "PostToolUseFailure": (CLAUDE_TOOLS, 5),
    "Stop": (None, 5),
    "PreCompact": (None, 5),
    "SessionEnd": (None, 5),
}
GEMINI_TOOLS = "write_file|replace|run_shell_command"
# event -> (matcher, timeout in milliseconds; Gemini CLI's unit)
GEMINI_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 10000),
    "BeforeAgent": (None, 5000),
    "AfterTool": (GEMINI_TOOLS, 5000),
    "AfterAgent": (None, 5000),
    "PreCompress": (None, 5000),
    "SessionEnd": (None, 5000),
}
SUPPORTED = (CLAUDE_CODE, GEMINI_CLI, CODEX)


class HooksError(ValueError):
    """A settings file Engram cannot merge into; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Outcome:
    agent: str
    scope: str
    path: Path
    action: str  # installed, already installed, restored, removed, not installed
    backup: Path | None = None


@dataclass(frozen=True, slots=True)
class Installed:
    agent: str
    scope: str
    path: Path
    events: tuple[str, ...]


def settings_path(agent: str, scope: str, project_dir: Path) -> Path:
    """Where an agent reads its settings for a scope (user: the home folder; project: the project's folder)."""
    base = Path.home() if scope == USER else project_dir
    if agent == CLAUDE_CODE:
        return base / ".claude" / "settings.json"
    if agent == GEMINI_CLI:
        return base / ".gemini" / "settings.json"
    if agent == CODEX:
        if scope != USER:
            raise HooksError("Codex CLI reads notify from ~/.codex/config.toml only: use --scope user")
        return base / ".codex" / "config.toml"
    raise HooksError(f"No hooks for agent {agent!r}; supported: {', '.join(SUPPORTED)}")


def project_root(cwd: Path) -> Path:
    """The repository that holds the working directory (its top folder), else the folder itself."""
    try:
        done = subprocess.run(["git", "-C", str(cwd), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    except OSError:
        return cwd
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else cwd


def command(agent: str, event: str, home: Path | None) -> list[str]:
    """A user's hook command: this interpreter without site setup (-S: faster start) running
    engram/hooks/__main__.py by its path (-P: neither its folder nor the agent's working folder is searched first)."""
    words = [sys.executable, "-S", "-P", MAIN, agent, event]
    return words + (["--home", str(home)] if home is not None else [])


def portable_command(agent: str, event: str) -> str:
    """A project's hook command: `engram-hook` through PATH, the same line on every teammate's machine."""
    return GUARD + shell([HOOK_COMMAND, agent, event])


def hook_line(agent: str, scope: str, event: str, home: Path | None) -> str:
    """The command line a settings file of this scope holds for the event."""
    return portable_command(agent, event) if scope == PROJECT else shell(command(agent, event, home))


def hook_on_path() -> str | None:
    """Where `engram-hook` is found through PATH here, if anywhere."""
    return shutil.which(HOOK_COMMAND)


def slow_launcher(path: str) -> bool:
    """True when the launcher at ``path`` imports re before Engram's first line, as those of pip before 26.0 do
    (distlib's template: `import re` to tidy sys.argv[0]): ~7 ms of each hook event, a third of its time
    (docs/benchmarks.md). uv, pipx and pip 26 write launchers without it."""
    try:
        with open(path, "rb") as launcher:
            head = launcher.read(LAUNCHER_HEAD)
    except OSError:
        return False
    return b"\nimport re\n" in head


def shell(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def ours(text: str) -> bool:
    """True when a command (or a settings text) is one of Engram's hooks."""
    return any(marker in text for marker in MARKERS)


# --- install / uninstall -----------------------------------------------------------------------------------


def install(agent: str, scope: str, project_dir: Path, hooks_dir: Path, home: Path | None) -> Outcome:
    """Merges Engram's entries into the agent's settings file; the file is backed up the first time."""
    path = settings_path(agent, scope, project_dir)
    original = path.read_bytes() if path.exists() else None
    text = original.decode("utf-8") if original is not None else ""
    if agent == CODEX:
        updated = _codex_install(text, command(agent, "notify", home))
    else:
        data = _load(path, text)
        events = CLAUDE_EVENTS if agent == CLAUDE_CODE else GEMINI_EVENTS
        updated = _dump(_with_entries(_without_entries(data), events, lambda e: hook_line(agent, scope, e, home)))
    if updated == text:
        return Outcome(agent, scope, path, "already installed")
    records = _records(hooks_dir)
    record = records.get(str(path))
    if record is None:
        backup = _backup(hooks_dir, agent, scope, path, original)
        record = {"agent": agent, "scope": scope, "backup": str(backup) if backup else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    if original is None:
        record["created_dir"] = not any(path.parent.iterdir())
    _write(path, updated)
    record["written"] = _digest(updated.encode("utf-8"))
    records[str(path)] = record
    _save_records(hooks_dir, records)
    return Outcome(agent, scope, path, "installed", Path(record["backup"]) if record.get("backup") else None)


def uninstall(agent: str, scope: str, project_dir: Path, hooks_dir: Path) -> Outcome:
    """Restores the file from its backup when it is as Engram left it; else removes exactly Engram's entries."""
    path = settings_path(agent, scope, project_dir)
    records = _records(hooks_dir)
    record = records.pop(str(path), None)
    current = path.read_bytes() if path.exists() else None
    if record is not None and current is not None and _digest(current) == record.get("written"):
        backup = Path(record["backup"]) if record.get("backup") else None
        if backup is not None:
            path.write_bytes(backup.read_bytes())
            backup.unlink(missing_ok=True)
        else:
            path.unlink()
            if record.get("created_dir") and not any(path.parent.iterdir()):
                path.parent.rmdir()
        _save_records(hooks_dir, records)
        return Outcome(agent, scope, path, "restored", backup)
    if current is None:
        _save_records(hooks_dir, records)
        return Outcome(agent, scope, path, "not installed")
    text = current.decode("utf-8")
    updated = _codex_uninstall(text) if agent == CODEX else _dump(_without_entries(_load(path, text)))
    _save_records(hooks_dir, records)
    if updated == text or (agent != CODEX and not ours(text)):
        return Outcome(agent, scope, path, "not installed")
    _write(path, updated)
    return Outcome(agent, scope, path, "removed")


def installed(agent: str, scope: str, project_dir: Path) -> Installed | None:
    """Engram's entries in the agent's settings file for a scope, if any."""
    try:
        path = settings_path(agent, scope, project_dir)
    except HooksError:
        return None
    return installed_at(agent, scope, path)


def installed_at(agent: str, scope: str, path: Path) -> Installed | None:
    """Engram's entries in one settings file, if any."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    if not ours(text):
        return None
    if agent == CODEX:
        return Installed(agent, scope, path, ("notify",))
    try:
        hooks = json.loads(text).get("hooks", {})
    except (ValueError, AttributeError):
        return None
    events = tuple(e for e, groups in hooks.items() if isinstance(groups, list) and ours(json.dumps(groups)))
    return Installed(agent, scope, path, events) if events else None


def everywhere(project_dir: Path, hooks_dir: Path) -> list[Installed]:
    """Every install that is still there: the user's and this project's settings, and every file the records name
    (a project elsewhere): what `engram hooks status` lists wherever it is run."""
    found = {str(i.path): i for a in SUPPORTED for s in SCOPES if (i := installed(a, s, project_dir))}
    for path, record in _records(hooks_dir).items():
        known = path not in found and record.get("agent") in SUPPORTED and record.get("scope") in SCOPES
        if known and (item := installed_at(record["agent"], record["scope"], Path(path))):
            found[path] = item
    return list(found.values())


# --- JSON settings (Claude Code, Gemini CLI) -----------------------------------------------------------------


def _load(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        raise HooksError(f"{path} is not valid JSON ({e}); fix it, then run the command again") from e
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise HooksError(f"{path}: expected a JSON object whose `hooks` is an object; fix it, then try again")
    return data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n" if data else ""


def _ours(handler: object) -> bool:
    return isinstance(handler, dict) and ours(str(handler.get("command", "")))


def _without_entries(data: dict[str, Any]) -> dict[str, Any]:
    """The settings without Engram's handlers; a group, event or `hooks` emptied by that goes too."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(_ours(h) for h in handlers):
                rest = [h for h in handlers if not _ours(h)]
                if rest:
                    kept.append({**group, "hooks": rest})
                continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    if not hooks and "hooks" in data:
        del data["hooks"]
    return data


def _with_entries(data: dict[str, Any], events: dict[str, tuple[str | None, int]], command_of: Any) -> dict[str, Any]:
    hooks = data.setdefault("hooks", {})
    for event, (matcher, timeout) in events.items():
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": command_of(event), "timeout": timeout}]
        hooks.setdefault(event, []).append(group)
    return data


# --- TOML (Codex CLI) ---------------------------------------------------------------------------------------

_NOTIFY = re.compile(r"^\s*notify\s*=", re.MULTILINE)


def _codex_install(text: str, words: list[str]) -> str:
    line = "notify = [" + ", ".join(json.dumps(w) for w in words) + "]  # engram hooks\n"
    without = _codex_uninstall(text)
    head = without.split("\n[", 1)[0] if not without.startswith("[") else ""
    if _NOTIFY.search(head):
        raise HooksError(
            "~/.codex/config.toml already runs a notify program, and Codex runs only one: remove its `notify` line "
            "(or chain it from a script of yours), then install again"
        )
    return line + without


def _codex_uninstall(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if MARKER not in line)


# --- records and backups ------------------------------------------------------------------------------------


def _records(hooks_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((hooks_dir / RECORDS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_records(hooks_dir: Path, records: dict[str, Any]) -> None:
    hooks_dir.mkdir(parents=True, exist_ok=True)
    _write(hooks_dir / RECORDS, json.dumps(records, indent=2) + "\n")


def _backup(hooks_dir: Path, agent: str, scope: str, path: Path, original: bytes | None) -> Path | None:
    if original is None:
        return None
    folder = hooks_dir / "backups"
    folder.mkdir(parents=True, exist_ok=True)
    backup = folder / f"{agent}-{scope}-{_digest(str(path).encode())[:12]}{path.suffix}"
    backup.write_bytes(original)
    return backup


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, text: str) -> None:
    """Replaces the file at once (a reader never sees half of it), keeping its permissions."""
    tmp = path.with_name(path.name + ".engram-tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
