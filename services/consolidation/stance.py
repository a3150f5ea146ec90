"""Comparing two memories without an LLM: the same information (dedupe), an update of it, or a disagreement?

Every pair starts from the dense embedding finding the two close. What the embedding cannot tell apart is what this
module reads, the way a person would: the words one memory has and the other lacks, once both are written alike
(abbreviations and spelling variants folded: "k8s" is "kubernetes", "centre" is "center"). Restating a fact changes
only small words. A change of information shows as a negation on one side only, a state antonym ("on" / "off"),
another value of the same attribute ("port 8080" / "port 9090"), a reversed preference ("prefers" / "hates"),
another person in a role held by one, or another choice in the same sentence ("MySQL" / "Postgres"). When the newer
memory says it changed ("was lowered to", "replaced X with Y", "now", "no longer": engram.updates), the pair is an
update, proposed as a supersession. When the two differ in a scope or time qualifier ("in summer", "last year",
"on staging") or name different entities ("Daniel" / "Chidi", "db-main" / "db-replica"), both may hold: no flag.
Each finding names the rule that raised it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache

from engram.services.consolidation import spelling
from engram.subjects import MONTHS, RECORD, shared_prefix
from engram.updates import states_a_change

WORD = re.compile(r"[a-z0-9]+(?:['._:/-][a-z0-9]+)*")
CASED_WORD = re.compile(r"[A-Za-z0-9]+(?:['._:/-][A-Za-z0-9]+)*")
SENTENCE = re.compile(r"(?<=[.!?;])\s+")  # where a sentence ends (a clause after a semicolon is one too)
CAPITALS = re.compile(r"\b[A-Z]{2,5}s?\b")  # an acronym as written: "DWH", "SSO", "VMs"
NEGATIONS = frozenset({
    "not", "no", "never", "none", "nobody", "nothing", "without", "cannot", "can't", "don't", "doesn't", "didn't",
    "isn't", "aren't", "wasn't", "weren't", "won't", "shouldn't", "mustn't", "avoid", "avoids", "stop", "stopped",
    "stops", "neither", "nor", "n't",
})  # fmt: skip
STOPWORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "to", "of", "in", "on", "at", "for", "by",
    "with", "and", "or", "as", "it", "its", "this", "that", "these", "those", "their", "there", "they", "we", "our",
    "user", "users", "has", "have", "had", "do", "does", "did", "so", "from", "into", "via", "any",
    "each", "every", "very", "really", "also", "just", "should", "would", "will", "can", "may",
    "must", "which", "who", "whom", "when", "than", "then", "now", "uses", "use", "used", "using", "his", "her",
    "he", "she", "i", "my", "me", "you", "your", "team", "s", "all", "what", "where", "here", "get", "gets", "got",
    "done", "set", "kept", "keep", "keeps", "still", "currently", "only", "over",
})  # fmt: skip
# One spelling of a word for all: abbreviations, British and American spellings, number words. Applied to both
# texts before anything is compared, so "k8s" and "Kubernetes" are one word and never "one word for another".
CANONICAL = {
    "k8s": "kubernetes", "kube": "kubernetes", "db": "database", "dbs": "databases", "env": "environment",
    "envs": "environments", "repo": "repository", "repos": "repositories", "config": "configuration",
    "cfg": "configuration", "configs": "configurations", "prod": "production", "pr": "pull-request",
    "prs": "pull-requests", "js": "javascript", "ts": "typescript", "py": "python", "msg": "message",
    "msgs": "messages", "docs": "documentation", "doc": "documentation", "info": "information", "auth": "auth",
    "approx": "approximately", "dept": "department", "mgr": "manager", "eng": "engineering", "infra": "infrastructure",
    "ops": "operations", "svc": "service", "svcs": "services", "dir": "directory", "dirs": "directories",
    "min": "minutes", "mins": "minutes", "sec": "seconds", "secs": "seconds", "hr": "hours", "hrs": "hours",
    "ms": "milliseconds", "wk": "week", "wks": "weeks", "mo": "months", "yr": "years", "yrs": "years",
    "jan": "january", "feb": "february", "apr": "april", "jun": "june", "jul": "july", "aug": "august",
    "sep": "september", "sept": "september", "oct": "october", "nov": "november", "dec": "december",
    "tue": "tuesday", "tues": "tuesday", "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday",
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30", "fifty": "50",
    "hundred": "100", "grey": "gray", "programme": "program", "programmes": "programs", "cancelled": "canceled",
    "travelling": "traveling", "licence": "license", "catalogue": "catalog", "dialogue": "dialog", "cheque": "check",
    "tyre": "tire", "tyres": "tires", "aluminium": "aluminum", "mum": "mom", "whilst": "while", "amongst": "among",
    "okay": "ok", "e-mail": "email", "e2e": "end-to-end", "bn": "billion", "mn": "million",
    "wi-fi": "wifi", "on-call": "oncall", "stand-up": "standup",
    "set-up": "setup", "log-in": "login", "sign-in": "signin", "front-end": "frontend", "back-end": "backend",
    "favourite": "favorite", "favourites": "favorites", "½": "half",
    "mondays": "monday", "tuesdays": "tuesday", "wednesdays": "wednesday", "thursdays": "thursday",
    "fridays": "friday", "saturdays": "saturday", "sundays": "sunday", "mornings": "morning",
    "afternoons": "afternoon", "evenings": "evening", "weekends": "weekend", "weekdays": "weekday",
    "night": "evening",  # "the night before" is "the evening before"; "every night" is "nightly" (spelling)
}  # fmt: skip
PHRASES = (  # several words written as one, before the words are split
    (re.compile(r"\b(\d{1,2})(?::(\d\d))?\s*(am|pm)\b"), lambda m: _clock(m.group(1), m.group(2), m.group(3))),
    (re.compile(r"\b0(\d):(\d\d)\b"), lambda m: f"{m.group(1)}:{m.group(2)}"),
    (re.compile(r"\b(\d{1,3}),(\d{3})\b"), lambda m: f"{m.group(1)}{m.group(2)}"),
    (re.compile(r"\bno\.\s*(?=\d)"), lambda m: "number "),
    (re.compile(r"\bv(?=\d)"), lambda m: ""),
    (re.compile(r"\bpull requests?\b"), lambda m: "pull-requests" if m.group(0).endswith("s") else "pull-request"),
    (re.compile(r"\bon[ -]call\b"), lambda m: "oncall"),
    (re.compile(r"\bdata ?cent(?:er|re)s?\b"), lambda m: "datacenter"),
    (re.compile(r"\b(\d+)(am|pm|ms|s|m|h|d|gb|mb|kb|tb|k)\b"), lambda m: f"{m.group(1)} {m.group(2)}"),
    (re.compile(r"\b(\d+)\s*%"), lambda m: f"{m.group(1)} percent"),
    (re.compile(r"\b(\d+)\s*°\s*([cf])\b"), lambda m: f"{m.group(1)} degrees"),
    (re.compile(r"\b(?:do not|does not|did not|don't|doesn't|didn't)\s+(?:like|enjoy|love)\b"), lambda m: "dislike"),
)


def _clock(hours: str, minutes: str | None, half: str) -> str:
    """ "5:30 pm" -> "17:30", "8 am" -> "8:00": one way to write a time of day."""
    hour = int(hours) % 12 + (12 if half == "pm" else 0)
    return f"{hour}:{minutes or '00'}"


# Word forms that say the same thing; each maps to the first of its group.
SYNONYMS = (
    ("start", "starts", "begin", "begins", "began", "started", "begun", "kicks", "kick"),
    ("store", "stores", "stored", "live", "lives", "kept", "sit", "sits", "saved"),
    ("instead", "rather"),
    ("fire", "fires", "fired", "trigger", "triggers", "triggered", "alert", "alerts"),
    ("vegan", "vegans"),
    ("handle", "handles", "handled", "manage", "manages", "managed", "take", "takes", "taken", "care"),
    ("large", "big", "huge"),
    ("small", "little", "tiny"),
    ("show", "shows", "shown", "display", "displays", "displayed"),
    ("need", "needs", "needed", "require", "requires", "required"),
    ("buy", "buys", "bought", "purchase", "purchases", "purchased"),
    ("help", "helps", "assist", "assists"),
    ("visit", "visits", "come", "comes"),
    ("call", "calls"),
    ("dislike", "dislikes"),
    ("prefer", "prefers", "like", "likes", "rather"),
    ("about", "roughly", "approximately", "around", "circa"),
    ("want", "wants", "ask", "asks", "request", "requests", "expect", "expects"),
    ("apartment", "apartments", "flat", "flats"),
    ("like", "likes", "enjoy", "enjoys", "love", "loves", "fond"),
    ("prefer", "prefers", "preferred", "favor", "favors", "favour", "favours", "want", "wants", "wanted"),
    ("run", "runs", "ran", "running", "execute", "executes", "executed"),
    ("make", "makes", "made", "build", "builds", "built", "create", "creates", "created"),
    ("pick", "picked", "chose", "chosen", "choose", "selected", "select", "decided", "went"),
    ("host", "hosts", "hosted", "deploy", "deploys", "deployed", "deployment"),
    ("locate", "located", "based", "lives", "situated"),
    ("talk", "talks", "speak", "speaks", "spoke"),
    ("say", "says", "said", "tell", "tells", "told"),
    ("fix", "fixes", "fixed", "repair", "repaired", "resolved", "resolve"),
)
_SYNONYM = {form: group[0] for group in SYNONYMS for form in group}  # a form's last group
_SYNONYMS: dict[str, frozenset[str]] = {}  # every group of a form and of its head ("lives": store, locate)
for _group in SYNONYMS:
    for _form in _group:
        _SYNONYMS[_form] = _SYNONYMS.get(_form, frozenset()) | {_group[0]}
for _form, _heads in list(_SYNONYMS.items()):
    _SYNONYMS[_SYNONYM[_form]] = _SYNONYMS.get(_SYNONYM[_form], frozenset()) | _heads  # stems are heads
# Pairs of words that state opposite stances; each side may hold several forms. A pair that names a preference
# (like / hate) raises the rule "preference"; the others "antonym".
PREFERENCE = (
    {"love", "loves", "like", "likes", "enjoy", "enjoys", "prefer", "prefers", "want", "wants", "favor", "favors",
     "fond"},
    {"hate", "hates", "dislike", "dislikes", "detest", "detests", "loathe", "loathes", "avoid", "avoids"},
)  # fmt: skip
ANTONYMS = (
    ({"verbose", "detailed", "long", "lengthy", "thorough", "elaborate", "wordy", "longer", "more"},
     {"short", "brief", "concise", "terse", "succinct", "minimal", "shorter", "less", "fewer"}),
    ({"dark"}, {"light", "bright"}),
    PREFERENCE,
    ({"enable", "enabled", "enables", "on", "turn-on", "activate", "activated", "active"},
     {"disable", "disabled", "disables", "off", "deactivate", "deactivated", "inactive"}),
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
    ({"pass", "passes", "passed", "succeeds", "works", "fixed", "fix"}, {"fail", "fails", "failed", "broken", "flaky"}),
    ({"required", "mandatory", "need"}, {"optional"}),
    ({"hot", "warm"}, {"cold", "cool"}),
    ({"include", "includes", "included"}, {"exclude", "excludes", "excluded"}),
    ({"before"}, {"after"}),
    ({"manual", "manually", "hand"}, {"automatic", "automatically", "automated"}),
    ({"online"}, {"offline"}),
    ({"remote"}, {"office", "onsite", "on-site"}),
    ({"above", "maximum", "max", "most"}, {"below", "under", "minimum", "least"}),
    ({"connected", "plugged"}, {"disconnected", "unplugged"}),
    ({"locked"}, {"unlocked"}),
    ({"front"}, {"back", "rear"}),
    ({"visible", "shown"}, {"hidden"}),
    ({"supported"}, {"unsupported", "deprecated"}),
)  # fmt: skip
# Words that name a value as much as digits do: counts, days, months, units of a schedule.
VALUE_WORDS = frozenset({
    "zero", "once", "twice", "single", "double", "half", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays", "sundays",
    *(m for m in MONTHS if m != "may"), "daily", "weekly", "monthly", "yearly", "nightly", "hourly", "biweekly",
    "quarterly", "utc", "cet",
    "pst", "est", "gmt", "top", "bottom", "left", "right", "first", "celsius", "fahrenheit", "noon", "midnight",
    "am", "pm", "morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "night", "nights",
})  # fmt: skip
DAYS = frozenset(d for d in VALUE_WORDS if d.endswith(("day", "days")) and d not in ("daily",))
FREQUENCIES = frozenset({"once", "twice", "daily", "weekly", "monthly", "yearly", "nightly", "hourly", "biweekly",
                         "quarterly"})  # fmt: skip
DAYTIMES = frozenset({"morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "night", "nights",
                      "noon", "midnight", "am", "pm"})  # fmt: skip
UNITS = frozenset({
    "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months",
    "year", "years", "milliseconds", "percent", "degrees", "gb", "mb", "kb", "tb", "k", "m", "h", "d",
})  # fmt: skip
# Words that place a statement in a scope or a time: two statements that differ in one may both hold ("in summer" /
# "outside summer", "last year" / "this year", "on staging" / "in production").
QUALIFIERS = frozenset({
    "summer", "winter", "spring", "autumn", "weekend", "weekends", "weekday", "weekdays", "weeknight", "weeknights",
    "holiday", "holidays", "vacation", "outside", "except", "last", "next", "previous", "previously",
    "formerly", "past", "future", "staging", "production", "development", "dev", "test", "testing", "qa", "sandbox",
    "local", "locally", "ci", "ios", "android", "web", "desktop", "backend", "frontend", "internal", "external",
    "school", "term", "semester", "season", "peak", "off-peak", "today", "tomorrow", "yesterday", "tonight",
    "q1", "q2", "q3", "q4", "beta", "alpha", "canary", "preview", "legacy", "v1", "v2", "v3", "eu", "us", "emea",
    "apac", "europe", "asia", "america", "americas", "unless", "until",
})  # fmt: skip
# Roles one person holds at a time: another name in one is another fact, not another scope.
ROLES = frozenset({
    "owner", "owns", "owned", "lead", "leads", "led", "manager", "manages", "oncall", "responsible", "maintainer",
    "maintains", "maintained", "charge", "contact", "head", "heads", "assigned", "assignee", "ceo", "cto", "pm",
    "driver", "drives", "approver", "approves", "reviewer", "captain", "chair", "chairs", "runs", "admin",
    "administrator", "dri", "point", "took", "over", "handles", "handle", "coach", "teacher", "doctor", "dentist",
    "pediatrician", "babysitter", "nanny", "tutor", "picks", "pick",
})  # fmt: skip
# Words a restatement of a choice uses to name what was not chosen ("pnpm, not npm", "Vitest instead of Jest").
CONTRAST = re.compile(r"(?:,|;|\(|\u2014|-)\s*(?:and\s+)?not\s+|\binstead of\s+|\brather than\s+")
RATHER_THAN = re.compile(r"\brather\b[^,.;]*?\s(than)\s+\w", re.IGNORECASE)
RANKED_OVER = re.compile(
    r"\b(?:prefer|favou?r|like|chose|choose|pick)\w*\b[^,.;]*?\s(over)\s+\w|\bprefer\w*\s+\w[^,.;]*?\s(to)\s+(?!be\b)\w",
    re.IGNORECASE,
)  # "prefers X over Y", "prefers X to Y" (not "prefers to work", "prefers X to be ...")
CHANGE_WORDS = frozenset({
    "now", "longer", "anymore", "moved", "switched", "replaced", "replacing", "took", "taken", "upgraded",
    "downgraded", "migrated", "changed", "instead", "raised", "lowered", "increased", "decreased", "reduced", "cut",
    "bumped", "relaxed", "tightened", "resized", "renamed", "retired", "dropped", "updated", "rotated", "again",
    "became", "become", "becomes", "promoted", "reassigned", "transferred", "handed", "new", "from", "went",
})  # fmt: skip

DUPLICATE_SIMILARITY = 0.86  # dense cosine from which a pair may be the same information restated
CLOSE_DUPLICATE_SIMILARITY = 0.74  # ... when nearly all their words are the same once written alike
DUPLICATE_OVERLAP = 0.5  # the share of content words both have (Jaccard) at DUPLICATE_SIMILARITY
CLOSE_DUPLICATE_OVERLAP = 0.7  # ... and at CLOSE_DUPLICATE_SIMILARITY
SPELLED_SIMILARITY = 0.55  # ... from which one spelling out the other's acronym is read as at the closer floor
SPELLED_MAX_WORDS = 16  # ... in two statements of at most this many words
REWORDED_SIMILARITY = 0.95  # dense cosine from which one plain word for another is a rewording
REWORDED_PARAPHRASE = 0.95  # ... or the paraphrase score (cosine raised by the words shared) from which it is
PARAPHRASE_WORDS = 0.2  # what the share of words (Jaccard, 0.5 neutral) adds to the cosine in the paraphrase score
CONTAINED = 0.9  # the share of the shorter's words the longer has from which a terse note restates a sentence
CONTAINED_WORDS = 3  # ... when the shorter has at least this many content words
SAYS_MORE = 1.6  # a text with more than this many times the other's content words (+2) says more than it
CONTAINED_LONGER = 1.6  # ... and the longer at most this many times as many (more is more information, not a note)
CONTRADICTION_SIMILARITY = 0.55  # dense cosine from which a pair is about the same thing
CONTRADICTION_THRESHOLD = 0.5  # the score from which a pair is flagged
# Values one side gives that the other does not, at most, for "another value of the same attribute": an attribute
# has a value or two (a port; a day and a time); a statement that differs in more reports a set of measurements.
MAX_VALUES = 3
UPDATE_COVERAGE = 0.4  # an update repeats at least this share of the older memory's content words
UPDATE_MAX_WORDS = 12  # ... of an older memory of at most this many content words (a fact, not a paragraph)
# ... and adds at most this many words the older does not have: what changed (the new value or choice, a reason), not
# another statement about the subject ("Simvastatin reduces platelet adhesion" / a finding of 15 more words)
UPDATE_MAX_ADDED = 5
NEGATION_FRAME = 0.4  # the share of words (Jaccard) a negated sentence has with the other memory, as the frame
SCOPE_PENALTY = 0.55  # what a finding's score keeps when each side also names something the other does not


@dataclass(frozen=True, slots=True)
class Reading:
    """A memory's text as this module compares it: its words written alike, and what they say about stance."""

    text: str
    all_words: tuple[str, ...]  # every word, canonical
    content: frozenset[str]  # without stop words and negations
    stems: frozenset[str]
    names: frozenset[str]  # capitalized words inside a sentence: people, products, places (canonical, lower)
    negated: bool
    change: bool  # it says something changed (engram.updates.states_a_change)
    rejected: frozenset[str] = field(default_factory=frozenset)  # what a choice restated names as not chosen
    without: frozenset[str] = field(default_factory=frozenset)  # what it is done without (a negation if the other
    # memory names it: "deploys with approval" / "deploys without approval"; else a detail it adds)

    @classmethod
    def of(cls, text: str) -> Reading:
        return _reading(text)

    def with_words(self, every: tuple[str, ...]) -> Reading:
        """The same reading with other words (another memory's acronyms folded in: spelling.fold_acronyms)."""
        content = frozenset(w for w in every if w not in STOPWORDS and w not in NEGATIONS)
        return dataclasses.replace(self, all_words=every, content=content, stems=frozenset(_stem(w) for w in content))


