"""The memory model's words (types, statuses, ...) and its RFC 3339 time helpers: what the `engram` commands need of
engram.model, in a module that imports no dataclasses or typing so that a command starts fast (issue 34)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

MEMORY_TYPES = (
    "general", "fact", "preference", "decision", "finding", "hypothesis",
    "blocker", "action-item", "history", "handoff", "team-summary", "pack-file", "observation", "session-summary",
)  # fmt: skip
PACK_FILE = "pack-file"  # a part of an expert pack's file: found only by a search or listing scoped to its pack
# Written by Engram itself (consolidate_team, install_engram, agents' hooks: engram.hooks), never offered to a save:
# they can be searched and listed by type, and kept by export/import, but a saved memory is one of the others.
INTERNAL_TYPES = ("team-summary", PACK_FILE, "observation", "session-summary")
SAVABLE_TYPES = tuple(t for t in MEMORY_TYPES if t not in INTERNAL_TYPES)
PACK_KEY = "metadata.pack"  # the payload field naming the pack a memory belongs to
CONFIDENCES = ("stated", "inferred")
IMPORTANCES = ("low", "normal", "high", "critical")
SENSITIVITIES = ("normal", "private", "secret")
STATUSES = ("active", "archived", "expired", "superseded")
RELATION_KINDS = ("supersedes", "contradicts", "context-dependent", "merged-into")
COLD = "cold"  # the tier of idle memories of low importance
HANDOFF_STATUSES = ("pending", "accepted", "completed", "expired")

TIME_FIELDS = ("created_at", "updated_at", "valid_at", "invalid_at", "expires_at", "last_accessed_at")
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_LIST_LIMIT = 20
DEFAULT_LIST_ORDER = "created"
MAX_SEARCH_LIMIT = 100


def format_time(epoch: float | None) -> str | None:
    """Epoch seconds → RFC 3339 UTC with milliseconds, or None."""
    if epoch is None:
        return None
    from datetime import UTC, datetime  # here: ~2 ms of a command's start that only formats a --after time

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_RFC3339 = r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
_compiled: list[re.Pattern[str]] = []  # _RFC3339, compiled at the first time parsed: re costs a command ~6 ms


def _rfc3339() -> re.Pattern[str]:
    if not _compiled:
        import re

        _compiled.append(re.compile(_RFC3339))
    return _compiled[0]


_CANONICAL_LENGTH = len("2026-01-31T12:00:00.000Z")


def parse_time(value: str | float | int | None) -> float | None:
    """RFC 3339 text (or another ISO 8601 form, or epoch seconds) → epoch seconds; naive times are UTC.

    Every RFC 3339 time is accepted, including lowercase ``t``/``z``, a leap second (read as :59) and year 0000;
    other ISO 8601 forms (a date alone, no offset) go through ``datetime.fromisoformat``. Raises ValueError."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    if len(value) == _CANONICAL_LENGTH and value[10] == "T" and value[19] == "." and value[23] == "Z":
        # The form format_time writes (every stored time): read in C, ten times as fast as the pattern below, which
        # a search pays for each time of every candidate memory (docs/benchmarks.md, the search path).
        from datetime import datetime

        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass  # e.g. a leap second or year 0: the pattern below reads those
    if m := _rfc3339().fullmatch(value):
        year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
        if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month) and hour < 24 and minute < 60):
            raise ValueError(f"{value!r} is not a valid date and time")
        if second > 60 or (m[10] and (int(m[10]) > 23 or int(m[11]) > 59)):
            raise ValueError(f"{value!r} is not a valid date and time")
        offset = 0 if m[8] or not m[9] else (1 if m[9] == "+" else -1) * (int(m[10]) * 3600 + int(m[11]) * 60)
        seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + min(second, 59)
        return seconds + float(m[7] or 0) - offset
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm; any year, including 0)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468
