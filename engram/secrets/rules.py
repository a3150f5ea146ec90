"""Secret-detection rules in gitleaks' TOML format, loaded for Python's ``re``.

A rule file holds ``[[rules]]`` with ``id``, ``regex``, ``keywords``, ``secretGroup``, ``entropy`` and
``[[rules.allowlists]]`` (``regexes``, ``stopwords``, ``regexTarget``, ``condition``), and a global
``[allowlist]``. gitleaks' rules are written for Go's RE2; :func:`translate` rewrites what Python's ``re``
reads differently. A rule finds a secret as gitleaks does: the keywords gate it, the regex finds a match, the
secret group names the secret, the entropy threshold and the allowlists drop what is not one.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RULES_DIR = Path(__file__).resolve().parent
GITLEAKS_FILE = RULES_DIR / "gitleaks.toml"
ENGRAM_FILE = RULES_DIR / "engram.toml"

# gitleaks puts `[\w.-]{0,50}?` in front of its keyword rules so that a finding shows the whole identifier
# ("MY_YANDEX_TOKEN = ..."). In a backtracking engine that lazy prefix is retried at every offset; it never
# decides whether there is a match, so it is cut from the pattern and the match is widened back over it
# afterwards (the "match" allowlists look at the identifier).
_LAZY_PREFIX = r"[\w.-]{0,50}?"
_PREFIX_CHARS = re.compile(r"[\w.-]{0,50}\Z", re.ASCII)
_POSIX_CLASSES = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": "0-9A-Za-z_",
    "space": r"\t\n\v\f\r ",
    "blank": r" \t",
    "punct": r"!-/:-@\[-`{-~",
}
# Go's unbounded `.*` can make Python's engine retry a whole line from every place it may start (RE2 never
# backtracks); a secret and its surroundings never need more than this many characters.
MAX_SPAN = 256
# Characters of a match's line, on each side of it, that an allowlist reading the line sees. A minified file's line
# can be megabytes, and reading all of it for every match made a scrub quadratic: a 200 KB line of key
# assignments took 2.7-4.4 s for the generic-api-key rule alone (tests/unit/test_secret_rules.py).
LINE_REACH = 1_000

Span = tuple[int, int]
# A rule's further test: given the match and its secret's span, the span to redact or None.
Check = Callable[[re.Match[str], Span], Span | None]


def translate(go: str) -> str:
    """A Go RE2 pattern as Python ``re`` reads it with the same meaning (compile it with ``re.ASCII``).

    - ``(?i)`` after the start becomes a scoped ``(?i:...)`` to the end of its group (Python accepts global
      flags only at the start);
    - POSIX classes (``[[:alnum:]]``) are spelled out, ``\\z`` is ``\\Z``, ``(?<name>`` is ``(?P<name>``;
    - ``.*``, ``.+`` and ``.{n,}`` (lazy or not) are bounded to :data:`MAX_SPAN` characters.
    """
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group: the flags turned on inside it so far, as scoped groups
    i, n = 0, len(go)
    while i < n:
        c = go[i]
        if c == "\\":
            nxt = go[i + 1 : i + 2]
            out.append(r"\Z" if nxt == "z" else c + nxt)
            i += 2
        elif c == "[":
            end = _class_end(go, i)
            out.append(_translate_class(go[i:end]))
            i = end
        elif c == "(":
            flags = re.match(r"\(\?([imsU-]+)\)", go[i:])
            if flags:
                if out:
                    out.append(f"(?{flags.group(1)}:")
                    scoped[-1].append(flags.group(1))
                else:
                    out.append(flags.group(0))
                i += len(flags.group(0))
                continue
            if go.startswith("(?<", i) and go[i + 3 : i + 4] not in ("=", "!"):
                out.append("(?P<")
                i += 3
            else:
                out.append(c)
                i += 1
            scoped.append([])
        elif c == "|":
            # In RE2 the flags hold for the later alternatives of the group too; a scoped group must not
            # swallow the "|", so it is closed before it and opened again after it.
            out.append(")" * len(scoped[-1]) + "|" + "".join(f"(?{f}:" for f in scoped[-1]))
            i += 1
        elif c == ")":
            out.append(")" * len(scoped.pop()) + ")")
            i += 1
        elif c == "." and (unbounded := re.match(r"\.(?:(\*)|(\+)|\{(\d+),\})", go[i:])):
            low = 0 if unbounded.group(1) else 1 if unbounded.group(2) else int(unbounded.group(3))
            out.append(f".{{{low},{max(low, MAX_SPAN)}}}")
            i += len(unbounded.group(0))
        else:
            out.append(c)
            i += 1
    out.append(")" * len(scoped[0]))
    return "".join(out)


def _class_end(go: str, start: int) -> int:
    """The index after the ``]`` that closes the class opened at ``start``."""
    i = start + 1
    if go[i : i + 1] == "^":
        i += 1
    if go[i : i + 1] == "]":
        i += 1
    while i < len(go):
        if go[i] == "\\":
            i += 2
        elif go.startswith("[:", i) and go.find(":]", i + 2) > 0:
            i = go.find(":]", i + 2) + 2
        elif go[i] == "]":
            return i + 1
        else:
            i += 1
    raise ValueError(f"unterminated character class in {go!r}")


def _translate_class(cls: str) -> str:
    def posix(m: re.Match[str]) -> str:
        return _POSIX_CLASSES[m.group(1)]

    body = re.sub(r"\[:([a-z]+):\]", posix, cls[1:-1])
    # Python warns about "[" and doubled "-&~|" in a class (possible future set operations): escape them.
    body = re.sub(r"(?<!\\)([\[&~|-])(?=\1)|(?<!\\)\[", lambda m: "\\" + m.group(0)[0], body)
    return "[" + body + "]"


def shannon_entropy(s: str) -> float:
    """Bits per character of ``s`` (0 for the empty string), as gitleaks and detect-secrets compute it."""
    if not s:
        return 0.0
    counts: dict[str, int] = {}
    for c in s:
        counts[c] = counts.get(c, 0) + 1
    n = len(s)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Findings a rule (or every rule) must not report: gitleaks' ``[[rules.allowlists]]``."""

    target: str  # "secret", "match" or "line": what the regexes are tried on
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]  # lower-cased; looked for inside the secret
    # condition = "AND" with paths or commits: text has neither, so such an allowlist never applies.
    never: bool = False
    all_of: bool = False

    def allows(self, secret: str, match: str, line: str) -> bool:
        if self.never:
            return False
        target = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(rx.search(target) for rx in self.regexes)
        lowered = secret.lower()
        by_stopword = any(w in lowered for w in self.stopwords)
        if self.all_of:
            checks = ([by_regex] if self.regexes else []) + ([by_stopword] if self.stopwords else [])
            return bool(checks) and all(checks)
        return by_regex or by_stopword


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One rule of a rule file, compiled."""

    id: str
    kind: str  # the redaction kind reported for it (engram.scrub.KINDS)
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]  # lower-cased; the rule runs only on text that contains one
    secret_group: int = 0  # 0: the first group that matched something, or the whole match if it has none
    entropy: float = 0.0  # a secret must have more bits per character than this
    allowlists: tuple[Allowlist, ...] = ()
    widen: bool = False  # the lazy identifier prefix was cut: widen the match back over it for allowlists
    # Judges a value by its surroundings only (gitleaks' generic-api-key, rules that also name a file path,
    # engram.toml's `generic = true`): engram.scrub runs these after its own rules.
    generic: bool = False
    check: Check | None = None  # a further test in Python (engram.toml's `check`)
    source: str = "gitleaks"  # the file that defines it: "gitleaks" or "engram"

    def secret_span(self, m: re.Match[str]) -> Span | None:
        """Where the secret of match ``m`` is, or None if the match is not reported."""
        span = self._group_span(m)
        if span is None:
            return None
        text = m.string
        secret = text[span[0] : span[1]]
        if self.entropy and shannon_entropy(secret) <= self.entropy:
            return None
        if self.check is not None:
            span = self.check(m, span)
            if span is None:
                return None
            secret = text[span[0] : span[1]]
        if self.allowlists:
            start = m.start()
            if self.widen:
                start -= len(_PREFIX_CHARS.search(text, max(0, start - 50), start).group(0))  # type: ignore[union-attr]
            match = text[start : m.end()].strip("\n")
            # The match's line, read no further than LINE_REACH either side of it.
            reach_start, reach_end = max(0, m.start() - LINE_REACH), min(len(text), m.end() + LINE_REACH)
            line_start = text.rfind("\n", reach_start, m.start()) + 1 or reach_start
            line_end = text.find("\n", m.end(), reach_end)
            line = text[line_start : reach_end if line_end < 0 else line_end]
            if any(a.allows(secret, match, line) for a in self.allowlists):
                return None
        return span

    def _group_span(self, m: re.Match[str]) -> Span | None:
        if self.secret_group:
            start, end = m.span(self.secret_group)
            return (start, end) if start < end else None
        for group in range(1, (m.re.groups or 0) + 1):
            start, end = m.span(group)
            if start < end:
                return start, end
        start, end = m.span()
        # gitleaks trims line breaks from a match that has no group
        while start < end and m.string[start] == "\n":
            start += 1
        while end > start and m.string[end - 1] == "\n":
            end -= 1
        return (start, end) if start < end else None


def load(
    base: Path,
    extension: Path | None = None,
    *,
    kinds: Mapping[str, str] | None = None,
    default_kind: str = "service_token",
    checks: Mapping[str, Check] | None = None,
) -> tuple[SecretRule, ...]:
    """The rules of the rule file ``base``, extended by ``extension`` as gitleaks' ``[extend]`` merges files.

    An extension rule with a new id is added (before the base rules, whose order is kept). One with a base
    rule's id changes that rule: its description, regex, entropy and secretGroup replace the base's, its
    keywords and allowlists are added. Both files' global allowlists apply to every rule, after its own.

    A rule's kind is its own ``kind`` field, else the longest prefix of its id in ``kinds``, else
    ``default_kind``. Path-only rules (no regex) are skipped: scrubbed text has no file name. A rule that also
    names a path is applied to any text, as a generic rule. A rule's ``check`` names a function of ``checks``.
    """
    config: dict[str, Any] = tomllib.loads(base.read_text())
    rules = {raw["id"]: {**raw, "source": base.stem} for raw in config["rules"]}
    allowlists = _global_allowlists(config)
    added: list[dict[str, Any]] = []
    if extension is not None:
        more: dict[str, Any] = tomllib.loads(extension.read_text())
        for raw in more.get("rules", []):
            if raw["id"] in rules:
                _merge(rules[raw["id"]], raw)
            else:
                added.append({**raw, "source": extension.stem})
        allowlists += _global_allowlists(more)
    shared = tuple(_allowlist(a) for a in allowlists)
    return tuple(
        _compile(raw, shared, kinds or {}, default_kind, checks or {})
        for raw in [*added, *rules.values()]
        if "regex" in raw
    )


def _global_allowlists(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    return _as_list(config.get("allowlist")) + list(config.get("allowlists", []))


def _merge(rule: dict[str, Any], change: Mapping[str, Any]) -> None:
    for key, value in change.items():
        if key in ("keywords", "allowlists"):
            rule[key] = [*rule.get(key, []), *value]
        elif key != "id":
            rule[key] = value


def _compile(
    raw: Mapping[str, Any],
    shared: tuple[Allowlist, ...],
    kinds: Mapping[str, str],
    default_kind: str,
    checks: Mapping[str, Check],
) -> SecretRule:
    pattern, widen = _strip_prefix(translate(raw["regex"]))
    return SecretRule(
        id=raw["id"],
        kind=raw.get("kind") or _kind(raw["id"], kinds, default_kind),
        pattern=re.compile(pattern, re.ASCII),
        keywords=tuple(k.lower() for k in raw.get("keywords", [])),
        secret_group=int(raw.get("secretGroup", 0)),
        entropy=float(raw.get("entropy", 0.0)),
        allowlists=(*(_allowlist(a) for a in raw.get("allowlists", [])), *shared),
        widen=widen,
        generic=bool(raw.get("generic")) or raw["id"].startswith("generic") or "path" in raw,
        check=checks[raw["check"]] if "check" in raw else None,
        source=raw["source"],
    )


def _as_list(value: object) -> list[dict[str, Any]]:
    return [value] if isinstance(value, dict) else []


def _kind(rule_id: str, kinds: Mapping[str, str], default: str) -> str:
    matches = [prefix for prefix in kinds if rule_id.startswith(prefix)]
    return kinds[max(matches, key=len)] if matches else default


def _allowlist(raw: Mapping[str, Any]) -> Allowlist:
    all_of = str(raw.get("condition", "OR")).upper() == "AND"
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(re.compile(translate(rx), re.ASCII) for rx in raw.get("regexes", [])),
        stopwords=tuple(w.lower() for w in raw.get("stopwords", [])),
        never=all_of and bool(raw.get("paths") or raw.get("commits")),
        all_of=all_of,
    )


def _strip_prefix(pattern: str) -> tuple[str, bool]:
    """Cut gitleaks' leading ``[\\w.-]{0,50}?`` (also inside a leading ``(?i:``); True if one was cut."""
    head = re.match(r"(?:\(\?i\)|\(\?i:)*", pattern)
    assert head is not None
    at = head.end()
    widened = False
    while pattern.startswith(_LAZY_PREFIX, at) or pattern.startswith("(?i:" + _LAZY_PREFIX, at):
        if pattern.startswith(_LAZY_PREFIX, at):
            pattern = pattern[:at] + pattern[at + len(_LAZY_PREFIX) :]
        else:
            at += len("(?i:")
        widened = True
    return pattern, widened