@lru_cache(maxsize=65536)  # a job compares each memory with up to 32 others: read once (a Reading is immutable)
def _reading(text: str) -> Reading:
    written = spelling.rewrite(text)
    plain, rejected = _split_contrast(written)
    every = tuple(words(written))
    content = frozenset(w for w in every if w not in STOPWORDS and w not in NEGATIONS)
    return Reading(
        text=text, all_words=every, content=content, stems=frozenset(_stem(w) for w in content),
        names=_names(written), negated=_negated(plain), change=states_a_change(plain), without=_without(plain),
        rejected=frozenset(w for w in words(rejected) if w not in STOPWORDS),
    )  # fmt: skip


def forget() -> None:
    """Empties the caches of readings and of words compared. A job over a namespace fills them with its every memory
    (a Reading holds the text and five sets of its words): kept between jobs, that was about 350 MiB of a node of
    50k memories (docs/benchmarks.md, lean memory)."""
    _reading.cache_clear()
    _named_inside.cache_clear()
    _capitals.cache_clear()
    _long.cache_clear()
    _canonical.cache_clear()
    _negated_sentences.cache_clear()
    is_value.cache_clear()
    _same_word.cache_clear()


def readings(a: str, b: str) -> tuple[Reading, Reading]:
    """Both memories read, each one's words that spell the other's acronym written as it ("dependency injection"
    -> "di" beside "Hilt handles DI")."""
    ra, rb = Reading.of(a), Reading.of(b)
    skip = STOPWORDS | NEGATIONS
    folded_b = tuple(spelling.fold_joined(
        ra.all_words, spelling.fold_acronyms(ra.all_words, rb.all_words, skip=skip, capitals=_capitals(a))
    ))  # fmt: skip
    folded_a = tuple(spelling.fold_joined(
        rb.all_words, spelling.fold_acronyms(rb.all_words, ra.all_words, skip=skip, capitals=_capitals(b))
    ))  # fmt: skip
    if folded_a != ra.all_words:
        ra = ra.with_words(folded_a)
    if folded_b != rb.all_words:
        rb = rb.with_words(folded_b)
    if ra.without & rb.content and not ra.negated:
        ra = dataclasses.replace(ra, negated=True)
    if rb.without & ra.content and not rb.negated:
        rb = dataclasses.replace(rb, negated=True)
    return ra, rb


