"""`engram update|delete|supersede|unsupersede|history|at|stats` and `engram admin purge`: the memory lifecycle from
a shell, through the node's REST API, for people (text) and scripts (--json)."""

from __future__ import annotations

import sys

from engram import plural
from engram.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    ID_HELP,
    Call,
    UsageError,
    call_node,
    given_fields,
    memory_fields,
    node_options,
    node_url,
    preview,
    sub,
)
from engram.cli.urls import quote

# typing and engram.config stay out of a command's start (PEP 563 annotations, for mypy), and so do argparse, json
# and urllib.parse (`engram get --history`, parsed by engram.cli.quick, uses this module's rendering).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from engram.config import Settings

_VERSION_HELP = "change it only if it is still at version N (else nothing changes and the current version is named)"
_ADMIN_HINT = "Set ENGRAM_API_KEY to a key with the admin scope."


def register(subparsers: Any) -> None:
    """Registers the lifecycle commands on the ``engram`` sub-command parsers."""
    update = node_options(sub(subparsers, "update", "change fields of one of your memories (a new version)"))
    update.add_argument("id", help=ID_HELP)
    update.add_argument("--content", help="the new content")
    memory_fields(update)
    update.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
    update.epilog = "--tag and --topic replace the whole list. Only the agent that saved a memory may change it."
    update.set_defaults(func=call_node, build=_update, id_fields=("id",))

    delete = node_options(sub(subparsers, "delete", "archive a memory (hidden from search, kept in its history)"))
    delete.add_argument("id", help=ID_HELP)
    delete.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
    delete.set_defaults(func=call_node, build=_delete, id_fields=("id",))

    supersede = node_options(
        sub(subparsers, "supersede", "replace a memory with a new one (--content) or an existing one")
    )
    supersede.add_argument("id", help=ID_HELP)
    replacement = supersede.add_mutually_exclusive_group(required=True)
    replacement.add_argument("--content", help="content of the new memory that replaces it")
    replacement.add_argument("--new-id", help="an existing memory that replaces it (whole id, or a short one)")
    memory_fields(supersede)
    supersede.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
    supersede.set_defaults(func=call_node, build=_supersede, id_fields=("id", "new_id"))

    unsupersede = node_options(
        sub(subparsers, "unsupersede", "undo a memory's supersession: it is active again (its owner, or an admin)")
    )
    unsupersede.add_argument("id", help="the superseded memory: " + ID_HELP.removeprefix("the memory's id: "))
    unsupersede.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
    unsupersede.set_defaults(func=call_node, build=_unsupersede, id_fields=("id",))

    history = node_options(sub(subparsers, "history", "every version of a memory, oldest first"))
    history.add_argument("id", help=ID_HELP)
    history.set_defaults(func=call_node, build=_history, id_fields=("id",))

    at = node_options(sub(subparsers, "at", "a memory as it was at a point in time"))
    at.add_argument("id", help=ID_HELP)
    at.add_argument("time", help="an RFC 3339 time, e.g. 2026-01-31T12:00:00Z")
    at.set_defaults(func=call_node, build=_at, id_fields=("id",))

    stats = node_options(
        sub(subparsers, "stats", "counts of your namespace's memories by agent, type, status and team")
    )
    stats.set_defaults(func=call_node, build=_stats)

    admin = sub(subparsers, "admin", "administrative acts (need an API key with the admin scope)")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True)
    purge = node_options(sub(admin_sub, "purge", "erase a memory and every version of it for good (admin key)"))
    purge.add_argument("id", help=ID_HELP)
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    purge.epilog = (
        "Needs an API key with the admin scope in ENGRAM_API_KEY "
        "(engram keys create --namespace N --agent A --scopes read,write,admin)."
    )
    purge.set_defaults(func=_purge, build=_purge_call, id_fields=("id",))


def _purge(args: argparse.Namespace, settings: Settings) -> int:
    """`engram admin purge`: the whole id found, then asks first (unless --yes), then sends the purge."""
    from engram.cli.shortids import expand_ids

    if (code := expand_ids(args, node_url(args.url, settings), api_key=settings.api_key)) != EXIT_OK:
        return code
    if not args.yes and not _ask(f"Purge memory {args.id} for good? "):
        print("engram: not purged.", file=sys.stderr)
        return EXIT_USAGE
    return call_node(args, settings)


def _ask(question: str) -> bool:
    """A yes from the person at the terminal; refuses without asking when there is none."""
    if not sys.stdin.isatty():
        print("engram: purge asks for confirmation and no terminal is attached; pass --yes.", file=sys.stderr)
        return False
    try:
        reply = input(f"{question}Every version is erased from the log and the index; this cannot be undone. [y/N] ")
    except EOFError:
        return False
    return reply.strip().lower() in ("y", "yes")


# --- the request of each command ----------------------------------------------------------------------------


def _memory(args: argparse.Namespace) -> str:
    return f"/v1/memories/{quote(args.id, safe='')}"


def _update(args: argparse.Namespace) -> Call:
    body = given_fields(args, "content")
    if not body:
        raise UsageError(
            "nothing to change: pass at least one of --content, --summary, --tag, --topic, --type, "
            "--importance, --team, --project, --metadata, --expires."
        )
    return Call("PATCH", _memory(args), render_update, body=_versioned(body, args))


