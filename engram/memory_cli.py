"""`engram update|delete|supersede|history|at|stats` and `engram admin purge`: the memory lifecycle from a shell,
through the node's REST API, for people (text) and scripts (--json)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from engram.model import IMPORTANCES, MEMORY_TYPES

if TYPE_CHECKING:
    import httpx

COMMANDS = frozenset({"update", "delete", "supersede", "history", "at", "stats", "admin"})
EXIT_OK = 0
EXIT_REFUSED = 1  # the node answered with an error
EXIT_USAGE = 2  # nothing was sent: no node answers, or the command is incomplete
DEFAULT_TIMEOUT = 30.0
_PREVIEW_CHARS = 200
_URL_HELP = "gateway URL (default: the running node of --home, else http://127.0.0.1:8765)"
_EXPIRES_HELP = "expiry: an RFC 3339 time, or a duration from now: 30d, 12h, 45m, 90s, 2w"
_VERSION_HELP = "change it only if it is still at version N (else nothing changes and the current version is named)"


def add_parsers(subparsers: Any) -> None:
    """Registers the lifecycle commands on the ``engram`` sub-command parsers (``args.command`` in COMMANDS)."""

    def fields(p: argparse.ArgumentParser) -> None:
        p.add_argument("--summary", help="one-line summary")
        p.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="a tag (repeat for several)")
        p.add_argument("--topic", action="append", dest="topics", metavar="TOPIC", help="a topic (repeatable)")
        p.add_argument("--type", dest="memory_type", choices=MEMORY_TYPES, help="kind of memory")
        p.add_argument("--importance", choices=IMPORTANCES)
        p.add_argument("--team")
        p.add_argument("--project")
        p.add_argument("--metadata", type=_json_object, help="metadata as a JSON object (replaces it whole)")
        p.add_argument("--expires", dest="expires_at", metavar="WHEN", help=_EXPIRES_HELP)

    update = common(sub(subparsers, "update", "change fields of one of your memories (a new version)"))
    update.add_argument("id")
    update.add_argument("--content", help="the new content")
    fields(update)
    update.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)
    update.epilog = "--tag and --topic replace the whole list. Only the agent that saved a memory may change it."

    delete = common(sub(subparsers, "delete", "archive a memory (hidden from search, kept in its history)"))
    delete.add_argument("id")
    delete.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)

    supersede = common(sub(subparsers, "supersede", "replace a memory with a new one (--content) or an existing one"))
    supersede.add_argument("id")
    replacement = supersede.add_mutually_exclusive_group(required=True)
    replacement.add_argument("--content", help="content of the new memory that replaces it")
    replacement.add_argument("--new-id", help="an existing memory that replaces it")
    fields(supersede)
    supersede.add_argument("--expected-version", type=int, metavar="N", help=_VERSION_HELP)

    history = common(sub(subparsers, "history", "every version of a memory, oldest first"))
    history.add_argument("id")

    at = common(sub(subparsers, "at", "a memory as it was at a point in time"))
    at.add_argument("id")
    at.add_argument("time", help="an RFC 3339 time, e.g. 2026-01-31T12:00:00Z")

    common(sub(subparsers, "stats", "counts of your namespace's memories by agent, type, status and team"))

    admin = sub(subparsers, "admin", "administrative acts (need an API key with the admin scope)")
    admin_sub = admin.add_subparsers(dest="admin_command", required=True)
    purge = common(sub(admin_sub, "purge", "erase a memory and every version of it for good (admin key)"))
    purge.add_argument("id")
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    purge.epilog = (
        "Needs an API key with the admin scope in ENGRAM_API_KEY "
        "(engram keys create --namespace N --agent A --scopes read,write,admin)."
    )


def common(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of every command that talks to the node: where it is, who acts, how to print."""
    p.add_argument("--home", help="data dir (ENGRAM_HOME, default ~/.engram)")
    p.add_argument("--url", help=_URL_HELP)
    p.add_argument(
        "--agent", help="act as this agent (X-Engram-Agent-ID) with a shared key; a key made with --agent is its agent"
    )
    p.add_argument("--json", action="store_true", help="print the node's answer as JSON (for scripts)")
    return p


def sub(subparsers: Any, name: str, text: str) -> argparse.ArgumentParser:
    """A sub-command parser whose description is its help, capitalised."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=text, description=text[:1].upper() + text[1:])
    return parser


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from e
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. {"ticket": "ENG-12"}')
    return value


@dataclass(frozen=True, slots=True)
class Call:
    """One REST request and how to show its answer."""

    method: str
    path: str
    render: Callable[[dict[str, Any]], str]
    params: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    hint_403: str = ""  # added to a 403's detail


class UsageError(Exception):
    """The command cannot be sent as given; the message says what to add."""


def run(
    args: argparse.Namespace,
    base_url: str,
    *,
    api_key: str | None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    confirm: Callable[[str], bool] | None = None,
) -> int:
    """Runs one lifecycle command against the node at base_url; exit 0 done, 1 refused, 2 not sent.

    ``out`` and ``err`` default to the streams of the moment (not of import time); ``confirm`` asks before a
    purge (default: the person at the terminal)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        call = build_call(args)
    except UsageError as e:
        print(f"engram: {e}", file=err)
        return EXIT_USAGE
    if args.command == "admin" and not args.yes and not (confirm or _ask)(f"Purge memory {args.id} for good? "):
        print("engram: not purged.", file=err)
        return EXIT_USAGE
    return send(call, base_url, api_key=api_key, agent=args.agent, as_json=args.json, out=out, err=err)


