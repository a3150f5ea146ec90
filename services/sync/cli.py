"""`engram edge` (an edge node: the embedded node plus its sync worker) and `engram sync` (--status, --full)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.config import Settings, SettingsError

COMMANDS = ("sync",)
FULL_POLL_SECONDS = 0.5
# What `engram edge` changes from the embedded node's defaults (docs/operations.md, "Edge devices"), unless the
# environment sets it: the index keeps its dense vectors on disk and searches int8 copies in memory, and the
# scheduled consolidation (dedupe, merges, decay of the shared memory) is the cluster's to run.
EDGE_PROFILE: dict[str, object] = {"index_vectors": "disk", "consolidation_interval_seconds": 0.0}


def add_parsers(sub: Any, home: Any) -> None:
    edge = sub.add_parser(
        "edge", help="run an edge node: the embedded node, syncing with a cluster whenever it can reach it"
    )
    home(edge)
    edge.add_argument("--upstream", help="the cluster gateway's URL, e.g. https://engram.example.com (ENGRAM_UPSTREAM)")
    edge.add_argument("--key", help="the device's API key on the cluster, scoped sync (ENGRAM_UPSTREAM_KEY)")
    edge.add_argument("--device", help="this device's name (ENGRAM_DEVICE, default the host name)")
    edge.add_argument("--host", help="local gateway bind address (ENGRAM_HOST, default 127.0.0.1)")
    edge.add_argument("--port", type=int, help="local gateway port (ENGRAM_PORT, default 8765; 0 picks one)")
    edge.add_argument("--quiet", action="store_true", help="do not print the connection banner")

    sync = sub.add_parser("sync", help="an edge node's sync: its status (the default), or --full to re-push all")
    home(sync)
    group = sync.add_mutually_exclusive_group()
    group.add_argument("--status", action="store_true", help="outbox depth, last push and pull, cursor, errors")
    group.add_argument(
        "--full", action="store_true", help="re-push every memory of this device (rebuilds a cluster restored empty)"
    )
    sync.add_argument("--json", action="store_true", help="print the state as JSON")


def edge_settings(settings: Settings, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of an edge node: an upstream is required, and the edge profile applies where the environment
    does not say otherwise."""
    if not settings.upstream:
        raise SettingsError(
            "engram edge needs the cluster's URL: `engram edge --upstream https://engram.example.com --key <sync key>` "
            "(or ENGRAM_UPSTREAM). Create the key on the cluster: "
            "`engram keys create --namespace <ns> --agent <agent> --device <device> --scopes sync`."
        )
    env = os.environ if env is None else env
    profile = {name: value for name, value in EDGE_PROFILE.items() if f"ENGRAM_{name.upper()}" not in env}
    return settings.replace(**profile)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from engram.services.sync.device import STATE_FILE, SyncState, request_full

    path = settings.home / "sync" / STATE_FILE
    if args.full:
        return _full(settings.home, path, request_full)
    if not path.exists():
        print(
            f"{settings.home} has never synced. Start it as an edge node: "
            "`engram edge --upstream <cluster URL> --key <sync key>`.",
            file=sys.stderr,
        )
        return 1
    state = SyncState.load(path)
    if args.json:
        print(json.dumps(_as_dict(state), indent=1))
        return 0
    print(_status(state))
    return 0


def _full(home: Path, path: Path, request: Any) -> int:
    from engram.process.nodeinfo import read_node_info
    from engram.services.sync.device import SyncState

    asked = time.time()
    request(home)
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


def _as_dict(state: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(state)


def _status(state: Any) -> str:
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
