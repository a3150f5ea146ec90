"""What a memory is about (its subject), read from its words without an LLM, and whether two memories share one.

A subject is a thing and one of its attributes: a service's port, a tool choice of a repository, a person's
schedule, a setting. Two statements about one subject name the same thing (a name, an identifier: "tally-web",
"PgBouncer", "Leo") and say the same attribute in the same frame ("swims on Mondays" / "swimming moved to
Thursdays"), or the newer names what the older said ("moved from Jest to Vitest" beside "tests run on Jest"). Values
(ports, days, versions) and the words that say a change ("moved", "now", "back to") are not the subject: they are
what differs between its statements. Search ranks the newest statement of a subject first (services/search/
subjects.py); consolidation compares memories tied to one subject however differently they are worded
(services/consolidation/stance.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z0-9]+(?:['._/-][A-Za-z0-9]+)*")
_STOP = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "to", "of", "in", "on", "at", "for", "by",
    "with", "and", "or", "as", "it", "its", "this", "that", "these", "those", "their", "there", "they", "we", "our",
    "us", "user", "users", "has", "have", "had", "do", "does", "did", "so", "from", "into", "via", "any", "each",
    "every", "very", "really", "also", "just", "should", "would", "will", "can", "may", "must", "which", "who", "whom",
    "when", "than", "then", "what", "where", "here", "how", "why", "i", "my", "me", "you", "your", "he", "she", "his",
    "her", "him", "them", "all", "some", "more", "most", "not", "no", "never", "only", "still", "currently", "about",
    "after", "before", "over", "under", "up", "down", "out", "off", "one", "two", "get", "gets", "got", "keep", "keeps",
    "kept", "set", "use", "uses", "used", "using", "new", "again", "since", "until", "per", "like",
    "likes", "want", "wants", "prefer", "prefers", "preferred", "go", "goes", "going", "went", "make", "makes", "made",
    "run", "runs", "running", "ran", "stay", "stays", "stayed"
})  # fmt: skip
# Words that say the statement changed something: not part of what it is about.
_CHANGE = frozenset({
    "moved", "move", "moves", "switched", "switch", "switches", "replaced", "replace", "replaces", "replacing",
    "upgraded", "upgrade", "downgraded", "migrated", "migrate", "changed", "change", "changes", "raised", "lowered",
    "increased", "decreased", "reduced", "cut", "bumped", "relaxed", "tightened", "resized", "renamed", "retired",
    "dropped", "updated", "rotated", "became", "become", "becomes", "promoted", "reassigned", "transferred", "handed",
    "took", "taken", "returned", "returns", "reverted", "anymore", "longer", "instead", "now", "back"
})  # fmt: skip
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december",
)  # fmt: skip
# Months are a date's parts ("calibrated on 8 January" / "recalibrated 11 March"), not things; "may" is a stop word.
_MONTHS = tuple(m for m in MONTHS if m != "may") + tuple(m[:3] for m in MONTHS if m != "may") + ("sept",)
# A record's number: letters, then five digits or more (nct00403806, isrctn23885553, ord1234567). It names the
# record (a trial, an order) as db-main names a database (services/consolidation/stance.py reads it so).
RECORD = re.compile(r"[a-z]{2,}[0-9]{5,}")
# The first part of a hyphenated English word (on-call, bi-hourly, self-hosted, read-only): a word, not a name such
# as tally-web or db-main, whose parts are the project's own.
_COMPOUND_HEADS = frozenset({
    "on", "off", "in", "out", "up", "down", "over", "under", "by", "bi", "co", "re", "pre", "post", "non", "self",
    "semi", "multi", "anti", "well", "long", "short", "full", "half", "mid", "sub", "cross", "inter", "ex", "un",
    "read", "write", "high", "low", "all", "part", "one", "two", "three", "four", "single", "double", "first", "last",
    "end", "day", "week", "year", "time", "open", "close", "hands", "follow", "opt", "check", "sign", "log",
})  # fmt: skip
_VALUE_WORDS = frozenset(
    {*_DAYS, *(d + "s" for d in _DAYS), *_MONTHS, "daily", "weekly", "monthly", "nightly", "hourly", "morning",
     "mornings", "afternoon", "evening", "evenings", "night", "noon", "midnight", "am", "pm", "utc", "enabled",
     "disabled", "on", "true", "false", "percent", "gb", "mb", "kb", "tb", "ms", "seconds", "minutes", "hours", "days",
     "weeks"}
)  # fmt: skip
MIN_SHARED = 2  # words about the subject both statements have, at least
MIN_FRAME_SHARE = 0.6  # the share of the smaller set of such words both have, when they name a thing in common
MIN_FRAME_ALONE = 0.75  # ... when they name no thing in common: the same frame, mostly


@dataclass(frozen=True, slots=True)
class Subject:
    """A memory's words as subjects are compared: the things it names, its frame (the other content words, as
    stems), its values, and whether it states a change."""

    things: frozenset[str]  # names and identifiers, lowercase: tally-web, pgbouncer, leo, jest
    frame: frozenset[str]  # content stems that are neither values nor change words
    values: frozenset[str]  # numbers, versions, days, times, units
    changes: bool


@lru_cache(maxsize=16384)  # search reads the same few hundred memories again and again
def subject(text: str) -> Subject:
    """
    >>> s = subject("tally-web moved from npm to pnpm 9")
    >>> sorted(s.things), sorted(s.frame), sorted(s.values), s.changes
    (['tally-web'], ['npm', 'pnpm'], ['9'], True)
    """
    things: set[str] = set()
    frame: set[str] = set()
    values: set[str] = set()
    changes = False
    first = True
    for match in _WORD.finditer(text):
        token = match.group(0)
        word = token.lower().removesuffix("'s")
        starts = first or text[max(0, match.start() - 2) : match.start()].strip() in (".", ":", ";", "!", "?")
        first = False
        if word in _CHANGE:
            changes = True
            continue
        if _is_value(word):
            values.add(word)
            continue
        if word in _STOP or len(word) < 2:
            continue
        if _is_thing(token, starts):
            things.add(word)
        else:
            frame.add(_stem(word))
    return Subject(frozenset(things), frozenset(frame - {_stem(t) for t in things}), frozenset(values), changes)


def tie(older: str, newer: str) -> float:
    """How surely two memories speak about the same subject, 0..1 (0: not tied): most of the words they are about
    (things and frame) in common, and no thing on each side that the other does not name (two entities in one
    template: "Rotated the Zendesk API token" / "Rotated the Figma API token").

    >>> tie("design-system unit tests run on Jest", "design-system moved its unit tests from Jest to Vitest") > 0
    True
    >>> tie("PgBouncer for staging listens on 6432", "Staging PgBouncer moved to port 6543 after the rebuild") > 0
    True
    >>> tie("Storefront .nvmrc pins Node 18.19", "Storefront production URL is shop.acme.com")
    0.0
    >>> tie("Rotated the Zendesk API token", "Rotated the Figma API token")
    0.0
    """
    a, b = subject(older), subject(newer)
    about_a, about_b = a.things | a.frame, b.things | b.frame
    own_a = {t for t in a.things if not any(_same(t, w) for w in about_b)}
    own_b = {t for t in b.things if not any(_same(t, w) for w in about_a)}
    if own_a and own_b:
        return 0.0  # another entity on each side
    if not b.changes and ((own_a and _rest(about_b, about_a)) or (own_b and _rest(about_a, about_b))):
        return 0.0  # a thing on one side where the other says something else ("pgadmin on" / "Consul on")
    shared = _shared(about_a, about_b)
    smaller = min(len(about_a), len(about_b))
    if smaller == 0 or shared < min(MIN_SHARED, smaller) or (smaller == 1 and not (a.values and b.values)):
        return 0.0  # one word in common is a topic, unless both give it a value ("Planning is on Tuesdays at 10")
    share = shared / smaller
    named = any(any(_same(t, w) for w in about_b) for t in a.things)
    if share >= (MIN_FRAME_SHARE if named else MIN_FRAME_ALONE):
        return round(min(1.0, 0.4 + 0.6 * share), 3)
    return 0.0


def _rest(words: frozenset[str], other: frozenset[str]) -> bool:
    """Whether ``words`` has one that ``other`` does not (in any form)."""
    return any(not any(_same(w, o) for o in other) for w in words)


def _shared(a: frozenset[str], b: frozenset[str]) -> int:
    """How many words of the smaller set the other has (forms of one word count as one)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(any(_same(x, y) for y in large) for x in small)


