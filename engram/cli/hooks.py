"""`engram hooks install|uninstall|status|pause|resume|flush`: capture through agents' own hooks (docs/hooks.md).
The settings files are edited here, on the machine the agent runs on; `flush` sends the spool to the node."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from engram.cli.common import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, add_home, sub
from engram.config import Settings

_AGENTS_HELP = "claude-code, gemini-cli or codex"


def register(subparsers: Any) -> None:
    """Registers `engram hooks` and its actions on the ``engram`` sub-command parsers."""
    hooks = sub(subparsers, "hooks", "capture what agents do through their own hooks: install, status, pause")
    hooks.set_defaults(func=_run)
    actions = hooks.add_subparsers(dest="hooks_command", required=True, metavar="ACTION")
    for name, text, act in (
        ("install", "add Engram's hooks to an agent's settings (backed up first)", _install),
        ("uninstall", "take Engram's hooks out again (the backup restored when the file is unchanged)", _uninstall),
    ):
        action = add_home(sub(actions, name, text))
        action.add_argument("agent", metavar="AGENT", help=_AGENTS_HELP)
        action.add_argument(
            "--scope", choices=("user", "project"), default="user",
            help="user: the agent's settings in your home folder (default); project: those of the project",
        )  # fmt: skip
        action.add_argument("--project-dir", type=Path, help="the project (default: the repository of this folder)")
        action.set_defaults(act=act)
    status = add_home(sub(actions, "status", "what is installed where, whether capture runs, what waits in the spool"))
    status.add_argument("--project-dir", type=Path, help="the project (default: the repository of this folder)")
    status.set_defaults(act=_status)
    for name, text, act in (
        ("pause", "stop capturing (and injecting context) until resume", _pause),
        ("resume", "capture again", _resume),
        ("flush", "send what waits in the spool to the node now", _flush),
    ):
        add_home(sub(actions, name, text)).set_defaults(act=act)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    code: int = args.act(args, settings)
    return code


def _project(args: argparse.Namespace) -> Path:
    from engram.hooks.install import project_root

    return (args.project_dir or project_root(Path.cwd())).resolve()


def _home_flag(args: argparse.Namespace, settings: Settings) -> Path | None:
    """The data dir the hook command names: only one given here (--home or ENGRAM_HOME) that is not the default."""
    return settings.home if settings.home != Settings().home else None


def _install(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.install import HooksError, install, shell

    try:
        outcome = install(args.agent, args.scope, _project(args), settings.home / "hooks", _home_flag(args, settings))
    except HooksError as e:
        print(f"engram: {e}")
        return EXIT_USAGE
    if outcome.action == "already installed":
        print(f"Engram's {args.agent} hooks are already installed in {outcome.path}")
        return EXIT_OK
    print(f"Installed Engram's {args.agent} hooks in {outcome.path}")
    if outcome.backup:
        print(f"  backup of the file as it was: {outcome.backup}")
    from engram.hooks.install import command

    print(f"  each runs: {shell(command(args.agent, '<Event>', _home_flag(args, settings)))}")
    print(f"  undo with: engram hooks uninstall {args.agent}" + (" --scope project" if args.scope == "project" else ""))
    return EXIT_OK


def _uninstall(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.install import HooksError, uninstall

    try:
        outcome = uninstall(args.agent, args.scope, _project(args), settings.home / "hooks")
    except HooksError as e:
        print(f"engram: {e}")
        return EXIT_USAGE
    said = {
        "restored": "restored as it was before Engram's hooks were installed",
        "removed": "Engram's hooks removed (the file changed since; everything else is kept)",
        "not installed": "has no Engram hooks",
    }
    print(f"{outcome.path}: {said[outcome.action]}")
    return EXIT_OK


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.capture import Paths, node_url, spool
    from engram.hooks.install import SCOPES, SUPPORTED, installed
    from engram.hooks.privacy import opted_out, paused

    project = _project(args)
    paths = Paths.of(settings)
    found = [i for agent in SUPPORTED for scope in SCOPES if (i := installed(agent, scope, project))]
    for item in found:
        print(f"{item.agent:12} {item.scope:8} {item.path}: {', '.join(item.events)}")
    if not found:
        print("No Engram hooks installed (engram hooks install claude-code).")
    print("capture: " + ("paused (engram hooks resume)" if paused(paths.hooks) else "on"))
    if (opt_out := opted_out(str(Path.cwd()))) is not None:
        print(f"this folder: opted out by {opt_out}")
    for line in spool(settings).report(node_url(settings)):
        print(line)
    errors = paths.hooks / "errors.log"
    if errors.exists() and errors.stat().st_size:
        print(f"errors: see {errors}")
    return EXIT_OK


def _pause(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.files import open_private, private_dir
    from engram.hooks.privacy import PAUSED_FILE

    os.close(open_private(private_dir(settings.home / "hooks") / PAUSED_FILE, os.O_WRONLY))
    print("Capture paused: the hooks stay installed and do nothing until `engram hooks resume`.")
    return EXIT_OK


def _resume(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.privacy import PAUSED_FILE

    (settings.home / "hooks" / PAUSED_FILE).unlink(missing_ok=True)
    print("Capture resumed.")
    return EXIT_OK


def _flush(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.capture import deliver, node_url, spool

    result = deliver(settings, wait=True)
    print(f"sent {result.sent}: {result.stored} stored, {result.present} already stored, {result.rejected} refused; "
          f"{result.left} waiting")  # fmt: skip
    for line in spool(settings).report(node_url(settings))[1:]:  # what was dropped, parked or rejected
        print(line)
    if result.refused:
        print(f"engram: {result.parked} capture(s) parked, {result.refused}")
    if result.error.startswith("no node answers"):
        print(f"engram: {result.error}; they stay in the spool (start the node: engram serve, {node_url(settings)})")
    elif result.error:
        print(f"engram: {result.error}; they stay in the spool, `engram hooks flush` sends them again")
    if result.error or result.refused:
        return EXIT_REFUSED
    spool(settings).clear_dropped()  # said above; the spool is empty now
    return EXIT_OK
