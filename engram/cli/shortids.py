"""Short memory ids on the command line: the 8 characters every table shows (an id's last ones), or any other unique
end or start of an id, made whole before the command is sent. A command opts in by naming its id arguments
(``set_defaults(id_fields=("id",))``)."""

from __future__ import annotations

import sys

from engram.cli.common import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, Call, fetch

# typing and engram.config stay out of a command's start (PEP 563 annotations, for mypy), and so do argparse and re
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import IO, Any

MIN_CHARS = 4
PAGE = 100  # memories per list request (the API's most)
MAX_SCANNED = 20_000  # a short id is looked up among this many memories at most; past that, the whole id is asked for
_HEX = frozenset("0123456789abcdef-")


def expand_ids(args: argparse.Namespace, base_url: str, *, api_key: str | None, err: IO[str] | None = None) -> int:
    """Replaces each short id of the command's id arguments by the whole id; EXIT_OK, or the exit code after saying
    why not (none matches: 1; several match, or too many memories to look through: 2)."""
    err = err or sys.stderr
    for name in getattr(args, "id_fields", ()):
        value = getattr(args, name, None)
        short = _short(value) if isinstance(value, str) else None
        if short is None:
            continue
        code, whole = _lookup(short, base_url, api_key=api_key, agent=args.agent, err=err)
        if code != EXIT_OK:
            return code
        setattr(args, name, whole)
    return EXIT_OK


def _short(value: str) -> str | None:
    """The part of an id given (hex digits, maybe dashes; the "…" a table puts before it dropped), or None for a whole
    id or anything else, which is sent as given."""
    text = value.strip().lower().removeprefix("…").removeprefix("...")
    return text if MIN_CHARS <= len(text) < 36 and set(text) <= _HEX else None


def _lookup(short: str, base_url: str, *, api_key: str | None, agent: str | None, err: IO[str]) -> tuple[int, str]:
    found: list[str] = []
    token, scanned = None, 0
    while True:
        params: dict[str, Any] = {"limit": PAGE, "include_archived": "true"}
        if token:
            params["page_token"] = token
        code, page = fetch(Call("GET", "/v1/memories", str, params=params), base_url, api_key=api_key, agent=agent,
                           err=err)  # fmt: skip
        if code != EXIT_OK:
            return code, ""
        memories = page.get("memories") or []
        scanned += len(memories)
        found += [m["id"] for m in memories if m["id"].endswith(short) or m["id"].startswith(short)]
        token = page.get("next_page_token")
        if not token:
            break
        if scanned >= MAX_SCANNED:
            print(f"engram: looked for the id {short!r} among the newest {scanned} memories and stopped there: "
                  "give the whole id (`engram list --full-ids` or `engram search QUERY --full-ids` show it).",
                  file=err)  # fmt: skip
            return EXIT_USAGE, ""
    if len(found) == 1:
        return EXIT_OK, found[0]
    if not found:
        print(f"engram: no memory's id ends (or begins) with {short!r} among the {scanned} of this namespace "
              "(archived ones included). `engram list --full-ids` shows whole ids.", file=err)  # fmt: skip
        return EXIT_REFUSED, ""
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    print(f"engram: {short!r} is part of {len(found)} memories' ids ({shown}); give more of its characters, or the "
          "whole id.", file=err)  # fmt: skip
    return EXIT_USAGE, ""
