"""Secret scrubbing: credentials in text and metadata are replaced by markers before anything is stored."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

REDACTION_MARKER_FORMAT = "[REDACTED:{kind}]"

# Every kind scrub_text can report, for callers that want to document or filter them.
KINDS = (
    "api_key",
    "aws_access_key",
    "basic_auth",
    "bearer_token",
    "engram_key",
    "github_token",
    "google_api_key",
    "jwt",
    "password_assignment",
    "private_key",
    "slack_token",
    "url_password",
)


@dataclass(frozen=True, slots=True)
class Redaction:
    """``count`` secrets of one ``kind`` were replaced by ``[REDACTED:<kind>]``."""

    kind: str
    count: int


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """Scrubbed text plus what was removed from it (kinds sorted, counts summed)."""

    text: str
    redactions: tuple[Redaction, ...]

    @property
    def count(self) -> int:
        """Total number of secrets replaced."""
        return sum(r.count for r in self.redactions)


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return REDACTION_MARKER_FORMAT.format(kind=kind)


# --- rules -------------------------------------------------------------------------------------------------
#
# Every pattern is written to run in linear time on hostile input:
# - a negative lookbehind of the token's own alphabet lets a match start only at the beginning of a run of
#   token characters, so a 100 kB run is tried once, not at each of its 100k offsets;
# - possessive quantifiers (Python 3.11+) over classes that cannot match what follows them, so a failed
#   attempt never backtracks through the run; quantifiers that must backtrack are bounded.
# Rules that need judgement ("is this really a key?") do it in Python on the match, which is cheaper to read
# and to get right than lookaheads.

_Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Returns the span of the secret inside the text (only that part is replaced, so "Bearer", the URL's
    # user and host, the "password=" etc. survive), or None when the match turns out not to be a secret.
    secret: Callable[[re.Match[str]], _Span | None]


def _whole(m: re.Match[str]) -> _Span | None:
    return m.span()


def _group(name: str) -> Callable[[re.Match[str]], _Span | None]:
    def span(m: re.Match[str]) -> _Span | None:
        return m.span(name)

    return span


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _tail_with_digit(prefix_len: int) -> Callable[[re.Match[str]], _Span | None]:
    # Random keys of 20+ characters practically always contain a digit; words, identifiers and package names
    # ("sk-learn-compatible", "xoxo-hugs-and-kisses") mostly don't.
    def span(m: re.Match[str]) -> _Span | None:
        return m.span() if _has_digit(m.group(0)[prefix_len:]) else None

    return span


_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    # Body: base64, PEM headers ("Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,..."), real or
    # JSON-escaped ("\n") line breaks; it can't contain "-----", so it stops at the END line.
    r"(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+"
    # END is optional: a truncated key (a log line cut short) is still a secret, so the header and whatever
    # base64 follows it are removed.
    r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)

_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<prefix>[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@?#\[\]]{0,256}+:)"
    # Greedy and bounded so it backtracks to the *last* "@" of the authority, as URL parsers do: a password
    # containing a raw "@" is removed entirely instead of leaking its tail.
    r"(?!\[REDACTED:)(?P<secret>[^\s/?#]{1,256})(?=@)"
)

_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]*+")

# OpenAI ("sk-", "sk-proj-", "sk-svcacct-") and Anthropic ("sk-ant-api03-") keys.
_SK_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}+")
# Stripe secret and restricted keys, same family of mistakes.
_STRIPE_KEY = re.compile(r"(?<![A-Za-z0-9_-])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}+")
_GITHUB_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?:gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{40,}+)")
_SLACK_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])xox[abeoprs]-[A-Za-z0-9-]{10,}+")
_AWS_ACCESS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_GOOGLE_API_KEY = re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
# Engram's own API keys (engram.keys): "engram_<8 hex>_<43 base64url>".
_ENGRAM_KEY = re.compile(r"(?<![A-Za-z0-9_-])engram_[A-Za-z0-9_-]{20,}+")
_ENGRAM_KEY_EXACT = re.compile(r"engram_[0-9a-f]{8}_[A-Za-z0-9_-]{43}")


def _engram_key(m: re.Match[str]) -> _Span | None:
    token = m.group(0)
    if _ENGRAM_KEY_EXACT.fullmatch(token):
        return m.span()
    # Other long random tails (an older or hand-made key) have mixed case and digits; snake_case identifiers
    # such as engram_consolidation_interval_seconds don't.
    tail = token[len("engram_") :]
    if len(tail) >= 30 and _has_digit(tail) and tail.lower() != tail and tail.upper() != tail:
        return m.span()
    return None


_BASIC_AUTH = re.compile(
    r"(?P<prefix>(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+)"
    r"(?P<secret>[A-Za-z0-9+/]{8,}+={0,2}+)"
)

_BEARER = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<prefix>(?i:bearer)[ \t]+)(?!\[REDACTED:)(?P<secret>[A-Za-z0-9._~+/=-]{8,}+)"
)


def _bearer(m: re.Match[str]) -> _Span | None:
    # "Bearer bonds" is prose; a token has a digit or is long.
    token = m.group("secret")
    return m.span("secret") if _has_digit(token) or len(token) >= 20 else None


# Generic assignments: `api_key=...`, `"apiKey": "..."`, `DB_PASSWORD: ...`, `password => '...'`,
# `secret: str = "..."`. The key is a whole identifier (lookbehind) that *ends* in one of the cores, so
# OPENAI_API_KEY and client_secret match while password_hash and token_count don't.
# "token" covers GITHUB_TOKEN, HF_TOKEN, access_token, x-auth-token through the prefix.
_API_KEY_CORE = r"api[_-]?key|token"
_PASSWORD_CORE = r"pass(?:word|wd|phrase)|secret(?:[_-]?(?:access[_-]?)?key)?"
_KEY_PREFIX = r"[A-Za-z0-9_.-]{0,40}?"
_ASSIGNMENT_TAIL = (
    r"(?P<close>\\?[\"']|)[ \t]*"
    r"(?P<sep>=>|:=|(?::[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,60}+)?=(?![=~])|:(?![:/]))[ \t]*"
    r"(?:\\?\"(?P<dq>[^\"\r\n]{1,1024}?)\\?\""
    r"|\\?'(?P<sq>[^'\r\n]{1,1024}?)\\?'"
    r"|(?P<bare>[^\s\"'`,;&|()\[\]{}<>]{1,1024}+))"
)


def _assignment_pattern(core: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_.-])(?P<key>{_KEY_PREFIX}(?:{core})){_ASSIGNMENT_TAIL}", re.IGNORECASE)


_PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_MASKED = re.compile(r"[*xX.]+")


def _assignment(m: re.Match[str]) -> _Span | None:
    """Decide whether the value of a matched assignment is a literal secret rather than code or prose."""
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    value = m.group(group).strip()
    if not value or value.startswith("[REDACTED:") or value.lower() in _PLACEHOLDERS:
        return None
    if _MASKED.fullmatch(value):  # already masked: "****", "xxxx"
        return None
    if value[0] in "$%{<":  # references and templates: $DB_PASS, ${X}, %(pw)s, {{ secret }}, <your-key>
        return None
    if group != "bare":
        return m.span(group)
    # Unquoted values are ambiguous: they may be code rather than a literal.
    key_name = re.split(r"[.\-]", m.group("key"))[-1]
    if (
        m.string[m.end() : m.end() + 1] in ("(", "[")  # password=get_password(), key=keys[0]
        or _DOTTED_IDENTIFIER.fullmatch(value)  # password=args.password, api_key=os.environ
        or _CONSTANT_NAME.fullmatch(value)  # api_key=OPENAI_API_KEY
        or value.lower() == key_name.lower()  # password=password
    ):
        return None
    if m.group("sep") == ":" and value.isalpha():
        # "Password: the one we discussed" is prose; "password: hunter" alone on its line (YAML) is not.
        line_end = m.string.find("\n", m.end())
        rest = m.string[m.end() : line_end if line_end >= 0 else len(m.string)].strip()
        if rest and not rest.startswith("#"):
            return None
    return m.span(group)


# Order matters: multi-line and structured secrets first, so that e.g. the JWT inside "Bearer eyJ..." or the
# sk- key inside "api_key=sk-..." is reported under its specific kind, and the generic rules then skip the
# marker it left behind.
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PRIVATE_KEY, _whole),
    _Rule("url_password", _URL_PASSWORD, _group("secret")),
    _Rule("jwt", _JWT, _whole),
    _Rule("api_key", _SK_KEY, _tail_with_digit(len("sk-"))),
    _Rule("api_key", _STRIPE_KEY, _whole),
    _Rule("github_token", _GITHUB_TOKEN, _whole),
    _Rule("slack_token", _SLACK_TOKEN, _tail_with_digit(len("xoxb-"))),
    _Rule("aws_access_key", _AWS_ACCESS_KEY, _whole),
    _Rule("google_api_key", _GOOGLE_API_KEY, _whole),
    _Rule("engram_key", _ENGRAM_KEY, _engram_key),
    _Rule("basic_auth", _BASIC_AUTH, _group("secret")),
    _Rule("bearer_token", _BEARER, _bearer),
    _Rule("api_key", _assignment_pattern(_API_KEY_CORE), _assignment),
    _Rule("password_assignment", _assignment_pattern(_PASSWORD_CORE), _assignment),
)

# For metadata: a dict key that names a secret makes its whole string value one.
_SECRET_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("password_assignment", re.compile(rf"{_KEY_PREFIX}(?:{_PASSWORD_CORE})", re.IGNORECASE)),
    ("api_key", re.compile(rf"{_KEY_PREFIX}(?:{_API_KEY_CORE})", re.IGNORECASE)),
)


# --- API ---------------------------------------------------------------------------------------------------


def scrub_text(text: str) -> ScrubResult:
    """Replace every secret found in ``text`` by ``[REDACTED:<kind>]``, keeping the text around it.

    Idempotent: scrubbing already scrubbed text changes nothing and reports nothing.
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub_text expects str, got {type(text).__name__}")
    counts: dict[str, int] = {}
    for rule in _RULES:
        text = rule.pattern.sub(_replacer(rule, counts), text)
    return ScrubResult(text, merge(Redaction(k, c) for k, c in counts.items()))


