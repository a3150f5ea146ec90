"""The newest statement of a subject first: a step of the search pipeline after fusion (issue 36).

Among the first hits, a memory saved later about the same subject as one ranked above it (engram.subjects: the
same thing and attribute, however worded: "Leo swims on Mondays" / "Leo's swimming moved to Thursdays") takes that
one's place, whether or not anyone marked it as an update, so a question about the present reads the present state
first. Identifier queries keep their order: whoever pastes "v2.14.0" wants the memory that says it.
"""

from __future__ import annotations

from engram.results import Hit
from engram.subjects import tie
from engram.updates import is_fact_sized

SUBJECT = "subject"  # explain: (the rank it held before it passed an older statement of its subject, their tie)
DEPTH = 10  # hits compared: a newer statement further down is not about what the query matched


def newest_of_subject(hits: list[Hit], kind: str, depth: int = DEPTH) -> list[Hit]:
    """``hits`` with, among the first ``depth``, each newer statement of a subject moved to the place of the first
    older statement of it ranked above (scores stay in rank order). ``kind``: the query's (queries.query_kind)."""
    if kind == "identifier" or depth < 2:
        return hits
    head, tail = list(hits[:depth]), hits[depth:]
    moved: set[str] = set()
    for _ in range(len(head)):  # each move puts a newer statement first; this bounds the passes
        found = _first_newer(head, moved)
        if found is None:
            break
        above, newer, strength = found
        hit = head[newer]
        hit.explain.setdefault(SUBJECT, (newer + 1, strength))
        hit.score = max(hit.score, head[above].score)
        moved.add(hit.memory.id)
        head.insert(above, head.pop(newer))
    return head + tail


def _first_newer(head: list[Hit], moved: set[str]) -> tuple[int, int, float] | None:
    """The first (above, newer, tie) where ``newer`` ranks below ``above``, was saved later, and speaks about the
    same subject; a hit that moved once does not move again (no cycles between two statements)."""
    for a, upper in enumerate(head):
        if not is_fact_sized(upper.memory.content):
            continue
        for b in range(a + 1, len(head)):
            lower = head[b]
            if lower.memory.id in moved or not is_fact_sized(lower.memory.content):
                continue
            if (lower.memory.created_at or 0.0) <= (upper.memory.created_at or 0.0):
                continue
            strength = tie(upper.memory.content, lower.memory.content)
            if strength > 0:
                return a, b, strength
    return None