def _delete(args: argparse.Namespace) -> Call:
    return Call("DELETE", _memory(args), render_delete, params=_versioned({}, args))


def _supersede(args: argparse.Namespace) -> Call:
    body = given_fields(args, "content") if args.content is not None else {"new_id": args.new_id}
    if args.new_id is not None and len(given_fields(args)) > 0:
        raise UsageError("--new-id takes no other fields (the replacing memory exists already); drop them.")
    return Call("POST", f"{_memory(args)}:supersede", render_supersede, body=_versioned(body, args))


def _unsupersede(args: argparse.Namespace) -> Call:
    return Call("POST", f"{_memory(args)}:unsupersede", render_unsupersede, body=_versioned({}, args))


def _history(args: argparse.Namespace) -> Call:
    return Call("GET", f"{_memory(args)}/history", render_history)


def _at(args: argparse.Namespace) -> Call:
    return Call("GET", f"{_memory(args)}/at", render_memory, params={"time": args.time})


def _stats(args: argparse.Namespace) -> Call:
    return Call("GET", "/v1/stats", render_stats)


def _purge_call(args: argparse.Namespace) -> Call:
    return Call("DELETE", _memory(args), render_delete, params={"purge": "true"}, hint_403=_ADMIN_HINT)


def _versioned(values: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    if args.expected_version is not None:
        values["expected_version"] = args.expected_version
    return values


# --- rendering --------------------------------------------------------------------------------------------


def render_update(answer: dict[str, Any]) -> str:
    return f"Updated {answer['id']}: now version {answer['version']} (log seq {answer['seq']})." + _redacted(answer)


def render_delete(answer: dict[str, Any]) -> str:
    if answer.get("purged"):
        return f"Purged {answer['id']}: {answer.get('erased', 0)} log entries erased for good."
    version = (answer.get("memory") or {}).get("version", "?")
    return (
        f"Archived {answer['id']} (version {version}): hidden from search and lists, kept in its history "
        f"(engram history {answer['id']}). `engram admin purge {answer['id']}` erases it for good (admin key)."
    )


def render_supersede(answer: dict[str, Any]) -> str:
    old = answer["superseded"]["id"]
    return f"Superseded {old} by {answer['id']} (version {answer['version']}, log seq {answer['seq']})." + _redacted(
        answer
    )


def render_unsupersede(answer: dict[str, Any]) -> str:
    replacement = answer.get("replacement") or {}
    former = f"; {replacement['id']} no longer supersedes it" if replacement.get("id") else ""
    return f"Restored {answer['id']}: active again at version {answer['version']} (log seq {answer['seq']}){former}."


def render_history(answer: dict[str, Any]) -> str:
    versions = answer.get("versions") or []
    lines = [f"Memory {answer['memory_id']}: {len(versions)} version{'s' if len(versions) != 1 else ''}, oldest first"]
    for v in versions:
        event = str(v.get("event") or "").removeprefix("memory_") or "changed"
        who = v.get("agent_id") or "?"
        via = f" via {v['source']}" if v.get("source") else ""
        lines.append(f"  v{v['version']}  {v.get('updated_at') or '?'}  {event} by {who}{via}  [{v.get('status')}]")
        lines.append(f"      {preview(v.get('content', ''))}")
    return "\n".join(lines)


def render_memory(memory: dict[str, Any]) -> str:
    status = memory.get("status", "active")
    if memory.get("superseded_by"):
        status += f" by {memory['superseded_by']}"
    lines = [
        f"{memory['id']}  version {memory.get('version')}  {status}  owner {memory.get('owner_agent')}",
        f"  {memory.get('memory_type', 'general')} · updated {memory.get('updated_at') or memory.get('created_at')}",
    ]
    extras = [f"{name} {', '.join(memory[name])}" for name in ("tags", "topics") if memory.get(name)]
    extras += [f"expires {memory['expires_at']}"] if memory.get("expires_at") else []
    if extras:
        lines.append("  " + " · ".join(extras))
    lines.append(f"  {memory.get('content', '')}")
    return "\n".join(lines)


def render_stats(stats: dict[str, Any]) -> str:
    active = stats["memories"]
    lines = [
        f"Namespace {stats['namespace']}: {plural.memories(active, 'active')}, "
        f"{stats['total']:,} in all (index at log seq {stats['applied_seq']:,} of {stats['log_last_seq']:,})"
    ]
    for label, key in (("status", "by_status"), ("agent", "by_agent"), ("type", "by_type"), ("team", "by_team")):
        counts = sorted((stats.get(key) or {}).items(), key=lambda item: (-item[1], item[0]))
        shown = " · ".join(f"{name} {count:,}" for name, count in counts) or "none"
        lines.append(f"  by {label:<8}{shown}")
    return "\n".join(lines)


def _redacted(answer: dict[str, Any]) -> str:
    redactions = answer.get("redactions") or []
    if not redactions:
        return ""
    return " Redacted before storing: " + ", ".join(f"{r['kind']} ({r['count']})" for r in redactions) + "."