@dataclass(frozen=True, slots=True)
class Conflict:
    """A pair that may need a person's decision: a contradiction, or an update (the newer replaces the older)."""

    score: float
    why: str
    rule: str = "negation"  # the rule that raised it: negation, antonym, preference, value, person, choice, order,
    # update
    kind: str = "contradiction"  # or "update": the newer states the change; accepting it supersedes the older


def words(text: str) -> list[str]:
    """The words of ``text``, lowercase and canonical ("k8s" -> "kubernetes", "colour" -> "color")."""
    lowered = text.lower().replace("\u2019", "'")
    for pattern, replace in PHRASES:
        lowered = pattern.sub(replace, lowered)
    return [_canonical(w) for w in WORD.findall(lowered)]


@lru_cache(maxsize=65536)  # a namespace's texts use a few tens of thousands of words, again and again
def _canonical(word: str) -> str:
    if word.endswith("'s") and len(word) > 3:
        word = word[:-2]
    elif word.endswith("s'") and len(word) > 3:
        word = word[:-1]
    if word in CANONICAL:
        return CANONICAL[word]
    if "-" in word:  # "two-space" -> "2-space"
        head, _, tail = word.partition("-")
        if head in CANONICAL and CANONICAL[head].isdigit():
            return f"{CANONICAL[head]}-{tail}"
    return _british(word)


