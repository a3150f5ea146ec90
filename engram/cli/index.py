"""`engram index quarantine list|retry|purge`: the log entries the search index could not apply and set aside (admin
key), through the node's REST API."""

from __future__ import annotations

import argparse
from typing import Any

from engram import plural
from engram.cli.common import Call, call_node, node_options, sub

_ADMIN_HINT = "Set ENGRAM_API_KEY to a key with the admin scope."
_SEQS_HELP = "log sequences of the entries (from `engram index quarantine list`); none: every one you may see"


def register(subparsers: Any) -> None:
    """Registers `engram index quarantine ...` on the ``engram`` sub-command parsers."""
    index = sub(subparsers, "index", "the search index: log entries it could not apply (admin key)")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    quarantine = sub(index_sub, "quarantine", "log entries the index set aside so that it goes on")
    actions = quarantine.add_subparsers(dest="quarantine_command", required=True)

    listing = node_options(sub(actions, "list", "list them: sequence, namespace, memory, event and error"))
    listing.set_defaults(func=call_node, build=_list)

    retry = node_options(sub(actions, "retry", "apply them again from the log (after a fix or an upgrade)"))
    retry.add_argument("seqs", nargs="*", type=int, metavar="SEQ", help=_SEQS_HELP)
    retry.set_defaults(func=call_node, build=_retry)

    purge = node_options(sub(actions, "purge", "drop them from the quarantine (--erase: purge their memories too)"))
    purge.add_argument("seqs", nargs="*", type=int, metavar="SEQ", help=_SEQS_HELP)
    purge.add_argument(
        "--erase", action="store_true", help="also purge the memories they are about, every log entry of each"
    )
    purge.set_defaults(func=call_node, build=_purge)
    for parser in (quarantine, listing, retry, purge):
        parser.epilog = (
            "Needs an API key with the admin scope in ENGRAM_API_KEY; it manages its own namespace's entries."
        )


def _list(args: argparse.Namespace) -> Call:
    return Call("GET", "/v1/index/quarantine", render_list, hint_403=_ADMIN_HINT)


def _retry(args: argparse.Namespace) -> Call:
    return Call("POST", "/v1/index/quarantine/retry", render_retry, body={"seqs": args.seqs}, hint_403=_ADMIN_HINT)


def _purge(args: argparse.Namespace) -> Call:
    body = {"seqs": args.seqs, "erase": args.erase}
    return Call("POST", "/v1/index/quarantine/purge", render_purge, body=body, hint_403=_ADMIN_HINT)


def _entries(n: int) -> str:
    return plural.counted(n, "log entry", "log entries")


def _line(entry: dict[str, Any]) -> str:
    memory = f" memory {entry['memory_id']}" if entry.get("memory_id") else ""
    return (
        f"  {entry['seq']}  {entry['namespace']}{memory}  {entry['event']}  {entry['at'] or '?'}\n    {entry['error']}"
    )


def render_list(answer: dict[str, Any]) -> str:
    entries = answer.get("entries") or []
    total = answer.get("total", len(entries))
    if not entries:
        return (
            f"No log entry of yours is set aside ({total:,} on this node)." if total else "No log entry is set aside."
        )
    lines = [f"{_entries(len(entries))} set aside ({total:,} on this node); the index serves everything else:"]
    lines += [_line(e) for e in entries]
    lines.append("Retry them with `engram index quarantine retry SEQ`, or drop them with `... purge SEQ [--erase]`.")
    return "\n".join(lines)


def render_retry(answer: dict[str, Any]) -> str:
    applied, failed = answer.get("applied") or [], answer.get("failed") or []
    lines = [f"{len(applied)} applied, {len(failed)} still failing."]
    lines += [f"  applied {e['seq']}" for e in applied]
    lines += [_line(e) for e in failed]
    return "\n".join(lines)


def render_purge(answer: dict[str, Any]) -> str:
    dropped, erased = answer.get("dropped") or [], answer.get("erased") or []
    text = f"{_entries(len(dropped))} dropped from the quarantine"
    if erased:
        text += f"; {plural.memories(len(erased))} purged ({', '.join(erased)})"
    return text + "."
