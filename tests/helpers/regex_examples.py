"""Realistic strings that a secret rule's regex matches, generated from the regex itself.

The generator walks the parsed pattern (Python's own ``re`` parser) and writes the plainest text around the
secret: the fewest repetitions, the first separator (``=``, a space), no optional parts. Inside a capturing
group (the secret) it draws random characters from the group's classes at a random length within the bounds,
so the secret has the entropy of a real one. :func:`example` retries seeds until the rule itself reports the
secret (entropy threshold, allowlists, checks), as a real leaked secret would be.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from engram.secrets.rules import SecretRule

_PRINTABLE = string.ascii_letters + string.digits + "+/=_.-"
# Outside the secret, a class stands for a separator: take the most ordinary character it allows.
_PLAIN = " =:_-.'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+\"`;,"
_CATEGORIES = {
    C.CATEGORY_DIGIT: string.digits,
    C.CATEGORY_NOT_DIGIT: string.ascii_letters + "_-./+=",
    C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    C.CATEGORY_NOT_WORD: " .-/+=:",
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits + "_-./+=",
}
_QUOTES_AND_BLANKS = "\"'` \t\r\n"
MAX_EXTRA = 24  # at most this many repetitions past the minimum, inside the secret


@dataclass(frozen=True)
class Example:
    """A generated string, the secret the rule reports in it, and the seed that produced it."""

    text: str
    secret: str
    seed: int


class _Generator:
    def __init__(self, pattern: re.Pattern[str], rng: random.Random) -> None:
        self.rng = rng
        self.groups: dict[int, str] = {}
        self.tree = sre_parse.parse(pattern.pattern, pattern.flags)

    def run(self) -> str:
        # A pattern without a group is all secret.
        return self.sequence(self.tree, secret=self.tree.state.groups == 1)

    def sequence(self, items: Any, *, secret: bool) -> str:
        return "".join(self.item(op, av, secret=secret) for op, av in items)

    def item(self, op: Any, av: Any, *, secret: bool) -> str:
        if op is C.LITERAL:
            return chr(av)
        if op is C.NOT_LITERAL:
            return next(c for c in "xa=" if ord(c) != av)
        if op is C.ANY:
            # Outside the secret a lone "." is nearly always a literal dot left unescaped (hooks.slack.com).
            return self.rng.choice(_PRINTABLE) if secret else "."
        if op is C.IN:
            return self.char_in(av, secret=secret)
        if op is C.BRANCH:
            return self.branch(av[1], secret=secret)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            low, high, sub = av
            if _blank_only(sub):
                return " " * max(low, 1 if not secret or high else 0)  # spacing is a single space
            count = self.count(low, high, secret=secret)
            if count == 0 and not secret and _class_has(sub, " "):
                return " "  # an optional separator that may be a space: people put one
            return "".join(self.sequence(sub, secret=secret) for _ in range(count))
        if op is C.SUBPATTERN:
            group, _, _, sub = av
            text = self.sequence(sub, secret=secret or group is not None)
            if group is not None:
                self.groups[group] = text
            return text
        if op is C.ATOMIC_GROUP:
            return self.sequence(av, secret=secret)
        if op is C.GROUPREF:
            return self.groups.get(av, "")
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return ""
        raise NotImplementedError(f"regex construct {op}")

    def count(self, low: int, high: int, *, secret: bool) -> int:
        if high is C.MAXREPEAT:
            high = low + MAX_EXTRA
        if not secret:
            return low
        return self.rng.randint(low, min(high, low + MAX_EXTRA))

    def branch(self, alternatives: list[Any], *, secret: bool) -> str:
        # Leave out alternatives that only end the text or need a literal backslash (JSON-escaped line breaks):
        # a realistic example is followed by more words.
        plain = [a for a in alternatives if not _ends_text(a) and not set(_literals(a)) & set('\\"')]
        choices = plain or alternatives
        if not secret:
            # A separator or terminator: the plainest spelling, a space or "=" if offered.
            for preferred in (" ", "="):
                for alternative in choices:
                    if _class_has(alternative, preferred):
                        return self.sequence(alternative, secret=secret)
        return self.sequence(self.rng.choice(choices), secret=secret)

    def char_in(self, items: list[Any], *, secret: bool) -> str:
        # As written, even under (?i): a rule's "[a-f0-9]{32}" stands for lower-case hex.
        allowed = _class_chars(items, False)
        if not allowed:
            return "x"
        if secret:
            # Secrets are made of token characters; quotes and blanks only where nothing else is allowed.
            tokens = sorted(allowed - set(_QUOTES_AND_BLANKS)) or sorted(allowed)
            return self.rng.choice(tokens)
        return next((c for c in _PLAIN if c in allowed), min(allowed))


def _class_chars(items: list[Any], ignore_case: bool = False) -> set[str]:
    negate = any(op is C.NEGATE for op, _ in items)
    chars: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op is C.CATEGORY:
            chars.update(_CATEGORIES.get(av, ""))
    if ignore_case:
        chars |= {c.swapcase() for c in chars if c.isalpha()}
    if negate:
        chars = set(_PRINTABLE + " :;,") - chars
    return {c for c in chars if c.isprintable() or c in " \t\n"}


def _blank_only(items: Any) -> bool:
    return len(items) == 1 and items[0][0] is C.IN and _class_chars(items[0][1], False) <= set(" \t\r\n")


def _ends_text(items: Any) -> bool:
    return any(op is C.AT and av in (C.AT_END, C.AT_END_STRING) for op, av in items)


def _literals(items: Any) -> str:
    return "".join(chr(av) for op, av in items if op is C.LITERAL)


def _class_has(items: Any, char: str) -> bool:
    """Whether ``items`` is one character (class) that may be ``char``, or a repetition of one."""
    if len(items) != 1:
        return False
    op, av = items[0]
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        return _class_has(av[2], char)
    return (
        (op is C.IN and char in _class_chars(av, False))
        or (op is C.NOT_LITERAL and av != ord(char))
        or (op is C.LITERAL and av == ord(char))
    )


def example(rule: SecretRule, *, tries: int = 300) -> Example | None:
    """A string the rule reports, with the secret it reports in it; None if no seed produced one."""
    for seed in range(tries):
        rng = random.Random(f"{rule.id}/{seed}")
        text = _Generator(rule.pattern, rng).run()
        if rule.keywords and not any(k in text.lower() for k in rule.keywords):
            # gitleaks runs a rule only where one of its keywords is: name it as people do, before the value.
            text = f"{rule.keywords[0]} {text}"
        for m in rule.pattern.finditer(text):
            span = rule.secret_span(m)
            if span is not None:
                return Example(text, text[span[0] : span[1]], seed)
    return None
