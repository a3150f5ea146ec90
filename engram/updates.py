"""Whether a text states a change: "moved to", "switched from X to Y", "now", "no longer", "was lowered to".

Search ranks a memory that states a change above an older memory about the same thing (newest first);
consolidation can read it as an update rather than a contradiction."""

from __future__ import annotations

import re

MAX_FACT_WORDS = 40  # longer texts (documents, abstracts) share topics without one restating the other

_CHANGE = re.compile(
    r"\b(?:now|no longer|anymore|moved|switched|replaced|replacing|took over|taken over|upgraded|downgraded|"
    r"migrated|changed|instead|raised|lowered|increased|decreased|reduced|cut|bumped|relaxed|tightened|resized|"
    r"renamed|retired|dropped|updated|rotated|again|back to|reverted|returns to|returned to|from \S.{0,40} to)\b",
    re.IGNORECASE,
)


def states_a_change(text: str) -> bool:
    """
    >>> states_a_change("Prod cluster is on Kubernetes 1.30 now"), states_a_change("We moved paging to PagerDuty")
    (True, True)
    >>> states_a_change("The API dev port is back to 8000"), states_a_change("Planning goes back to Monday")
    (True, True)
    >>> states_a_change("Prod cluster runs Kubernetes 1.28")
    False
    """
    return _CHANGE.search(text) is not None


def is_fact_sized(text: str) -> bool:
    """A sentence or two: short enough that a close match in meaning is the same fact said again."""
    return len(text.split()) <= MAX_FACT_WORDS
