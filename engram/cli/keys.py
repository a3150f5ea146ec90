"""`engram keys create|list|revoke`: the API keys of a data dir (shown once, stored hashed)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from engram.cli.common import add_home, sub
from engram.config import Settings

if TYPE_CHECKING:
    from engram.keys import KeyStore


KEY_COLUMNS = ("KEY_ID", "NAMESPACE", "AGENT", "SCOPES", "DEVICE", "TEAM")  # `keys list`, its header first


def register(subparsers: Any) -> None:
    """Registers ``keys create|list|revoke`` on the ``engram`` sub-command parsers."""
    keys = sub(subparsers, "keys", "manage API keys: create (shown once), list, revoke")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = add_home(keys_sub.add_parser("create", help="create a key (printed once)"))
    create.add_argument("--namespace", required=True)
    create.add_argument(
        "--agent",
        default="",
        help="the agent acting with it (name or name@device); without it the key is shared. A sync key names the "
        "agents that work on its device, comma-separated (robot,planner)",
    )
    create.add_argument("--device", default="", help="the device its callers run on, unless they send X-Engram-Device")
    create.add_argument("--team", default="", help="the team of its callers, unless they send X-Engram-Team")
    create.add_argument("--scopes", default="read,write", help="comma-separated: read, write, admin, sync")
    create.set_defaults(func=_create)
    listing = add_home(keys_sub.add_parser("list", help="list keys (never their secrets)"))
    listing.set_defaults(func=_list)
    revoke = add_home(keys_sub.add_parser("revoke", help="revoke a key by id"))
    revoke.add_argument("key_id")
    revoke.set_defaults(func=_revoke)


def _store(settings: Settings) -> KeyStore:
    from engram.keys import KeyStore

    return KeyStore(settings.keys_path)


def _create(args: argparse.Namespace, settings: Settings) -> int:
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
    record, secret = _store(settings).create(
        namespace=args.namespace, agent=args.agent, device=args.device, team=args.team, scopes=scopes
    )
    print(secret)
    agent = (
        f"agent '{record.agent}'"
        if record.agent
        else "shared (each caller names itself: X-Engram-Agent-ID, ?agent_id= or its MCP client name)"
    )
    fixed = "".join(
        f", {label} '{value}'" for label, value in (("device", record.device), ("team", record.team)) if value
    )
    print(
        f"Key {record.key_id} for namespace '{record.namespace}', {agent}{fixed}, "
        f"scopes {','.join(sorted(record.scopes))}. It is shown only now: store it safely.",
        file=sys.stderr,
    )
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    records = _store(settings).list()
    if not records:
        print(
            "no keys yet; create one with engram keys create --namespace NAMESPACE [--agent AGENT] "
            "[--device DEVICE] [--team TEAM] [--scopes read,write]",
            file=sys.stderr,
        )
    if records:
        print("\t".join(KEY_COLUMNS))
    for record in records:
        # Tab-separated; the device and team columns came later, so they go last. "-": the key leaves it open.
        granted = ",".join(sorted(record.scopes))
        columns = (record.key_id, record.namespace, record.agent, granted, record.device, record.team)
        print("\t".join(value or "-" for value in columns))
    return 0


def _revoke(args: argparse.Namespace, settings: Settings) -> int:
    if _store(settings).revoke(args.key_id):
        print(f"revoked {args.key_id}")
        return 0
    print(f"engram: no key with id {args.key_id}", file=sys.stderr)
    return 1
