"""One way to write what people write several ways, before two memories are compared: periods ("every three months"
is "quarterly"), ranges ("14-28" with an en dash, "between 14 and 28"), ordinals ("9th"), and acronyms of the other
memory's words ("DI" for "dependency injection", "VMs" for "virtual machines").

Only forms that say exactly the same thing are folded: "every other Thursday" is "biweekly thursday", never "thursday";
"every 2 months" stays a count of months. Everything here is lowercase text in, lowercase text out (stance.words reads
it), except ``rewrite``, which keeps the case (names are read from capitals).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from engram.subjects import MONTHS

_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_EVERY = r"(?:every|each|per|a|once\s+a|once\s+per|once\s+every)"
# (pattern, replacement): case-insensitive, whole words; the first that matches a span wins.
PERIODS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\b(?:every|each)\s+(?:3|three)\s+months\b|\bonce\s+a\s+quarter\b|\bevery\s+quarter\b", "quarterly"),
        (r"\b(?:every|each)\s+(?:other|second|2|two)\s+weeks?\b|\bfortnightly\b|\bbi-weekly\b", "biweekly"),
        (r"\b(?:every|each)\s+(?:other|second)\s+(?=(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b)", "biweekly "),
        (r"\balternate\s+(?=(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b)", "biweekly "),
        (rf"\b{_EVERY}\s+month\b", "monthly"),
        (rf"\b{_EVERY}\s+week\b", "weekly"),
        (r"\b(?:every|each|per|once\s+a)\s+day\b", "daily"),
        (rf"\b{_EVERY}\s+year\b|\bannually\b|\byearly\b", "yearly"),
        (r"\b(?:every|each|per|once\s+an)\s+hour\b", "hourly"),
        (r"\b(?:every|each)\s+night\b", "nightly"),
        (r"\bhalf\s+an\s+hour\b|\bhalf[\s-]hour\b", "30 minutes"),
    )
)
_FALL = re.compile(  # "fall" the season (after these words), not the verb: "autumn"
    r"\b(every|each|in|this|last|next|during)\s+fall\b", re.IGNORECASE
)
# Ranges of numbers, written as "from N to M" (what engram.updates reads as a change on both sides alike).
RANGES = (
    re.compile(r"\b(\d+)\s*[\u2013\u2014]\s*(\d+)\b"),
    re.compile(r"\bbetween\s+(\d+)\s+and\s+(\d+)\b", re.IGNORECASE),
    re.compile(r"\bfrom\s+(\d+)\s+up\s+to\s+(\d+)\b", re.IGNORECASE),
)
ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.IGNORECASE)
WHOLE = re.compile(r"\b(\d+)\.0\b(?!\.\d)")  # "16.0" is 16 (not "1.0.3")
# A date written in words ("2 Nov 2025", "November 2, 2025", after ORDINAL) is the ISO date it names ("2025-11-02").
_MONTH = rf"({'|'.join(MONTHS)}|sept|{'|'.join(m[:3] for m in MONTHS if m != 'may')})\b\.?"  # a name, or short
DATES = (
    (re.compile(rf"\b(\d{{1,2}})\s+{_MONTH},?\s+((?:19|20)\d\d)\b", re.IGNORECASE), (3, 2, 1)),
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)\b", re.IGNORECASE), (3, 1, 2)),
)
MONTH_NUMBERS = {month[:3]: number for number, month in enumerate(MONTHS, start=1)}
MIN_ACRONYM, MAX_ACRONYM = 2, 5  # letters


def rewrite(text: str) -> str:
    """``text`` with periods, ranges, ordinals and whole decimals written one way, its case kept elsewhere."""
    text = text.replace("\u00bd", " half ")
    for pattern in RANGES:
        text = pattern.sub(lambda m: f"from {m.group(1)} to {m.group(2)}", text)
    text = ORDINAL.sub(lambda m: m.group(1), text)
    text = WHOLE.sub(lambda m: m.group(1), text)
    for pattern, order in DATES:
        text = pattern.sub(_dated(order), text)
    text = _FALL.sub(lambda m: f"{m.group(1)} autumn", text)
    for pattern, replacement in PERIODS:
        text = pattern.sub(replacement, text)
    return text


def _dated(order: tuple[int, int, int]) -> Callable[[re.Match[str]], str]:
    """What a match of a DATES pattern is written as: the ISO date of its groups (year, month, day) in ``order``."""
    return lambda match: _iso(*(match.group(k) for k in order)) or match.group(0)


def _iso(*parts: str) -> str:
    """The ISO date of (a year, a month's name, a day), or "" when the day is not one of a month."""
    year, month, day = parts
    number = MONTH_NUMBERS[month[:3].lower()]
    if not 1 <= int(day) <= 31:
        return ""
    return f"{year}-{number:02d}-{int(day):02d}"


def acronym_of(word: str) -> str:
    """The letters an acronym stands for ("vms" -> "vm"), or "" when ``word`` cannot be one (too short or long, or
    not only letters)."""
    letters = word[:-1] if word.endswith("s") and len(word) > MIN_ACRONYM else word
    if not letters.isalpha() or not MIN_ACRONYM <= len(letters) <= MAX_ACRONYM:
        return ""
    return letters


def fold_acronyms(
    one: Sequence[str],
    other: Sequence[str],
    *,
    skip: frozenset[str] = frozenset(),
    capitals: frozenset[str] = frozenset(),
) -> list[str]:
    """``other``'s words with each run of words that spells an acronym ``one`` uses written as that acronym:
    one = ["hilt", "handles", "di"], other = [..., "dependency", "injection"] -> [..., "di"]. Each word of the run
    gives its initial, and each part of a hyphenated word its own ("single sign-on" is "sso"); an acronym written in
    capitals (``capitals``: its lowercase letters) may also take later letters of a word, in order ("data warehouse"
    is "DWH"). Words in ``skip`` (stop words) are neither acronyms nor counted in a run; a run is of 2 words or parts
    at least, and ``other`` must not use the acronym itself."""
    wanted = {acronym_of(w): w for w in one if w not in skip and w not in other and acronym_of(w)}
    starts = {w[0] for w in other if w and w not in skip}
    wanted = {letters: word for letters, word in wanted.items() if letters[0] in starts}
    if not wanted:
        return list(other)
    out: list[str] = []
    i = 0
    while i < len(other):
        for letters, word in wanted.items():
            if other[i][:1] != letters[0]:
                continue  # a run starts with the acronym's first letter (most words start none of them)
            size = _run_spelling(letters, other[i:], skip, inner=letters in capitals or word in capitals)
            if size:
                out.append(word)
                i += size
                break
        else:
            out.append(other[i])
            i += 1
    return out


def _run_spelling(letters: str, words: Sequence[str], skip: frozenset[str], *, inner: bool) -> int:
    """How many of the first ``words`` spell ``letters`` (0: none): the shortest such run of 2 parts or more."""
    for size in range(1, len(letters) + 1):
        run = words[:size]
        if len(run) < size or any(w in skip or not w[:1].isalpha() for w in run):
            return 0
        parts = [part for w in run for part in w.split("-") if part]
        if len(parts) >= 2 and all(p.isalpha() for p in parts) and _spells(letters, parts, inner=inner):
            return size
    return 0


def _spells(letters: str, parts: Sequence[str], *, inner: bool) -> bool:
    """Whether each part gives ``letters`` its initial in turn (and, with ``inner``, more of its letters in order)."""
    if not parts:
        return not letters
    if not letters or letters[0] != parts[0][0]:
        return False
    rest, tail = letters[1:], parts[0][1:]
    for taken in range(len(rest) + 1 if inner else 1):
        if taken and not _in_order(rest[:taken], tail):
            return False
        if _spells(rest[taken:], parts[1:], inner=inner):
            return True
    return False


def _in_order(letters: str, word: str) -> bool:
    remaining = iter(word)
    return all(c in remaining for c in letters)


def fold_joined(one: Sequence[str], other: Sequence[str]) -> list[str]:
    """``other``'s words with two neighbours that ``one`` writes as one word joined as it: "oauth 2" beside "oauth2",
    "auto scale" beside "autoscale", "lawn mower" beside "lawnmower"."""
    joined = {w.replace("-", ""): w for w in one if len(w) >= 4 and w not in other}
    if not joined:
        return list(other)
    out: list[str] = []
    i = 0
    while i < len(other):
        pair = "".join(other[i : i + 2]).replace("-", "")
        if i + 1 < len(other) and pair in joined:
            out.append(joined[pair])
            i += 2
        else:
            out.append(other[i])
            i += 1
    return out