def _replacer(rule: _Rule, counts: dict[str, int]) -> Callable[[re.Match[str]], str]:
    mark = marker(rule.kind)

    def replace(m: re.Match[str]) -> str:
        span = rule.secret(m)
        if span is None:
            return m.group(0)
        counts[rule.kind] = counts.get(rule.kind, 0) + 1
        whole, base = m.group(0), m.start()
        return whole[: span[0] - base] + mark + whole[span[1] - base :]

    return replace


def scrub_value(value: object) -> tuple[object, list[Redaction]]:
    """Scrub a JSON-like value (e.g. memory metadata) recursively.

    Strings are scrubbed with :func:`scrub_text`; dicts keep their keys, lists and tuples their shape; other
    values (numbers, bools, None) are returned as they are. A string stored under a key that names a secret
    ("password", "api_key", "GITHUB_TOKEN", ...) is replaced whole, since the key is all the evidence there
    is. The input is not modified. Returns the new value and the merged redaction counts.
    """
    counts: dict[str, int] = {}
    out = _scrub(value, counts)
    return out, list(merge(Redaction(k, c) for k, c in counts.items()))


def _scrub(value: object, counts: dict[str, int]) -> object:
    if isinstance(value, str):
        result = scrub_text(value)
        for r in result.redactions:
            counts[r.kind] = counts.get(r.kind, 0) + r.count
        return result.text
    if isinstance(value, dict):
        out: dict[object, object] = {}
        for key, item in value.items():
            kind = _secret_key_kind(key) if isinstance(item, str) else None
            if kind is not None and item and not item.startswith("[REDACTED:"):
                counts[kind] = counts.get(kind, 0) + 1
                out[key] = marker(kind)
            else:
                out[key] = _scrub(item, counts)
        return out
    if isinstance(value, list):
        return [_scrub(item, counts) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item, counts) for item in value)
    return value


def _secret_key_kind(key: object) -> str | None:
    if not isinstance(key, str):
        return None
    for kind, pattern in _SECRET_KEYS:
        if pattern.fullmatch(key):
            return kind
    return None


def merge(*groups: Iterable[Redaction]) -> tuple[Redaction, ...]:
    """Combine redaction lists: counts summed per kind, kinds sorted by name, zero counts dropped."""
    totals: dict[str, int] = {}
    for group in groups:
        for r in group:
            totals[r.kind] = totals.get(r.kind, 0) + r.count
    return tuple(Redaction(kind, totals[kind]) for kind in sorted(totals) if totals[kind])
