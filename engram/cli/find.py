"""`engram save|search|list|get`: saving and finding memories from a shell, through the node's REST API, as tables
and blocks for people or the API's JSON unchanged for scripts (--json). The filters are those of the search_memory
and list_memories tools (FILTERS: the names of the REST Filters)."""

from __future__ import annotations

import sys
import time

from engram import plainjson
from engram.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    ID_HELP,
    Call,
    UsageError,
    bad_value,
    boolean_optional,
    build_call,
    call_node,
    fetch,
    given_fields,
    memory_fields,
    node_options,
    node_url,
    preview,
    run_call,
    sub,
    terminal_columns,
)
from engram.cli.urls import quote
from engram.vocab import (
    DEFAULT_SEARCH_LIMIT,
    MAX_SEARCH_LIMIT,
    MEMORY_TYPES,
    SENSITIVITIES,
    STATUSES,
    format_time,
    parse_time,
)

# typing and engram.config stay out of a command's start (PEP 563 annotations, for mypy), and so do argparse, re,
# json, functools, collections and urllib.parse (engram.cli.quick parses these commands, engram.plainjson and
# engram.cli.urls stand for json and urllib.parse).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import IO, Any

    from engram.config import Settings

# The names of the REST Filters (services/gateway/schemas/requests.py), each set by one option below; a unit test
# fails when the two drift.
FILTERS = (
    "tags", "topics", "memory_type", "owner_agent", "project", "team", "conversation_id", "created_after",
    "created_before", "status", "include_archived", "pack",
)  # fmt: skip
# The orders of `engram list` (the REST list's order; a unit test compares them).
LIST_ORDERS = ("created", "updated")
# A duration back from now, for the time options: the units of expires_at's durations (a unit test compares them).
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdef")
_TIME_HELP = "an RFC 3339 time (2026-01-31T12:00:00Z), a date (2026-01-31) or a duration ago (7d, 12h, 30m, 2w)"
DEFAULT_COLUMNS = 120  # the table width when the output is no terminal (a pipe, a file)
_MIN_CONTENT = 24  # a table's content column is never narrower, however narrow the terminal
_MAX_OWNER = 24
_SHORT_ID = 8  # the last characters of an id a table shows: a UUIDv7 begins with its creation time (ms)

_LIST_EPILOG = (
    "Newest first by creation (--order updated: by last change). Without --all one page of --limit memories "
    "(default 20); the last line says how to see more. --all reads every page (of --limit, default 100). The ID "
    "column shows an id's last 8 characters, which engram get, update and delete take too; --full-ids shows whole ids."
)
_SEARCH_EPILOG = (
    "Hybrid search: meaning (dense vectors) and words (BM25), fused, reranked when a cross-encoder is installed. "
    "Repeated --tag: all of them; repeated --topic, --type, --status: any of them. The ID column shows an id's "
    "last 8 characters, which engram get, update and delete take too; --full-ids shows whole ids."
)
_SAVE_EPILOG = (
    "Secrets (API keys, tokens, private keys, passwords in URLs) are redacted before anything is stored; the "
    "answer says what was. Saved as the agent of the key (or --agent with a shared key)."
)


def register(subparsers: Any) -> None:
    """Registers save, search, list and get on the ``engram`` sub-command parsers."""
    save = node_options(sub(subparsers, "save", "save a memory: CONTENT, or stdin with - or no CONTENT"))
    save.add_argument("content", nargs="?", default="-", metavar="CONTENT", help="the memory; - or none reads stdin")
    memory_fields(save)
    save.add_argument("--sensitivity", choices=SENSITIVITIES, help="secret never leaves this device (default normal)")
    save.add_argument("--conversation", dest="conversation_id", metavar="ID", help="the conversation it came from")
    save.epilog = _SAVE_EPILOG
    save.set_defaults(func=call_node, build=_save)

    search = node_options(sub(subparsers, "search", "find memories by meaning and by words, best first"))
    search.add_argument("query", help="what to look for, in words or an identifier")
    search.add_argument("--limit", type=_count, metavar="N", help=f"hits (1-100, default {DEFAULT_SEARCH_LIMIT})")
    filter_options(search)
    search.add_argument("--as-of", type=moment, metavar="TIME", help=f"search them as they were then: {_TIME_HELP}")
    search.add_argument("--explain", action="store_true", help="each ranking stage's rank and score under every hit")
    search.add_argument("--rerank", action=boolean_optional, help="the cross-encoder on or off (default: the node's)")
    search.add_argument(
        "--min-relevance", type=_relevance, metavar="X",
        help="leave out hits less close in meaning than X (0-1; default the node's, 0: keep everything)",
    )  # fmt: skip
    _full_ids(search)
    search.epilog = _SEARCH_EPILOG
    search.set_defaults(func=call_node, build=_search)

    listing = node_options(sub(subparsers, "list", "your namespace's memories, newest first"))
    listing.add_argument("--limit", type=_count, metavar="N", help="memories per page (1-100)")
    listing.add_argument(
        "--order", choices=LIST_ORDERS, help="newest first by creation (created, the default) or last change (updated)"
    )
    filter_options(listing)
    listing.add_argument("--all", action="store_true", help="every page, not only the first")
    _full_ids(listing)
    listing.epilog = _LIST_EPILOG
    listing.set_defaults(func=_list, build=_list_call)

    get = node_options(sub(subparsers, "get", "one memory with every field it has"))
    get.add_argument("id", help=ID_HELP)
    get.add_argument("--history", action="store_true", help="also every version, oldest first")
    get.set_defaults(func=_get, build=_get_call, id_fields=("id",))