def _share(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of the smaller set found in the other (forms of one word count as one)."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(any(_same(x, y) for y in large) for x in small) / len(small)


def _same(x: str, y: str) -> bool:
    """Two forms of one word ("swims" / "swimming"); identifiers only when equal ("crash" is not "crash-free")."""
    if x == y:
        return True
    if any(c in x or c in y for c in "-_./"):
        return False
    common = shared_prefix(x, y)
    return common >= 4 and common >= min(len(x), len(y)) - 2


def _is_value(word: str) -> bool:
    if word in _VALUE_WORDS:
        return True
    if any(c.isdigit() for c in word):
        return not (any(c.isalpha() for c in word) and any(c in word for c in "-_/@"))  # db-prod-1 is a thing
    return False


def _is_thing(token: str, starts: bool) -> bool:
    """A name (capitalized inside a sentence, or mixed case) or an identifier (db-main, checkout.events.v2); not a
    hyphenated English word (on-call, bi-hourly)."""
    if any(c in token for c in "-_/.") and any(c.isalpha() for c in token):
        head, dash, rest = token.partition("-")
        return not (dash and head.lower() in _COMPOUND_HEADS and rest.isalpha() and rest.islower())
    if token.isupper() and len(token) <= 4:
        return False  # API, UI, URL, CI: a kind of thing, not one
    if any(c.isupper() for c in token[1:]):
        return True  # PgBouncer, iOS, TRANSFORM_WH
    return token[0].isupper() and (not starts or token.lower() not in _STOP)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def shared_prefix(x: str, y: str) -> int:
    """How many characters ``x`` and ``y`` begin with in common ("deploys", "deployed": 6)."""
    common = 0
    for c, d in zip(x, y, strict=False):
        if c != d:
            break
        common += 1
    return common