def send(
    call: Call, base_url: str, *, api_key: str | None, agent: str | None, as_json: bool, out: IO[str], err: IO[str]
) -> int:
    """Sends one request to the node and prints its answer (rendered, or as JSON); exit 0, 1 refused, 2 not sent."""
    import httpx  # here, not at the top: every `engram` command builds the parser that imports this module

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if agent:
        headers["X-Engram-Agent-ID"] = agent
    try:
        with httpx.Client(base_url=base_url, headers=headers, timeout=DEFAULT_TIMEOUT) as client:
            response = client.request(call.method, call.path, params=call.params, json=call.body)
    except httpx.HTTPError as e:
        print(
            f"engram: no Engram node answers at {base_url} ({type(e).__name__}). Start one with `engram serve`, "
            "or pass --url / --home.",
            file=err,
        )
        return EXIT_USAGE
    answer = _json(response)
    if response.status_code >= 400:
        print(f"engram: {_problem(response, answer, call)}", file=err)
        return EXIT_REFUSED
    print(json.dumps(answer, indent=2, ensure_ascii=False) if as_json else call.render(answer), file=out)
    return EXIT_OK


def build_call(args: argparse.Namespace) -> Call:
    """The request a parsed command sends; raises UsageError when it would change nothing."""
    memory = f"/v1/memories/{quote(args.id, safe='')}" if getattr(args, "id", None) else ""
    if args.command == "update":
        body = _fields(args, "content")
        if not body:
            raise UsageError(
                "nothing to change: pass at least one of --content, --summary, --tag, --topic, --type, "
                "--importance, --team, --project, --metadata, --expires."
            )
        return Call("PATCH", memory, render_update, body=_versioned(body, args))
    if args.command == "delete":
        return Call("DELETE", memory, render_delete, params=_versioned({}, args))
    if args.command == "supersede":
        body = _fields(args, "content") if args.content is not None else {"new_id": args.new_id}
        if args.new_id is not None and len(_fields(args)) > 0:
            raise UsageError("--new-id takes no other fields (the replacing memory exists already); drop them.")
        return Call("POST", f"{memory}:supersede", render_supersede, body=_versioned(body, args))
    if args.command == "history":
        return Call("GET", f"{memory}/history", render_history)
    if args.command == "at":
        return Call("GET", f"{memory}/at", render_memory, params={"time": args.time})
    if args.command == "stats":
        return Call("GET", "/v1/stats", render_stats)
    hint = "Set ENGRAM_API_KEY to a key with the admin scope."
    return Call("DELETE", memory, render_delete, params={"purge": "true"}, hint_403=hint)


_FIELDS = ("summary", "tags", "topics", "memory_type", "importance", "team", "project", "metadata", "expires_at")


def _fields(args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    return {name: getattr(args, name) for name in (*extra, *_FIELDS) if getattr(args, name) is not None}


def _versioned(values: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    if args.expected_version is not None:
        values["expected_version"] = args.expected_version
    return values


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


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _problem(response: httpx.Response, body: dict[str, Any], call: Call) -> str:
    """One line: the node's problem detail (it says what to do next), plus what the CLI knows to add."""
    detail = str(body.get("detail") or body.get("title") or response.text[:200] or response.reason_phrase)
    if response.status_code == 401:
        detail += " Set ENGRAM_API_KEY to the key."
    if response.status_code == 403 and call.hint_403 and "admin" in detail:
        detail = f"{detail} {call.hint_403}"
    if response.status_code == 403 and detail.startswith("Memory owned by"):
        detail += " From the CLI, act as the owner with --agent (or a key of that agent)."
    return f"{detail} (HTTP {response.status_code})"


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
        f"Namespace {stats['namespace']}: {active:,} active memor{'y' if active == 1 else 'ies'}, "
        f"{stats['total']:,} in all (index at log seq {stats['applied_seq']:,} of {stats['log_last_seq']:,})"
    ]
    for label, key in (("status", "by_status"), ("agent", "by_agent"), ("type", "by_type"), ("team", "by_team")):
        counts = sorted((stats.get(key) or {}).items(), key=lambda item: (-item[1], item[0]))
        shown = " · ".join(f"{name} {count:,}" for name, count in counts) or "none"
        lines.append(f"  by {label:<8}{shown}")
    return "\n".join(lines)


def preview(text: str) -> str:
    """The start of a text on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _redacted(answer: dict[str, Any]) -> str:
    redactions = answer.get("redactions") or []
    if not redactions:
        return ""
    return " Redacted before storing: " + ", ".join(f"{r['kind']} ({r['count']})" for r in redactions) + "."
