"""One way to write what people write several ways, before two memories are compared: periods ("every three months"
is "quarterly"), ranges ("14-28" with an en dash, "between 14 and 28"), ordinals ("9th"), and acronyms of the other
memory's words ("DI" for "dependency injection", "VMs" for "virtual machines").

Only forms that say exactly the same thing are folded: "every other Thursday" is "biweekly thursday", never "thursday";
"every 2 months" stays a count of months. Everything here is lowercase text in, lowercase text out (stance.words reads
it), except ``rewrite``, which keeps the case (names are read from capitals).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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
MIN_ACRONYM, MAX_ACRONYM = 2, 5  # letters


def rewrite(text: str) -> str:
    """``text`` with periods, ranges, ordinals and whole decimals written one way, its case kept elsewhere."""
    text = text.replace("\u00bd", " half ")
    for pattern in RANGES:
        text = pattern.sub(lambda m: f"from {m.group(1)} to {m.group(2)}", text)
    text = ORDINAL.sub(lambda m: m.group(1), text)
    text = WHOLE.sub(lambda m: m.group(1), text)
    text = _FALL.sub(lambda m: f"{m.group(1)} autumn", text)
    for pattern, replacement in PERIODS:
        text = pattern.sub(replacement, text)
    return text


def acronym_of(word: str) -> str:
    """The letters an acronym stands for ("vms" -> "vm"), or "" when ``word`` cannot be one (too short or long, or
    not only letters)."""
    letters = word[:-1] if word.endswith("s") and len(word) > MIN_ACRONYM else word
    if not letters.isalpha() or not MIN_ACRONYM <= len(letters) <= MAX_ACRONYM:
        return ""
    return letters


def fold_acronyms(one: Sequence[str], other: Sequence[str], *, skip: frozenset[str] = frozenset()) -> list[str]:
    """``other``'s words with each run of words whose initials spell an acronym ``one`` uses written as that acronym:
    one = ["hilt", "handles", "di"], other = [..., "dependency", "injection"] -> [..., "di"]. Words in ``skip`` (stop
    words) are neither acronyms nor counted in a run; a run is of 2 words at least, and ``other`` must not use the
    acronym itself."""
    wanted = {acronym_of(w): w for w in one if w not in skip and w not in other and acronym_of(w)}
    initials = "".join(w[0] if w and w not in skip else " " for w in other)
    wanted = {letters: word for letters, word in wanted.items() if letters in initials}
    if not wanted:
        return list(other)
    out: list[str] = []
    i = 0
    while i < len(other):
        for letters, word in wanted.items():
            run = other[i : i + len(letters)]
            if (
                len(run) == len(letters)
                and not any(w in skip or not w[:1].isalpha() for w in run)
                and "".join(w[0] for w in run) == letters
            ):
                out.append(word)
                i += len(letters)
                break
        else:
            out.append(other[i])
            i += 1
    return out


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