def _british(word: str) -> str:
    """The American spelling of a British one: colour, centre, organise, analyse, behaviour."""
    if len(word) < 5 or any(c.isdigit() for c in word):
        return word
    for british, american in (("iour", "ior"), ("lour", "lor"), ("vour", "vor"), ("nour", "nor"), ("bour", "bor"),
                              ("mour", "mor"), ("gour", "gor")):  # fmt: skip
        if word.endswith(british) or word.endswith(british + "s"):
            return word.replace(british, american)
    for british, american in (("tres", "ters"), ("tre", "ter")):
        if word.endswith(british) and len(word) > 5:
            return word[: -len(british)] + american
    for british, american in (("isation", "ization"), ("isations", "izations"), ("ising", "izing"), ("ised", "ized"),
                              ("ises", "izes"), ("yse", "yze"), ("ysed", "yzed"), ("ysing", "yzing")):  # fmt: skip
        if word.endswith(british) and len(word) > len(british) + 2:
            return word[: -len(british)] + american
    if (
        word.endswith("ise")
        and len(word) > 6
        and word
        not in (
            "exercise",
            "otherwise",
            "premise",
            "promise",
            "expertise",
            "enterprise",
            "compromise",
            "advise",
            "surprise",
            "franchise",
            "merchandise",
            "precise",
        )
    ):
        return word[:-3] + "ize"  # fmt: skip
    return word


