"""How a count reads in a message: "1 memory", "2 new memories", "1,204 lines"."""

from __future__ import annotations


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun that fits it: ``one`` for exactly 1, else ``many`` (default ``one`` + "s")."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def memories(n: int, kind: str = "") -> str:
    """'1 memory', '0 memories', '2,000 active memories' (with ``kind="active"``)."""
    words = f"{kind} " if kind else ""
    return counted(n, f"{words}memory", f"{words}memories")


def listed(items: list[int] | list[str], most: int = 10) -> str:
    """'1, 2, 3' or, past ``most`` items, '1, 2, ..., 10 and 989 more': a message never echoes a whole request."""
    shown = ", ".join(map(str, items[:most]))
    return shown if len(items) <= most else f"{shown} and {len(items) - most:,} more"
