"""Comparing two memories without an LLM: are they the same information (dedupe), or do they disagree (contradiction)?

Both start from a pair the dense embedding already found close. What the embedding cannot tell apart is what this
module looks at: the words one memory has and the other lacks. Restating a fact changes only small words; a
contradiction changes a stance: a negation on one side only, an antonym ("verbose" against "short"), or another value
for the same attribute ("port 8080" against "port 9090", "MySQL" against "Postgres" for the same choice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD = re.compile(r"[a-z0-9]+(?:['._:/-][a-z0-9]+)*")
NEGATIONS = frozenset({
    "not", "no", "never", "none", "nobody", "nothing", "without", "cannot", "can't", "don't", "doesn't", "didn't",
    "isn't", "aren't", "wasn't", "weren't", "won't", "shouldn't", "mustn't", "avoid", "avoids", "stop", "stopped",
    "stops", "neither", "nor", "n't",
})  # fmt: skip
STOPWORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "to", "of", "in", "on", "at", "for", "by",
    "with", "and", "or", "as", "it", "its", "this", "that", "these", "those", "their", "there", "they", "we", "our",
    "user", "users", "user's", "has", "have", "had", "do", "does", "did", "so", "from", "into", "via", "any",
    "each", "every", "very", "really", "also", "just", "should", "would", "will", "can", "may",
    "must", "which", "who", "whom", "when", "than", "then", "now", "uses", "use", "used", "using", "his", "her",
    "he", "she", "i", "my", "me", "you", "your", "team", "team's", "s",
})  # fmt: skip
# Pairs of words that state opposite stances; each side may hold several forms.
ANTONYMS = (
    ({"verbose", "detailed", "long", "lengthy", "thorough", "elaborate", "wordy", "longer", "more"},
     {"short", "brief", "concise", "terse", "succinct", "minimal", "shorter", "less", "fewer"}),
    ({"dark"}, {"light", "bright"}),
    ({"love", "loves", "like", "likes", "enjoy", "enjoys", "prefer", "prefers", "want", "wants", "favor", "favors"},
     {"hate", "hates", "dislike", "dislikes", "detest", "detests", "loathe", "loathes"}),
    ({"enable", "enabled", "enables", "on", "turn-on", "activate", "activated"},
     {"disable", "disabled", "disables", "off", "deactivate", "deactivated"}),
    ({"always"}, {"never", "rarely", "seldom"}),
    ({"allow", "allowed", "allows", "permit", "permitted", "accept", "accepted", "accepts"},
     {"forbid", "forbidden", "forbids", "ban", "banned", "bans", "prohibit", "prohibited", "block", "blocked",
      "reject", "rejected", "rejects"}),
    ({"increase", "increased", "increases", "raise", "raised", "grow", "grew", "higher", "up", "faster", "rises"},
     {"decrease", "decreased", "decreases", "lower", "lowered", "reduce", "reduced", "shrink", "down", "slower",
      "drops", "fell"}),
    ({"open", "opened", "public"}, {"closed", "close", "private"}),
    ({"start", "starts", "started", "begin", "begins"}, {"end", "ends", "ended", "finish", "finishes"}),
    ({"fast", "quick", "quickly"}, {"slow", "slowly"}),
    ({"tabs", "tab"}, {"spaces", "space"}),
    ({"early", "morning", "mornings"}, {"late", "evening", "evenings", "night", "nights"}),
    ({"sync", "synchronous", "synchronously"}, {"async", "asynchronous", "asynchronously"}),
    ({"true", "yes"}, {"false"}),
    ({"pass", "passes", "passed", "succeeds", "works", "fixed"}, {"fail", "fails", "failed", "broken", "flaky"}),
    ({"required", "mandatory"}, {"optional"}),
    ({"hot", "warm"}, {"cold", "cool"}),
    ({"include", "includes", "included"}, {"exclude", "excludes", "excluded"}),
    ({"before"}, {"after"}),
    ({"manual", "manually"}, {"automatic", "automatically", "automated"}),
    ({"online"}, {"offline"}),
    ({"remote"}, {"office", "onsite", "on-site"}),
    ({"above", "over", "maximum", "max", "most"}, {"below", "under", "minimum", "min", "least"}),
)  # fmt: skip
# Words that name a value as much as digits do: counts, days, months, units of a schedule.
VALUE_WORDS = frozenset({
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "once", "twice", "single", "double", "half", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays", "sundays",
    "january", "february", "march", "april", "june", "july", "august", "september", "october", "november",
    "december", "daily", "weekly", "monthly", "yearly", "nightly", "hourly", "second", "seconds", "minute",
    "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years", "utc", "cet",
    "pst", "est", "gmt", "top", "bottom", "left", "right", "first", "last", "celsius", "fahrenheit",
})  # fmt: skip
DUPLICATE_SIMILARITY = 0.88  # dense cosine from which a pair may be the same information restated
DUPLICATE_OVERLAP = 0.5  # and the share of content words both have (Jaccard)
CONTRADICTION_SIMILARITY = 0.55  # dense cosine from which a pair is about the same thing
CONTRADICTION_THRESHOLD = 0.5  # the score from which a pair is flagged
SCOPE_PENALTY = 0.55  # what a conflict's score keeps when each side also names something the other does not
SCOPE = " (but each names something the other does not: another scope?)"


def words(text: str) -> list[str]:
    return WORD.findall(text.lower().replace("\u2019", "'"))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and w not in NEGATIONS}


def is_value(word: str) -> bool:
    """A word that names a value: has a digit (8080, 3.11, v2, db-prod-1, 01:00), or is a count, a day, a month."""
    return word in VALUE_WORDS or any(c.isdigit() for c in word)


def overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in words(text))


def _antonyms(only_a: set[str], only_b: set[str]) -> tuple[str, str] | None:
    for one, other in ANTONYMS:
        for x, y in ((one, other), (other, one)):
            left, right = only_a & x, only_b & y
            if left and right:
                return sorted(left)[0], sorted(right)[0]
    return None


def _substitution(only_a: set[str], only_b: set[str]) -> str | None:
    """A word of one replaced by another word of the other: "eu" for "us", "race" for "timeout". Restating adds or
    drops words, or writes one differently ("stand-up", "db" for "database", "chose" for "chosen"); replacing one
    usually changes the information."""
    left = {x for x in only_a if not any(_same_word(x, y) for y in only_b)}
    right = {y for y in only_b if not any(_same_word(x, y) for x in only_a)}
    if not left or not right or len(left) > 2 or len(right) > 2:
        return None
    joined_a, joined_b = "".join(sorted(left)), "".join(sorted(right))
    if any(_flat(x) in _flat(joined_b) for x in left) and any(_flat(y) in _flat(joined_a) for y in right):
        return None  # "lawn mower" / "lawnmower"
    return f"{', '.join(sorted(left))} / {', '.join(sorted(right))}"


def _flat(word: str) -> str:
    return word.replace("-", "").replace("'", "").replace(".", "")


def _same_word(x: str, y: str) -> bool:
    """Two spellings or forms of one word: "wi-fi"/"wifi", "manage"/"manag", "max"/"maximum", "db"/"database"."""
    if "-" in x and "-" in y:  # identifiers (ci-cache-eu, db-prod-1): alike only when equal
        return _flat(x) == _flat(y)
    x, y = _flat(x), _flat(y)
    if x == y or _abbreviates(x, y) or _abbreviates(y, x):
        return True
    common = 0
    for c, d in zip(x, y, strict=False):
        if c != d:
            break
        common += 1
    return common >= 4 and common >= min(len(x), len(y)) - 1


def _abbreviates(short: str, long: str) -> bool:
    """ "db" for "database", "max" for "maximum", "cfg" for "config": its letters in order, starting alike."""
    if not short or not long or short[0] != long[0] or len(short) > len(long) // 2 + 1:
        return False
    letters = iter(long)
    return all(c in letters for c in short)


def is_duplicate(a: str, b: str, similarity: float) -> tuple[bool, str]:
    """Whether ``b`` restates ``a``: close in meaning, mostly the same words, and no word of its own that changes
    the information (a value, a negation, an antonym)."""
    if similarity < DUPLICATE_SIMILARITY:
        return False, f"similarity {similarity:.2f} < {DUPLICATE_SIMILARITY}"
    wa, wb = content_words(a), content_words(b)
    sa, sb = {_stem(w) for w in wa}, {_stem(w) for w in wb}
    share = overlap(sa, sb)
    if share < DUPLICATE_OVERLAP:
        return False, f"word overlap {share:.2f} < {DUPLICATE_OVERLAP}"
    if _negated(a) != _negated(b):
        return False, "one of them is negated"
    values = {w for w in wa ^ wb if is_value(w)}
    if values:
        return False, f"different values: {', '.join(sorted(values))}"
    ra, rb = set(words(a)), set(words(b))
    if (pair := _antonyms(ra - rb, rb - ra)) is not None:
        return False, f"opposite words: {pair[0]} / {pair[1]}"
    if (swap := _substitution(sa - sb, sb - sa)) is not None:
        return False, f"one word for another: {swap}"
    return True, f"similarity {similarity:.2f}, word overlap {share:.2f}"


@dataclass(frozen=True, slots=True)
class Conflict:
    score: float
    why: str


def _other_scope(only_a: set[str], only_b: set[str]) -> bool:
    """Both sides name something besides the stance words (values, antonyms, negations): "enabled in staging"
    against "disabled in production" may both hold."""

    def rest(only: set[str]) -> set[str]:
        return {w for w in only if not is_value(w) and not any(w in x or w in y for x, y in ANTONYMS)}

    return bool(rest(only_a)) and bool(rest(only_b))


def conflict(a: str, b: str, similarity: float, *, shared_topics: bool = True) -> Conflict | None:
    """Whether ``a`` and ``b`` may disagree, with a score in 0..1 and why; None when nothing points to it.

    The pair must be about the same thing (dense similarity, raised when they share no topic or tag) and differ in
    stance: a negation on one side only, an antonym, or another value in the same sentence frame.
    """
    floor = CONTRADICTION_SIMILARITY if shared_topics else CONTRADICTION_SIMILARITY + 0.15
    if similarity < floor:
        return None
    wa, wb = content_words(a), content_words(b)
    sa, sb = {_stem(w) for w in wa}, {_stem(w) for w in wb}
    only_a, only_b = wa - wb, wb - wa
    frame = overlap({w for w in sa if not is_value(w)}, {w for w in sb if not is_value(w)})
    reasons: list[tuple[float, str]] = []
    scoped = _other_scope(only_a, only_b)
    if wa == wb and [w for w in words(a) if w in wa] != [w for w in words(b) if w in wb] and not _negated(a):
        reasons.append((0.75, "the same words in another order (X over Y against Y over X)"))
    if _negated(a) != _negated(b) and frame >= 0.4:
        negated = "the second" if _negated(b) else "the first"
        reasons.append((0.55 + 0.4 * frame, f"{negated} negates what the other states"))
    if (pair := _antonyms(only_a, only_b)) is not None:
        score = (0.5 + 0.4 * similarity) * (SCOPE_PENALTY if scoped else 1.0)
        reasons.append((score, f"opposite words: '{pair[0]}' against '{pair[1]}'" + (SCOPE if scoped else "")))
    values_a, values_b = {w for w in only_a if is_value(w)}, {w for w in only_b if is_value(w)}
    if values_a and values_b and frame >= 0.3:
        shown = f"{', '.join(sorted(values_a))} against {', '.join(sorted(values_b))}"
        score = (0.45 + 0.5 * frame) * (SCOPE_PENALTY if scoped else 1.0)
        reasons.append((score, f"different values in the same statement: {shown}" + (SCOPE if scoped else "")))
    elif frame >= 0.5 and 1 <= len(sa - sb) <= 2 and 1 <= len(sb - sa) <= 2 and not reasons:
        shown = f"{', '.join(sorted(only_a))} against {', '.join(sorted(only_b))}"
        reasons.append((0.3 + 0.5 * frame, f"the same statement with another value: {shown}"))
    if not reasons:
        return None
    score = min(1.0, max(r[0] for r in reasons) * (0.7 + 0.3 * similarity))
    why = "; ".join(r[1] for r in sorted(reasons, key=lambda r: -r[0]))
    return Conflict(round(score, 3), f"{why} (similarity {similarity:.2f})")