def _split_contrast(text: str) -> tuple[str, str]:
    """``text`` without what a restated choice names as not chosen, and that: "pnpm, not npm, for the portal" ->
    ("pnpm for the portal", "npm")."""
    match = CONTRAST.search(text)
    ranked = RANKED_OVER.search(text) or RATHER_THAN.search(text)
    group = 1 if ranked is not None and ranked.group(1) else 2
    if ranked is not None and (match is None or ranked.start(group) < match.start()):
        start = ranked.start(group)
        rest = text[ranked.end(group) :]
        end = re.search(r"[,;.)\u2014]|\s(?:for|in|on|at|because|since|as|and|but|when)\s", rest)
        cut = end.start() if end else len(rest)
        return text[:start] + " " + rest[cut:], rest[:cut]
    if match is None:
        return text, ""
    rest = text[match.end() :]
    end = re.search(r"[,;.)\u2014]|\s(?:for|in|on|at|because|since|as|and|but)\s", rest)
    cut = end.start() if end else len(rest)
    return text[: match.start()] + " " + rest[cut:], rest[:cut]


def _names(text: str, *, inside_only: bool = False) -> frozenset[str]:
    """Capitalized words that do not start a sentence (Daniel, Postgres, BigQuery), canonical and lowercase; a
    capital at a sentence's start counts too unless it is a stop word, or with ``inside_only``, never."""
    found = set()
    starts = True
    for match in re.finditer(r"[.!?:;]\s+|" + CASED_WORD.pattern, text):
        token = match.group(0)
        if not token[0].isalnum():
            starts = True
            continue
        mixed = not token[0].isupper() and any(c.isupper() for c in token)  # camelCase, iOS, macOS
        at_start = starts and (inside_only or token.lower() in STOPWORDS)
        if mixed or (token[0].isupper() and not token.isupper() and not at_start):
            found.update(words(token))
        starts = False
    return frozenset(found)


@lru_cache(maxsize=65536)
def _capitals(text: str) -> frozenset[str]:
    """The words ``text`` writes in capitals as an acronym ("DWH", "VMs"), lowercase: they may stand for more than
    their words' initials (spelling.fold_acronyms)."""
    return frozenset(m.group(0).lower() for m in CAPITALS.finditer(text))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and w not in NEGATIONS}


@lru_cache(maxsize=65536)
def is_value(word: str) -> bool:
    """A word that names a value: has a digit (8080, 3.11, v2, 01:00), or is a day, a month, a unit."""
    if any(c.isalpha() for c in word) and any(c in word for c in "-_/@"):
        return False  # an identifier names a thing (cache-1, mob-812, db-main-r1), not a value of it
    if RECORD.fullmatch(word):
        return False
    return word in VALUE_WORDS or any(c.isdigit() for c in word)


def _is_identifier(word: str) -> bool:
    """A name made for machines: db-main, ci_cache, eu-west-1, max_connections."""
    return any(c in word for c in "-_/") and not word.endswith("-request") and not word.endswith("-requests")


