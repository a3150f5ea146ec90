"""`engram sync`: an edge node's sync, its status (the default), a round at once (--now) or a full re-push (--full)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.cli.common import add_home
from engram.config import Settings

if TYPE_CHECKING:
    from engram.services.sync.device import SyncState

FULL_POLL_SECONDS = 0.5
NOW_WAIT_SECONDS = 60.0  # a round pushes and pulls a page each; a slow cluster answers within its HTTP timeout


def register(subparsers: Any) -> None:
    """Registers ``sync [--status | --full]`` on the ``engram`` sub-command parsers."""
    text = "an edge node's sync: its status (the default), --now to sync at once, or --full to re-push all"
    sync = subparsers.add_parser("sync", help=text, description=text[:1].upper() + text[1:] + ".")
    add_home(sync)
    group = sync.add_mutually_exclusive_group()
    group.add_argument("--status", action="store_true", help="outbox depth, last push and pull, cursor, errors")
    group.add_argument(
        "--now", action="store_true", help="push and pull at once, whatever the back-off after an outage holds back"
    )
    group.add_argument(
        "--full", action="store_true", help="re-push every memory of this device (rebuilds a cluster restored empty)"
    )
    sync.add_argument("--json", action="store_true", help="print the state as JSON")
    sync.set_defaults(func=_sync)


def _sync(args: argparse.Namespace, settings: Settings) -> int:
    from engram.services.sync.device import STATE_FILE, SyncState

    path = settings.home / "sync" / STATE_FILE
    if args.full:
        return _full(settings.home, path)
    if args.now:
        return _now(settings.home, path)
    if not path.exists():
        print(
            f"{settings.home} has never synced. Start it as an edge node: "
            "`engram edge --upstream <cluster URL> --key <sync key>`.",
            file=sys.stderr,
        )
        return 1
    state = SyncState.load(path)
    if args.json:
        print(json.dumps(asdict(state), indent=1))
        return 0
    print(render(state))
    return 0


def _now(home: Path, path: Path, *, timeout: float = NOW_WAIT_SECONDS) -> int:
    """Asks the data dir's edge node for a sync round at once and waits (boundedly) for its outcome."""
    from engram.process.nodeinfo import read_node_info
    from engram.services.sync.device import SyncState, request_now

    if read_node_info(home) is None:
        print(f"engram: no node runs on {home}; start it as an edge node (`engram edge --upstream <cluster URL> "
              "--key <sync key>`): it syncs as it starts.", file=sys.stderr)  # fmt: skip
        return 1
    asked = time.time()
    request = request_now(home)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not request.exists():  # the worker took the request: its round has started
            state = SyncState.load(path)
            if max(state.last_pull or 0, (state.errors[-1]["time"] if state.errors else 0)) >= asked:
                print(state.line())
                return 1 if state.last_error else 0
        time.sleep(FULL_POLL_SECONDS)
    print(f"Sync requested; the edge node has not finished a round within {timeout:.0f}s "
          "(see `engram sync --status`).")  # fmt: skip
    return 0


def _full(home: Path, path: Path) -> int:
    """Asks the data dir's edge node for a full re-push, and follows it while the node runs it."""
    from engram.process.nodeinfo import read_node_info
    from engram.services.sync.device import SyncState, request_full

    asked = time.time()
    request_full(home)
    if read_node_info(home) is None:
        print("Full re-push requested: it runs when this data dir's edge node starts (`engram edge ...`).")
        return 0
    print("Full re-push requested; waiting for the edge node to run it (Ctrl-C leaves it running).")
    while True:
        full = SyncState.load(path).full
        if full.get("started", 0) >= asked - 1:
            done, total = int(full.get("done", 0)), max(int(full.get("total", 0)), 1)
            print(f"\r  {min(done, total)}/{total} log entries read", end="", flush=True)
            if full.get("state") == "done":
                print(f"\nDone: {full.get('restored', 0)} versions restored on the cluster, "
                      f"{full.get('rejected', 0)} rejected (see `engram sync --status`).")  # fmt: skip
                return 0
        time.sleep(FULL_POLL_SECONDS)


def render(state: SyncState) -> str:
    """The human-readable sync state: upstream, outbox, last push and pull, rejections, errors."""
    lines = [
        f"upstream:   {state.upstream or '(none)'} as device {state.device or '?'} "
        f"(namespace {state.namespace or 'not registered yet'})",
        f"outbox:     {state.outbox} local entries not pushed yet (pushed up to local seq {state.pushed})",
        f"last push:  {_when(state.last_push)}   ({state.pushed_total} changes pushed, {state.conflicts} conflicts)",
        f"last pull:  {_when(state.last_pull)}   (cursor {state.cursor} of {state.cluster_seq}, "
        f"{state.pulled_total} changes pulled)",
    ]
    if state.rejected_total:
        lines.append(f"rejected:   {state.rejected_total} changes (kept here, never sent again); latest:")
        lines += [f"  {r.get('source_id')}: {r.get('reason')}" for r in state.rejected[-5:]]
    if state.last_error:
        lines.append(f"last error: {state.last_error}")
    elif state.errors:
        lines.append(f"errors:     none since {_when(state.errors[-1].get('time'))}")
    if state.full:
        lines.append(f"full push:  {state.full.get('state')} ({state.full.get('restored', 0)} restored)")
    return "\n".join(lines)


def _when(epoch: float | None) -> str:
    if not epoch:
        return "never"
    ago = max(0.0, time.time() - epoch)
    stamp = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({ago:.0f}s ago)"
