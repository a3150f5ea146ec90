"""`engram hooks install|uninstall|status|pause|resume|flush`: capture through agents' own hooks (docs/hooks.md).
The settings files are edited here, on the machine the agent runs on; `flush` sends the spool to the node."""

from __future__ import annotations

import argparse
import os
import sys
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
    install = add_home(sub(actions, "install", "add Engram's hooks to an agent's settings (backed up first)"))
    install.add_argument("agent", metavar="AGENT", help=_AGENTS_HELP)
    install.add_argument(
        "--scope", choices=("user", "project"), default="user",
        help="user: the agent's settings in your home folder (default); project: the project's, which a team may "
        "commit: they run engram-hook through PATH and name no path of this machine",
    )  # fmt: skip
    install.add_argument("--project-dir", type=Path, help="the project (default: the repository of this folder)")
    install.add_argument(
        "--url",
        help="deliver to the node at this URL (a cluster or another host's gateway) "
        "instead of the local one; kept in <home>/hooks/node.json, never in the agent's settings",
    )
    install.add_argument("--key", help="the API key the hooks send to --url (default: ENGRAM_API_KEY)")
    install.add_argument("--local", action="store_true", help="deliver to the local node again (forget --url)")
    install.set_defaults(act=_install)
    uninstall = add_home(sub(actions, "uninstall", "take Engram's hooks out again (the backup restored when the "
                             "file is unchanged)"))  # fmt: skip
    uninstall.add_argument("agent", metavar="AGENT", help=_AGENTS_HELP)
    uninstall.add_argument(
        "--scope", choices=("user", "project"),
        help="only this scope (default: wherever they are: your home folder's settings and this project's)",
    )  # fmt: skip
    uninstall.add_argument("--project-dir", type=Path, help="the project (default: the repository of this folder)")
    uninstall.set_defaults(act=_uninstall)
    status = add_home(sub(actions, "status", "what is installed where, whether capture runs, what waits in the spool"))
    status.add_argument("--project-dir", type=Path, help="the project (default: the repository of this folder)")
    status.set_defaults(act=_status)
    for name, text, act in (
        ("pause", "stop capturing (and injecting context) until resume", _pause),
        ("resume", "capture again", _resume),
        ("flush", "capture what waits in the inbox, then send what waits in the spool to the node now", _flush),
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
    from engram.hooks.install import PROJECT, HooksError, hook_line, install
    from engram.hooks.target import TargetError, forget, save, saved

    hooks_dir = settings.home / "hooks"
    home = None if args.scope == PROJECT else _home_flag(args, settings)  # a project's file names no local path
    try:
        if args.url:
            save(hooks_dir, args.url, args.key or settings.api_key)
        outcome = install(args.agent, args.scope, _project(args), hooks_dir, home)
    except (HooksError, TargetError) as e:
        print(f"engram: {e}")
        return EXIT_USAGE
    if args.url:
        print(f"The hooks deliver to {args.url.rstrip('/')}" + (" with the key given" if args.key or settings.api_key
              else " without a key (give --key, or set ENGRAM_API_KEY, when that node requires one)"))  # fmt: skip
    elif args.local and forget(hooks_dir):
        print("The hooks deliver to the local node again")
    elif named := saved(hooks_dir).get("url"):
        print(f"The hooks deliver to {named}, named by an earlier install (--local: to the local node again)")
    if outcome.action == "already installed":
        print(f"Engram's {args.agent} hooks are already installed in {outcome.path}")
        return EXIT_OK
    print(f"Installed Engram's {args.agent} hooks in {outcome.path}")
    if outcome.backup:
        print(f"  backup of the file as it was: {outcome.backup}")
    print(f"  each runs: {hook_line(args.agent, args.scope, '<Event>', home)}")
    if args.scope == PROJECT:
        _project_notes(settings)
    print(f"  undo with: engram hooks uninstall {args.agent}")
    return EXIT_OK


def _project_notes(settings: Settings) -> None:
    """What a project install means on this machine and on teammates' (the file names no path of this one)."""
    from engram.hooks.install import hook_on_path, slow_launcher

    print("  the file may be committed: it runs engram-hook through each machine's PATH and names no local path")
    found = hook_on_path()
    if found is None:
        print(
            "  engram-hook is not on PATH here, so these hooks will say so at each event: put this environment's "
            "bin folder on PATH, or install Engram as a tool (uv tool install . / pipx install .)"
        )
    elif slow_launcher(found):
        print(
            f"  {found} was written by a pip before 26.0 and imports re at each event (~7 ms): upgrade that "
            "environment's pip and reinstall Engram there, or install Engram as a tool (uv tool install . / pipx "
            "install .)"
        )
    if settings.home != Settings().home:
        print(f"  on each machine they use the data dir of ENGRAM_HOME (default ~/.engram), not {settings.home}")


def _uninstall(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.install import CODEX, SCOPES, USER, HooksError, uninstall

    scopes = [args.scope] if args.scope else [USER] if args.agent == CODEX else list(SCOPES)
    said = {
        "restored": "restored as it was before Engram's hooks were installed",
        "removed": "Engram's hooks removed (the file changed since; everything else is kept)",
        "not installed": "has no Engram hooks",
    }
    outcomes = []
    try:
        outcomes = [uninstall(args.agent, scope, _project(args), settings.home / "hooks") for scope in scopes]
    except HooksError as e:
        print(f"engram: {e}")
        return EXIT_USAGE
    shown = [o for o in outcomes if o.action != "not installed"] or outcomes
    for outcome in shown:
        print(f"{outcome.path}: {said[outcome.action]}")
    return EXIT_OK


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from engram.hooks.capture import Paths, node_url, spool
    from engram.hooks.install import everywhere
    from engram.hooks.privacy import opted_out, paused
    from engram.hooks.target import applied
    from engram.hooks.worker import waiting

    settings = applied(settings)
    paths = Paths.of(settings)
    found = everywhere(_project(args), paths.hooks)
    for item in found:
        print(f"{item.agent:12} {item.scope:8} {item.path}: {', '.join(item.events)}")
    if not found:
        print("No Engram hooks installed (engram hooks install claude-code).")
    print("capture: " + ("paused (engram hooks resume)" if paused(paths.hooks) else "on"))
    if (opt_out := opted_out(str(Path.cwd()))) is not None:
        print(f"this folder: opted out by {opt_out}")
    if count := waiting(settings.home):
        print(f"inbox: {count} event(s) waiting for the capture worker (it takes them within seconds; if none is "
              "running, the next hook or `engram hooks flush` captures them)")  # fmt: skip
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
    from engram.hooks.target import applied
    from engram.hooks.worker import drain_now

    settings = applied(settings)
    drain_now(settings.home, lambda text: print(f"engram: an event could not be captured: {text}", file=sys.stderr))
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