def overlap(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _stem(word: str) -> str:
    word = _SYNONYM.get(word, word)
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _negated(text: str) -> bool:
    return any((w in NEGATIONS and w != "without") or w.endswith("n't") for w in words(text))


def _without(text: str) -> frozenset[str]:
    """What ``text`` says something is done without ("escalates after 15 min without an answer": answer)."""
    found = set()
    for match in re.finditer(r"\bwithout\s+((?:\w+\s+){0,2}?\w+)", text.lower()):
        found |= {w for w in words(match.group(1)) if w not in STOPWORDS}
    return frozenset(found)


def _antonyms(only_a: set[str] | frozenset[str], only_b: set[str] | frozenset[str]) -> tuple[str, str, bool] | None:
    """Words of opposite stance, one on each side: (a's, b's, whether they name a preference)."""
    for one, other in ANTONYMS:
        for x, y in ((one, other), (other, one)):
            left, right = only_a & x, only_b & y
            if left and right:
                return sorted(left)[0], sorted(right)[0], (one, other) == PREFERENCE
    return None


def _substitution(only_a: set[str] | frozenset[str], only_b: set[str] | frozenset[str]) -> str | None:
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
    return word.replace("-", "").replace("'", "").replace(".", "").replace("_", "")


@lru_cache(maxsize=262144)  # a job asks about the same few thousand words again and again
def _same_word(x: str, y: str) -> bool:
    """Two spellings or forms of one word: "wi-fi"/"wifi", "manage"/"manag", "max"/"maximum", "db"/"database"."""
    if x == y or _SYNONYMS.get(x, frozenset({x})) & _SYNONYMS.get(y, frozenset({y})):
        return True
    if "-" in x and "-" in y:  # identifiers (ci-cache-eu, db-prod-1): alike only when equal
        return _flat(x) == _flat(y)
    if is_value(x) or is_value(y):
        return _flat(x) == _flat(y)
    x, y = _flat(x), _flat(y)
    if x == y or _abbreviates(x, y) or _abbreviates(y, x):
        return True
    common = shared_prefix(x, y)
    return common >= 4 and common >= min(len(x), len(y)) - 1


def _abbreviates(short: str, long: str) -> bool:
    """ "db" for "database", "max" for "maximum", "cfg" for "config": its letters in order, starting alike."""
    if not short or not long or short[0] != long[0] or len(short) > len(long) // 2 + 1:
        return False
    letters = iter(long)
    return all(c in letters for c in short)


def _qualifiers(reading: Reading) -> set[str]:
    """The scope and time words of a memory, and its years (2023): where or when it holds."""
    found = {w.removesuffix("s") for w in reading.all_words if w in QUALIFIERS}  # "weekday" is "weekdays"
    return found | {w for w in reading.all_words if re.fullmatch(r"(?:19|20)\d\d", w)}


def _other_qualifiers(ra: Reading, rb: Reading) -> set[str]:
    """The scope and time words one memory has and the other does not name in any form ("development" is not
    another scope beside "devs")."""
    qa, qb = _qualifiers(ra), _qualifiers(rb)
    return {q for q in qa - qb if not any(_same_word(q, w) for w in rb.stems)} | {
        q for q in qb - qa if not any(_same_word(q, w) for w in ra.stems)
    }


def _in_place(ra: Reading, rb: Reading) -> bool:
    """Whether the words that differ sit in the same place of the same sentence ("caused by a race in token refresh"
    / "caused by a timeout in token refresh"): another value of one slot, not a rewording, however close."""
    seq_a = [w for w in ra.all_words if w in ra.content]
    seq_b = [w for w in rb.all_words if w in rb.content]
    if len(seq_a) != len(seq_b):
        return False
    return sum(x != y for x, y in zip(seq_a, seq_b, strict=True)) <= 2


def _values(words_: set[str] | frozenset[str]) -> set[str]:
    return {w for w in words_ if is_value(w) and w not in UNITS}


def _value_kind(word: str) -> str:
    """What a value measures, so "16" (a version) and "nightly" (a schedule) are not two values of one attribute."""
    if word in DAYS:
        return "day"
    if word in MONTHS:
        return "date"
    if word in FREQUENCIES:
        return "frequency"
    if word in DAYTIMES or re.fullmatch(r"\d{1,2}:\d\d", word):
        return "time"
    return "number" if any(c.isdigit() for c in word) else word


def _stance_word(word: str) -> bool:
    return word in _STANCE_WORDS


_STANCE_WORDS = frozenset({w for pair in ANTONYMS for side in pair for w in side} | CHANGE_WORDS | ROLES)


def _other_entities(a: Reading, b: Reading) -> str | None:
    """What names different things on each side: another person, product or identifier (not a value)."""

    def things(one: Reading, other: Reading) -> set[str]:
        only = one.content - other.content
        named = {
            w for w in only
            if (w in one.names or _is_identifier(w) or RECORD.fullmatch(w)) and not _stance_word(w) and not is_value(w)
        }  # fmt: skip
        return {w for w in named if not any(_same_word(w, y) for y in other.content)}

    left, right = things(a, b), things(b, a)
    if left and right:
        return f"{', '.join(sorted(left))} / {', '.join(sorted(right))}"
    return None


def _named_by_one(one: Reading, other: Reading) -> set[str]:
    """The people, products or identifiers ``one`` names and ``other`` does not in any form ("in English and Spanish"
    / "in Spanish"): merged into the other, that would be lost (or it was dropped since: a change, not a
    restatement). A capital that starts a sentence names nothing by itself ("Both ...", "Infra incidents ..."), and
    a word of a name the other has is that name written longer ("Apache Flink" / "Flink")."""
    only = one.content - other.content
    inside = _named_inside(one.text)
    named = {w for w in only if (w in inside or _is_identifier(w)) and not _stance_word(w) and not is_value(w)}
    named = {w for w in named if not any(_same_word(w, y) for y in other.content)}
    every = one.all_words
    beside = {
        every[k] for k in range(len(every))
        if any(0 <= n < len(every) and every[n] in other.names and every[n] in one.names for n in (k - 1, k + 1))
    }  # fmt: skip
    return named - beside


@lru_cache(maxsize=65536)
def _named_inside(text: str) -> frozenset[str]:
    """The capitalized words of ``text`` that do not start a sentence (read as a memory is read)."""
    return _names(spelling.rewrite(text), inside_only=True)


def _single_role(a: Reading, b: Reading) -> bool:
    return bool((a.content | b.content) & ROLES)


def is_duplicate(a: str, b: str, similarity: float) -> tuple[bool, str]:
    """Whether ``b`` (the newer) restates ``a`` (the older): close in meaning, mostly the same words once written
    alike, and nothing that changes the information: a value, a negation, an antonym, a person or thing, a scope or
    time, a stated change, or a name only the older gives (merged into the newer, it would be lost)."""
    if similarity < CLOSE_DUPLICATE_SIMILARITY and (
        similarity < SPELLED_SIMILARITY or not _may_spell_out(a, b)
    ):  # the cheap refusal of most of a job's pairs
        return False, f"similarity {similarity:.2f} < {CLOSE_DUPLICATE_SIMILARITY}"
    return _duplicate(*readings(a, b), similarity)


def _duplicate(ra: Reading, rb: Reading, similarity: float) -> tuple[bool, str]:
    if similarity < CLOSE_DUPLICATE_SIMILARITY:
        if similarity < SPELLED_SIMILARITY or not _spelled_out(ra, rb):
            return False, f"similarity {similarity:.2f} < {CLOSE_DUPLICATE_SIMILARITY}"
        # The embedder does not know that DWH is a data warehouse: the words, acronym folded, are read as at the
        # closer floor (most of them the same, nothing that changes the information).
        similarity = CLOSE_DUPLICATE_SIMILARITY
    share, contained = word_match(ra.stems, rb.stems)
    wanted = DUPLICATE_OVERLAP if similarity >= DUPLICATE_SIMILARITY else CLOSE_DUPLICATE_OVERLAP
    shorter, longer = sorted((len(ra.stems), len(rb.stems)))
    note = contained >= CONTAINED and shorter >= CONTAINED_WORDS and longer <= CONTAINED_LONGER * shorter
    if longer > SAYS_MORE * shorter + 2:
        return False, f"one says more: {longer} content words against {shorter}"
    if share < wanted and not note:
        return False, f"word overlap {share:.2f} < {wanted} at similarity {similarity:.2f}"
    # Under REWORDED_SIMILARITY a swap is a rewording only when the sentence is rephrased around it (not in place):
    # close in meaning and in words (the paraphrase score), or at DUPLICATE_SIMILARITY with the shared words in
    # another order ("The app sends analytics to Amplitude" / "Amplitude receives the app's analytics events").
    rephrased = similarity < REWORDED_SIMILARITY and (
        paraphrase(similarity, share) >= REWORDED_PARAPHRASE or similarity >= DUPLICATE_SIMILARITY
    )
    if why := _differs(ra, rb, reworded=similarity >= REWORDED_SIMILARITY or rephrased, rephrased=rephrased):
        return False, why
    return True, f"similarity {similarity:.2f}, word overlap {share:.2f}"


def _may_spell_out(a: str, b: str) -> bool:
    """Whether a pair under CLOSE_DUPLICATE_SIMILARITY may be one spelling out the other's acronym: two short
    statements (a fact of SPELLED_MAX_WORDS words at most, where one acronym moves the cosine; in a longer text it
    does not) of which one writes an acronym in capitals. Counted without reading them: most pairs of a job stop
    here."""
    if _long(a) or _long(b):
        return False
    return bool(_capitals(a) or _capitals(b))


@lru_cache(maxsize=65536)
def _long(text: str) -> bool:
    return len(text.split()) > SPELLED_MAX_WORDS


def _spelled_out(ra: Reading, rb: Reading) -> bool:
    """Whether one writes in capitals an acronym that the other spells out (folded into its words by readings)."""
    for one, other in ((ra, rb), (rb, ra)):
        folded = set(other.all_words) - set(Reading.of(other.text).all_words)
        if folded & _capitals(one.text):
            return True
    return False


def word_match(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> tuple[float, float]:
    """How much two sets of words share, counting two forms or spellings of one word as one ("autoscale" /
    "auto-scale", "grocery" / "groceri", "dev" / "development"): (Jaccard, the share of the smaller set found in the
    larger)."""
    if not a or not b:
        return (1.0, 1.0) if not a and not b else (0.0, 0.0)
    common = a & b
    rest_b = b - common
    matched = len(common)
    for x in a - common:
        y = next((y for y in rest_b if _same_word(x, y)), None)
        if y is not None:
            rest_b = rest_b - {y}
            matched += 1
    return matched / (len(a) + len(b) - matched), matched / min(len(a), len(b))


def paraphrase(similarity: float, share: float) -> float:
    """How surely two texts say the same in other words: the dense cosine, raised by the words they share."""
    return similarity + PARAPHRASE_WORDS * (share - 0.5)


def _differs(ra: Reading, rb: Reading, *, reworded: bool = False, rephrased: bool = False) -> str | None:
    """What makes two close texts say different things, or None when they say the same. ``reworded``: so close in
    meaning that one plain word for another is a rewording ("real" / "physical"), unless it names a thing."""
    if ra.negated != rb.negated:
        return "one of them is negated"
    if ra.change != rb.change:
        return "one of them states a change (an update, not a duplicate)"
    values = _values(ra.content ^ rb.content) | {w for w in ra.stems ^ rb.stems if w in UNITS}
    if values:
        return f"different values: {', '.join(sorted(values))}"
    if scopes := _other_qualifiers(ra, rb):
        return f"another scope or time: {', '.join(sorted(scopes))}"
    every_a, every_b = set(ra.all_words), set(rb.all_words)
    if (pair := _antonyms(every_a - every_b, every_b - every_a)) is not None:
        return f"opposite words: {pair[0]} / {pair[1]}"
    if ra.rejected and rb.rejected and word_match(ra.rejected, rb.rejected)[1] < 1.0:
        return "another alternative set aside"
    if _set_aside(ra, rb):
        return f"one sets aside what the other chose: {', '.join(sorted(_set_aside(ra, rb)))}"
    if (things := _other_entities(ra, rb)) is not None:
        return f"other people or things: {things}"
    if named := _named_by_one(ra, rb):  # the newer naming more loses nothing: it survives the merge
        return f"the older names what the newer does not: {', '.join(sorted(named))}"
    swap = _substitution(ra.stems - rb.stems, rb.stems - ra.stems)
    if swap is not None and (not reworded or _choice(ra, rb) or (rephrased and _in_place(ra, rb))):
        return f"one word for another: {swap}"
    return None


def conflict(a: str, b: str, similarity: float, *, shared_topics: bool = True) -> Conflict | None:
    """Whether ``a`` (the older) and ``b`` (the newer) may disagree, with a score in 0..1, why, the rule that found it
    and its kind ("update" when the newer states the change); None when nothing points to it.

    The pair must be about the same thing (dense similarity, raised when they share no topic or tag), not restate
    each other, not differ in scope, time or entity, and differ in stance: a negation on one side only, an antonym,
    a reversed preference, another value in the same frame, another person in a single-holder role, or another
    choice in the same sentence.
    """
    floor = CONTRADICTION_SIMILARITY if shared_topics else CONTRADICTION_SIMILARITY + 0.15
    if similarity < floor:
        return None
    ra, rb = readings(a, b)
    if _duplicate(ra, rb, similarity)[0]:
        return None  # the same information: dedupe's, never a contradiction
    if _other_qualifiers(ra, rb) and not {"only"} <= set(ra.all_words) & set(rb.all_words):
        return None  # "in summer" / "outside summer", "on staging" / "in production": both may hold
    found = _reasons(ra, rb, similarity)
    if not found:
        return None
    score, rule, why = max(found, key=lambda r: r[0])
    score = min(1.0, score * (0.7 + 0.3 * similarity))
    kind = "update" if rb.change and not ra.change else "contradiction"
    if kind == "update":
        why = f"the newer states a change; {why}" if rule != "update" else why
    return Conflict(round(score, 3), f"{why} (similarity {similarity:.2f})", rule, kind)


def _reasons(ra: Reading, rb: Reading, similarity: float) -> list[tuple[float, str, str]]:
    """Every rule that finds a disagreement: (score before similarity, rule, why)."""
    only_a, only_b = ra.content - rb.content, rb.content - ra.content
    frame = overlap({w for w in ra.stems if not is_value(w)}, {w for w in rb.stems if not is_value(w)})
    entities = _other_entities(ra, rb)
    subjects = entities is not None and _names_subject(ra, rb)
    scoped = _other_scope(only_a, only_b)
    found: list[tuple[float, str, str]] = []
    every_a, every_b = set(ra.all_words), set(rb.all_words)
    if (pair := _antonyms(every_a - every_b, every_b - every_a)) is not None and not subjects:
        rule = "preference" if pair[2] else "antonym"
        score = (0.55 + 0.4 * similarity) * (SCOPE_PENALTY if scoped or entities else 1.0)
        found.append((score, rule, f"opposite words: '{pair[0]}' against '{pair[1]}'"))
    if ra.negated != rb.negated and frame >= 0.4 and not subjects and _negation_shared(ra, rb):
        negated = "the newer" if rb.negated else "the older"
        score = (0.55 + 0.4 * frame) * (SCOPE_PENALTY if entities or scoped else 1.0)
        found.append((score, "negation", f"{negated} negates what the other states"))
    elif (chosen := _set_aside(ra, rb)) and frame >= 0.3:
        found.append((0.8, "choice", f"one sets aside what the other chose: {', '.join(sorted(chosen))}"))
    if (values := _value_change(ra, rb, frame)) is not None and not subjects:
        score = (0.45 + 0.5 * frame) * (SCOPE_PENALTY if scoped or entities else 1.0)
        found.append((score, "value", f"another value of the same attribute: {values}"))
    if (person := _person(ra, rb, frame)) is not None:
        found.append((0.85, "person", f"another person in the same role: {person}"))
    elif not found and frame >= 0.5 and not subjects:
        swap = _substitution(ra.stems - rb.stems, rb.stems - ra.stems)
        if swap is not None and _choice(ra, rb, both=True) and not (_values(only_a) or _values(only_b)):
            found.append((0.3 + 0.5 * frame, "choice", f"another choice in the same statement: {swap}"))
    if _same_order_reversed(ra, rb):
        found.append((0.75, "order", "the same words in another order (X over Y against Y over X)"))
    if not found and rb.change and not subjects and _updates(ra, rb):
        found.append((0.75, "update", "the newer states a change of what the older says"))
    return found


def _negation_shared(ra: Reading, rb: Reading) -> bool:
    """Whether the negation is in what the two say alike: the negated side's sentences that hold a negation share
    the frame with the other (NEGATION_FRAME). A text that repeats the other and adds a sentence with a "not" of its
    own ("B23 is altered in many cancers. Its molecular function is not fully understood.") negates nothing the
    other states."""
    negated, other = (ra, rb) if ra.negated else (rb, ra)
    stems = _negated_sentences(negated.text)
    if stems is None:
        return True
    frame = overlap({w for w in stems if not is_value(w)}, {w for w in other.stems if not is_value(w)})
    return frame >= NEGATION_FRAME


@lru_cache(maxsize=65536)
def _negated_sentences(text: str) -> frozenset[str] | None:
    """The content stems of the sentences of ``text`` that hold a negation; None when it is one sentence, or none of
    its sentences does (negated by "without" what the other names: the frame already tells)."""
    sentences = [s for s in SENTENCE.split(text) if s.strip()]
    if len(sentences) < 2:
        return None
    said = [spelling.rewrite(s) for s in sentences if _negated(spelling.rewrite(s))]
    if not said:
        return None
    return frozenset(_stem(w) for s in said for w in content_words(s))


def _set_aside(ra: Reading, rb: Reading) -> set[str]:
    """What one names as not chosen ("Vue, not React") and the other states ("written in React")."""
    return set((ra.rejected & (rb.content - rb.rejected)) | (rb.rejected & (ra.content - ra.rejected)))


def _value_change(ra: Reading, rb: Reading, frame: float) -> str | None:
    """Another value of the same kind (a time for a time, a day for a day) in the same frame: "port 8080" / "port
    9090", "every week" / "every 2 weeks" (weekly / biweekly). A value only one side gives is a detail the other
    leaves out ("Backups run nightly" / "... nightly at 02:00"), not another value: no labelled pair needed it, and
    on the bench's 50k corpus it raised a quarter of the background's candidates (docs/benchmarks.md)."""
    values_a, values_b = _values(ra.content - rb.content), _values(rb.content - ra.content)
    if not (values_a and values_b) or len(values_a) > MAX_VALUES or len(values_b) > MAX_VALUES:
        return None  # more than a few: a report of measurements (a study's rates and intervals), not one attribute's
    kinds_a, kinds_b = {_value_kind(w) for w in values_a}, {_value_kind(w) for w in values_b}
    if frame >= 0.4 and kinds_a & kinds_b:
        return f"{', '.join(sorted(values_a))} against {', '.join(sorted(values_b))}"
    return None


def _other_scope(only_a: set[str] | frozenset[str], only_b: set[str] | frozenset[str]) -> bool:
    """Both sides name something besides the stance words (values, antonyms, negations, changes): "enabled for
    feature branches" against "disabled for release branches" may both hold."""

    def rest(only: set[str] | frozenset[str]) -> set[str]:
        return {w for w in only if not is_value(w) and w not in UNITS and not _stance_word(w)}

    left, right = rest(only_a), rest(only_b)
    # Stops at the first word of each side that the other names in no form (a job asks this of every close pair).
    return any(not any(_same_word(x, y) for y in right) for x in left) and any(
        not any(_same_word(x, y) for x in left) for y in right
    )


def _names_subject(ra: Reading, rb: Reading) -> bool:
    """Whether what differs is what the statements are about (their first content word): "Daniel reviews ..." /
    "Chidi reviews ...", unless the statement is a role one person holds."""
    if _single_role(ra, rb):
        return False
    firsts = {next((w for w in r.all_words if w in r.content), "") for r in (ra, rb)}
    return bool(firsts - (ra.content & rb.content))


def _person(ra: Reading, rb: Reading, frame: float) -> str | None:
    """Another name in a role one person holds: "Priya owns billing" / "Marco owns billing"."""
    left, right = ra.names - rb.names - rb.content, rb.names - ra.names - ra.content
    if not left or not right or len(left) > 2 or len(right) > 2 or not _single_role(ra, rb) or frame < 0.3:
        return None
    return f"{', '.join(sorted(left))} / {', '.join(sorted(right))}"


def _choice(ra: Reading, rb: Reading, *, both: bool = False) -> bool:
    """Whether the words swapped name things chosen (capitalized, or a tool's lowercase name), not a rewording;
    ``both``: a thing on each side (one thing for another, as a contradiction needs)."""

    def named(only: frozenset[str]) -> bool:
        return any(w in ra.names or w in rb.names or _is_identifier(w) for w in only - CHANGE_WORDS)

    if both:
        return named(ra.content - rb.content) and named(rb.content - ra.content)
    return named(ra.content ^ rb.content)


def _same_order_reversed(ra: Reading, rb: Reading) -> bool:
    """ "X over Y" against "Y over X": the same words, another order, and a word that ranks."""
    if ra.content != rb.content or ra.negated or ra.rejected or rb.rejected:
        return False
    ranks = {"over", "than", "before", "after", "rather", "instead", "vs", "versus", "above", "below", "then"}
    if not (set(ra.all_words) & ranks):
        return False
    return [w for w in ra.all_words if w in ra.content] != [w for w in rb.all_words if w in rb.content]


def _updates(ra: Reading, rb: Reading) -> bool:
    """The newer repeats most of what the older says and adds what changed: "the frontend uses Jest" / "the
    frontend replaced Jest with Vitest"."""
    older = {w for w in ra.stems if w not in CHANGE_WORDS}
    if not older or len(older) > UPDATE_MAX_WORDS or len(rb.stems) > 2 * len(older) + 4:
        return False  # a long text shares words with many others; an update restates a short fact and its change
    covered = sum(any(_same_word(w, y) for y in rb.stems) for w in older) / len(older)
    added = {w for w in rb.stems - ra.stems if w not in CHANGE_WORDS and _stem(w) not in CHANGE_WORDS}
    added = {w for w in added if not any(_same_word(w, y) for y in ra.stems)}
    return covered >= UPDATE_COVERAGE and 0 < len(added) <= UPDATE_MAX_ADDED
