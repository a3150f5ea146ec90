"""BIP39 seed phrases: 12 to 24 words of the BIP39 English word list in a row.

The word list and the checksum test are python-mnemonic's (Trezor's reference implementation of BIP39, MIT).
A run of list words is a seed phrase when it has a valid length and checksum, or when a word such as "seed",
"mnemonic" or "recovery" comes shortly before it in the same sentence (a phrase written down with a typo is
still a secret).
"""

from __future__ import annotations

import re

from mnemonic import Mnemonic

from engram.secrets.rules import Span

_BIP39 = Mnemonic("english")
WORDS = frozenset(_BIP39.wordlist)
LENGTHS = frozenset({12, 15, 18, 21, 24})
MIN_WORDS = 12
_CUE = re.compile(r"(?i)seed|mnemonic|recovery|passphrase|secret words|backup words|bip-?39|wallet")
_CUE_WINDOW = 80
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n")
_WORD = re.compile(r"[a-z]+")


def seed_phrase_span(m: re.Match[str], span: Span) -> Span | None:
    """The longest stretch of at least 12 list words in the matched run of words, if it is a seed phrase."""
    base = span[0]
    words = list(_WORD.finditer(m.string, span[0], span[1]))
    best: tuple[int, int] | None = None
    start = None
    for i, word in enumerate([*words, None]):
        if word is not None and word.group(0) in WORDS:
            if start is None:
                start = i
            continue
        if start is not None and i - start >= MIN_WORDS and (best is None or i - start > best[1] - best[0]):
            best = (start, i)
        start = None
    if best is None:
        return None
    chosen = words[best[0] : best[1]]
    found = chosen[0].start(), chosen[-1].end()
    if len(chosen) in LENGTHS and _BIP39.check(" ".join(w.group(0) for w in chosen)):
        return found
    before = m.string[max(0, min(base, found[0]) - _CUE_WINDOW) : found[0]]
    before = _SENTENCE_END.split(before)[-1]  # the cue must be in the same sentence
    return found if _CUE.search(before) else None
