"""What kind of question a search query is, which decides how its retrievers are fused (docs/search.md).

Agents ask in three ways, and each wants its own mix of exact and semantic matching:
- ``identifier``: ids, error strings, paths, ports, commands ("JIRA-4821", "ERR_CART_LOCKED", "pnpm -r build").
  Only exact matching finds them; BM25 leads.
- ``question``: a natural-language question that names nothing ("what temperature should the study be heated to").
  Its words are common ones, and one shared word must not beat a strong semantic match; meaning leads.
- ``named``: a question about a named person or thing ("When did Caroline go to the LGBTQ support group?"), or a
  statement (a claim, a keyword phrase). Rare names and terms carry it; both retrievers count.
"""

from __future__ import annotations

import re
from typing import Literal

QueryKind = Literal["identifier", "question", "named"]
KINDS: tuple[QueryKind, ...] = ("identifier", "question", "named")

IDENTIFIER_SHARE = 0.5  # this share of the words looking like identifiers makes the query one
# A word that only code, tickets, hosts, paths, versions or commands contain: a backticked span, a word with a digit,
# an underscore, a slash or a dot inside, ALL CAPS of two letters or more, camelCase, or a --flag.
_IDENTIFIER_WORD = re.compile(
    r"`[^`]+`|\S*\d\S*|\S*[_/\\]\S*|[A-Z]{2,}[A-Z0-9]*|\w+\.\w\S*|[a-z]+[A-Z]\w*|--?[A-Za-z][\w-]*"
)
_COMMAND_WORD = re.compile(r"`[^`]+`|--?[A-Za-z][\w-]*")  # a command's flag or a backticked span: always exact
_BACKTICKED = re.compile(r"`[^`]+`")
_QUESTION_WORDS = frozenset(
    ("who", "whom", "whose", "what", "when", "where", "which", "why", "how", "is", "are", "was", "were", "do", "does",
     "did", "can", "could", "should", "would", "will", "have", "has", "had")
)  # fmt: skip
_EDGE_PUNCTUATION = "?,.!;:()'\"\u201c\u201d\u2018\u2019"
# Words of a query about past sessions themselves (what was done, when), which session summaries answer best.
_ABOUT_SESSIONS = re.compile(
    r"\b(sessions?|summar(y|ies|i[sz]e)|recap|yesterday|last (time|week|night)|earlier today)\b",
    re.IGNORECASE,
)


def query_kind(query: str) -> QueryKind:
    """
    >>> [query_kind(q) for q in ("JIRA-4821", "pnpm -r build", "ERR_CART_LOCKED", "port 8443")]
    ['identifier', 'identifier', 'identifier', 'identifier']
    >>> query_kind("what coding tools do I use"), query_kind("why did we change the date library?")
    ('question', 'question')
    >>> query_kind("When did Caroline go to the support group?"), query_kind("Vitamin D lowers the risk of falls")
    ('named', 'named')
    >>> query_kind("what do we know about ERR_CART_LOCKED?"), query_kind("what is the minimum TLS version?")
    ('named', 'question')
    """
    words = query.split()
    if not words:
        return "named"
    stripped = [w.strip(_EDGE_PUNCTUATION) for w in words]
    identifiers = sum(1 for w in stripped if _IDENTIFIER_WORD.fullmatch(w))
    command = any(_COMMAND_WORD.fullmatch(w) for w in words) or bool(_BACKTICKED.search(query))
    if identifiers / len(words) >= IDENTIFIER_SHARE or command:
        return "identifier"
    asks = query.rstrip().endswith("?") or words[0].lower() in _QUESTION_WORDS
    # A capital after the first word names someone or something (the first word is capitalised anyway), and so does
    # an identifier ("what do we know about 3f2a9c1?", "at what time does orders_daily run?"), but not an acronym
    # (TLS, UI), which questions use as words.
    names = any(w[:1].isupper() and not w.isupper() for w in words[1:]) or any(
        _IDENTIFIER_WORD.fullmatch(w) and not (w.isalpha() and w.isupper()) for w in stripped
    )
    return "question" if asks and not names else "named"


def about_sessions(query: str) -> bool:
    """Whether a query asks about past sessions themselves, not what they found.

    >>> about_sessions("what did we do in yesterday's session?"), about_sessions("why does the login test fail?")
    (True, False)
    """
    return bool(_ABOUT_SESSIONS.search(query))