def filter_options(parser: argparse.ArgumentParser) -> None:
    """The filters of search and list, one option for each name in FILTERS."""
    group = parser.add_argument_group("filters")
    group.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="has this tag (repeat: all of them)")
    group.add_argument("--topic", action="append", dest="topics", metavar="TOPIC", help="on this topic (repeat: any)")
    group.add_argument(
        "--type", action="append", dest="memory_type", choices=MEMORY_TYPES, metavar="TYPE",
        help=f"of this type (repeat: any): {', '.join(MEMORY_TYPES)}",
    )  # fmt: skip
    group.add_argument("--owner", dest="owner_agent", metavar="AGENT", help="saved by this agent")
    group.add_argument("--project", help="of this project")
    group.add_argument("--team", help="of this team")
    group.add_argument("--conversation", dest="conversation_id", metavar="ID", help="from this conversation")
    group.add_argument("--after", dest="created_after", type=moment, metavar="TIME", help=f"created after {_TIME_HELP}")
    group.add_argument("--before", dest="created_before", type=moment, metavar="TIME", help="created before TIME")
    group.add_argument(
        "--status", action="append", choices=STATUSES, metavar="STATUS",
        help=f"in this status (repeat: any): {', '.join(STATUSES)}; default active",
    )  # fmt: skip
    group.add_argument("--include-archived", action="store_true", help="archived (deleted) memories too")
    group.add_argument("--pack", metavar="NAME", help="the memories of this expert pack")


def _full_ids(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full-ids", action="store_true", help="whole ids in the ID column (to pass to engram get)")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError as e:
        raise bad_value(f"{text!r} is not a whole number") from e
    if not 1 <= value <= MAX_SEARCH_LIMIT:
        raise bad_value(f"{value} is not between 1 and {MAX_SEARCH_LIMIT}")
    return value


def moment(text: str, *, now: float | None = None) -> str:
    """A time option as RFC 3339: the time or date given, or a duration back from now (7d: seven days ago)."""
    if (seconds := _duration(text.strip())) is not None:
        return format_time((time.time() if now is None else now) - seconds) or text
    try:
        epoch = parse_time(text.strip())
    except ValueError:
        epoch = None
    if epoch is None:
        raise bad_value(f"{text!r} is not a time; give {_TIME_HELP}")
    return format_time(epoch) or text


def _duration(text: str) -> int | None:
    """The seconds of a duration ([1-9][0-9]{0,5} and a unit of DURATION_UNITS: 7d), or None for any other text."""
    number, unit = text[:-1], text[-1:]
    if not 1 <= len(number) <= 6 or number[0] == "0" or not set(number) <= _DIGITS or unit not in DURATION_UNITS:
        return None
    return int(number) * DURATION_UNITS[unit]


# --- the request of each command ----------------------------------------------------------------------------


def filters(args: argparse.Namespace) -> dict[str, Any]:
    """The filters the command line gives, by their REST names."""
    return {name: value for name in FILTERS if (value := getattr(args, name)) not in (None, False)}


def _save(args: argparse.Namespace) -> Call:
    content = _read_stdin(sys.stdin) if args.content == "-" else args.content
    if not content.strip():
        raise UsageError("nothing to save: CONTENT is empty. Give it as an argument, or pipe it in (`-` reads stdin).")
    body = {**given_fields(args, "sensitivity", "conversation_id"), "content": content}
    return Call("POST", "/v1/memories", render_saved, body=body)


def _read_stdin(stdin: IO[str]) -> str:
    if stdin.isatty():
        print("engram: type the memory, then Ctrl-D on a line of its own.", file=sys.stderr)
    return stdin.read().rstrip("\n")


def _relevance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise bad_value(f"{text!r} is not a number; give 0 to 1, e.g. 0.3") from None
    if not 0.0 <= value <= 1.0:
        raise bad_value(f"{text} is out of range; give 0 (keep everything) to 1")
    return value


def _search(args: argparse.Namespace) -> Call:
    body: dict[str, Any] = {"query": args.query, "filters": filters(args)}
    if args.limit is not None:
        body["limit"] = args.limit
    if args.as_of is not None:
        body["as_of"] = args.as_of
    if args.explain:
        body["explain"] = True
    if args.rerank is not None:
        body["rerank"] = args.rerank
    if args.min_relevance is not None:
        body["min_relevance"] = args.min_relevance
    width, full_ids, query, narrowed = columns(), args.full_ids, args.query, bool(body["filters"])

    def render(answer: dict[str, Any]) -> str:
        return render_search(answer, width=width, full_ids=full_ids, query=query, narrowed=narrowed)

    return Call("POST", "/v1/memories:search", render, body=body)


def _list_call(args: argparse.Namespace, page_token: str | None = None) -> Call:
    given = filters(args)
    params: dict[str, Any] = {name: "true" if value is True else value for name, value in given.items()}
    if args.limit is not None or args.all:  # else the node's default page
        params["limit"] = args.limit or MAX_SEARCH_LIMIT
    if page_token:
        params["page_token"] = page_token
    if args.order:
        params["order"] = args.order
    width, full_ids, narrowed, updated = columns(), args.full_ids, bool(given), args.order == "updated"

    def render(answer: dict[str, Any]) -> str:
        return render_list(answer, width=width, full_ids=full_ids, narrowed=narrowed, updated=updated)

    return Call("GET", "/v1/memories", render, params=params)


def _get_call(args: argparse.Namespace) -> Call:
    if not _whole_id(args.id):
        raise UsageError(
            f"{args.id!r} is not a memory id: give the whole id (a UUID) or at least its last 4 characters (tables "
            f"show the last {_SHORT_ID}); `engram list --full-ids` or `engram search QUERY --full-ids` show whole ones."
        )
    return Call("GET", _memory(args.id), render_get)


def _memory(memory_id: str) -> str:
    return f"/v1/memories/{quote(memory_id, safe='')}"


# --- commands of more than one request ----------------------------------------------------------------------


def _list(args: argparse.Namespace, settings: Settings) -> int:
    if not args.all:
        return call_node(args, settings)
    return list_all(args, node_url(args.url, settings), api_key=settings.api_key)


def list_all(
    args: argparse.Namespace, base_url: str, *, api_key: str | None, out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:  # fmt: skip
    """`engram list --all`: every page, then one table (or one JSON document, as one page of everything)."""
    out, err = out or sys.stdout, err or sys.stderr
    memories: list[dict[str, Any]] = []
    token: str | None = None
    seen: set[str] = set()
    while True:
        call = _list_call(args, token)
        code, page = fetch(call, base_url, api_key=api_key, agent=args.agent, err=err)
        if code != EXIT_OK:
            return code
        memories += page.get("memories") or []
        token = page.get("next_page_token") or None
        if token is None or token in seen:
            break
        seen.add(token)
    answer = {"memories": memories, "next_page_token": None}
    print(plainjson.dumps(answer, indent=2, ensure_ascii=False) if args.json else call.render(answer), file=out)
    return EXIT_OK


def _get(args: argparse.Namespace, settings: Settings) -> int:
    history = args.history and not args.json  # the memory's JSON carries its earlier versions already
    return get_memory(args, node_url(args.url, settings), api_key=settings.api_key, history=history)


def get_memory(
    args: argparse.Namespace, base_url: str, *, api_key: str | None, history: bool = False,
    out: IO[str] | None = None, err: IO[str] | None = None,
) -> int:  # fmt: skip
    """`engram get`: the memory (with --history, then every version as `engram history` shows them)."""
    if not history:
        return run_call(args, base_url, api_key=api_key, out=out, err=err)
    from engram.cli.memories import render_history  # here: the group of the lifecycle commands, for --history only
    from engram.cli.shortids import expand_ids  # here: it imports engram.cli.common, and only ids need it

    out, err = out or sys.stdout, err or sys.stderr
    if (code := expand_ids(args, base_url, api_key=api_key, err=err)) != EXIT_OK:
        return code
    try:
        call = build_call(args)
    except UsageError as e:
        print(f"engram: {e}", file=err)
        return EXIT_USAGE
    code, memory = fetch(call, base_url, api_key=api_key, agent=args.agent, err=err)
    if code != EXIT_OK:
        return code
    versions = Call("GET", f"{_memory(args.id)}/history", render_history)
    code, answer = fetch(versions, base_url, api_key=api_key, agent=args.agent, err=err)
    if code != EXIT_OK:
        return code
    print(f"{render_get(memory, hint=False)}\n\n{render_history(answer)}", file=out)
    return EXIT_OK


def _whole_id(text: str) -> bool:
    """engram.ids.is_uuid of the lowercased text: a canonical UUID (without engram.ids, which imports the kernel's
    errors and with them dataclasses, typing and engram.model: ~20 ms of `engram get`; nor re)."""
    uuid = text.strip().lower()
    dashes = (8, 13, 18, 23)
    return (
        len(uuid) == 36
        and all(uuid[i] == "-" for i in dashes)
        and set(uuid[:8] + uuid[9:13] + uuid[14:18] + uuid[19:23] + uuid[24:]) <= _HEX
    )


# --- rendering --------------------------------------------------------------------------------------------


def columns() -> int:
    """The terminal's width, or DEFAULT_COLUMNS when the output goes elsewhere."""
    return terminal_columns(DEFAULT_COLUMNS)


def render_saved(answer: dict[str, Any]) -> str:
    if answer.get("duplicate_of"):  # nothing was written: the caller's active memory says the same
        lines = [f"Already saved as {answer['duplicate_of']} (version {answer['version']}, seq {answer['seq']})"]
    else:
        lines = [f"Saved {answer['id']} (version {answer['version']}, seq {answer['seq']})"]
    redactions = answer.get("redactions") or []
    if redactions:
        lines.append("redacted: " + ", ".join(f"{r['count']} {r['kind']}" for r in redactions))
    for warning in answer.get("warnings") or []:
        lines.append(f"note: {warning.get('message', '')}")
        for similar in warning.get("memories") or []:
            lines.append(f"  {similar['id']}  {similar.get('owner_agent', '')}  {preview(similar.get('preview', ''))}")
    return "\n".join(lines)


def render_search(
    answer: dict[str, Any], *, width: int, full_ids: bool = False, query: str = "", narrowed: bool = False
) -> str:
    hits = answer.get("hits") or []
    if not hits:
        return _no_hits(query, narrowed)
    rows = [
        [str(rank), f"{hit.get('score', 0.0):.3f}", *_columns(hit["memory"], "updated_at", full_ids)]
        for rank, hit in enumerate(hits, 1)
    ]
    lines = table(("#", "SCORE", "ID", "TYPE", "OWNER", "UPDATED", "CONTENT"), rows, width)
    if not any(hit.get("explain") for hit in hits):
        return "\n".join(lines)
    shown = [lines[0]]
    for line, hit in zip(lines[1:], hits, strict=True):
        shown += [line, f"     {_stages(hit.get('explain') or {})}"]
    reranked = "yes" if answer.get("reranked") else "no"
    note = f" ({answer['rerank_note']})" if answer.get("rerank_note") else ""
    how = [answer["explain_note"]] if answer.get("explain_note") else []
    return "\n".join([*shown, *how, f"reranked: {reranked}{note}; index at log seq {answer.get('applied_seq', '?')}"])


def _stages(explain: dict[str, Any]) -> str:
    """Each stage's rank and score; rank 0 is a stage that did not rank the hit."""
    parts = []
    for stage, result in explain.items():
        rank = int(result.get("rank", 0))
        parts.append(f"{stage} #{rank} {float(result.get('score', 0.0)):.3f}" if rank else f"{stage} -")
    return " · ".join(parts)


def _no_hits(query: str, narrowed: bool) -> str:
    tries = ["other or fewer words", "--min-relevance 0 for weaker matches"]
    if narrowed:
        tries.append("fewer filters")
    tries += ["--include-archived or --status to look beyond active memories", "`engram list` for the newest"]
    return f"No memories match {query!r}. Try " + ", ".join(tries[:-1]) + f", or {tries[-1]}."


def render_list(
    answer: dict[str, Any], *, width: int, full_ids: bool = False, narrowed: bool = False, updated: bool = False
) -> str:
    """The memories as a table; ``updated``: listed by last change, so the time column is that change's."""
    memories = answer.get("memories") or []
    if not memories:
        if narrowed:
            return "No memories match these filters. Try fewer, or --include-archived / --status."
        return 'No memories yet. Save one: engram save "what to remember" (or an agent does, with save_memory).'
    when = "updated_at" if updated else "created_at"
    rows = [_columns(memory, when, full_ids) for memory in memories]
    lines = table(("ID", "TYPE", "OWNER", "UPDATED" if updated else "CREATED", "CONTENT"), rows, width)
    if answer.get("next_page_token"):
        count = len(memories)
        lines.append(
            f"(the {count} newest; more: --all for every one, or --limit N for up to {MAX_SEARCH_LIMIT} a page)"
        )
    return "\n".join(lines)


def _columns(memory: dict[str, Any], when: str, full_ids: bool) -> list[str]:
    """A memory's ID, TYPE, OWNER, time and CONTENT cells."""
    memory_id = str(memory.get("id", ""))
    shown_id = memory_id if full_ids or len(memory_id) <= _SHORT_ID else "…" + memory_id[-_SHORT_ID:]
    owner = str(memory.get("owner_agent", ""))
    return [
        shown_id,
        str(memory.get("memory_type", "")),
        fit(owner, _MAX_OWNER),
        _minute(memory.get(when) or memory.get("created_at")),
        preview(str(memory.get("content", ""))),
    ]


def _minute(stamp: str | None) -> str:
    """An RFC 3339 UTC time to the minute: 2026-01-31 12:00Z."""
    if not stamp:
        return "-"
    return f"{stamp[:10]} {stamp[11:16]}Z" if len(stamp) >= 16 else stamp


def table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Rows in columns two spaces apart, each as wide as its widest cell; the last cell fits what is left of width."""
    widths = [max(display_width(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    room = max(_MIN_CONTENT, width - sum(widths) - 2 * len(widths))
    lines = []
    for row in (header, *rows):
        cells = [cell + " " * (w - display_width(cell)) for cell, w in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, fit(row[-1], room)]).rstrip())
    return lines


def display_width(text: str) -> int:
    """Columns text takes on a terminal: wide (East Asian) characters two, combining marks none."""
    return len(text) if text.isascii() else sum(_char_width(ch) for ch in text)


def _char_width(ch: str) -> int:
    if ch.isascii() or ch == "…":  # neither wide nor combining (unicodedata is not imported for a table's ids)
        return 1
    import unicodedata

    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def fit(text: str, width: int) -> str:
    """text cut to width columns, ending in … when cut."""
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for ch in text:
        if used + _char_width(ch) > width - 1:
            break
        kept.append(ch)
        used += _char_width(ch)
    return "".join(kept).rstrip() + "…"


# The fields shown as blocks after the others, and those a block leaves out (id heads it; history has --history).
_BLOCKS = ("content", "context")
_LEFT_OUT = ("id", "history")


def render_get(memory: dict[str, Any], *, hint: bool = True) -> str:
    """Every field the memory has set, one per line (content and context as blocks at the end)."""
    shown = {name: _value(name, value) for name, value in memory.items() if name not in (*_BLOCKS, *_LEFT_OUT)}
    rows = [(name, value) for name, value in shown.items() if value]
    width = max((len(name) for name, _ in rows), default=0)
    lines = [f"Memory {memory.get('id')}"] + [f"  {name.ljust(width)}  {value}" for name, value in rows]
    for name in _BLOCKS:
        if memory.get(name):
            lines += [f"  {name}:", *(f"    {line}" for line in str(memory[name]).splitlines())]
    earlier = len(memory.get("history") or [])
    if hint and earlier:
        versions = f"{earlier} earlier version{'s' if earlier != 1 else ''}"
        lines.append(f"  ({versions}: engram get {memory.get('id')} --history)")
    return "\n".join(lines)


def _value(name: str, value: Any) -> str:
    """A field's value on one line; "" when it is not set. Metadata is JSON, as saved."""
    if value is None or value is False or value == 0 or value in ("", [], {}):
        return ""
    if name == "metadata" or (isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values())):
        return plainjson.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):  # e.g. origin, handoff: its set parts
        return " · ".join(f"{key} {text}" for key, item in value.items() if (text := _value(key, item)))
    if isinstance(value, list):  # tags, topics, questions; relations (objects)
        return ("; " if any(isinstance(item, dict) for item in value) else ", ").join(
            _value(name, item) for item in value
        )
    return " ".join(str(value).split())
