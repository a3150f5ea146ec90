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
DEPTH = 10  # an older statement ranked this high is about what the query matched ...
REACH = 2  # ... and its newer statement is looked for among this many times as many hits: what tie()s it to the older
# one makes it an answer, however unlike the question it is worded ("which tool pages the on-call engineer?" / "We
# moved paging from Opsgenie to PagerDuty", 12th by its own match)


def newest_of_subject(hits: list[Hit], kind: str, depth: int = DEPTH) -> list[Hit]:
    """``hits`` with each newer statement of a subject among the first ``depth`` * REACH moved to the place of the
    first older statement of it ranked above, among the first ``depth`` (scores stay in rank order). ``kind``: the
    query's (queries.query_kind)."""
    if kind == "identifier" or depth < 2:
        return hits
    head, tail = list(hits[: depth * REACH]), hits[depth * REACH :]
    moved: set[str] = set()
    for _ in range(len(head)):  # each move puts a newer statement first; this bounds the passes
        found = _first_newer(head, moved, depth)
        if found is None:
            break
        above, newer, strength = found
        hit = head[newer]
        hit.explain.setdefault(SUBJECT, (newer + 1, strength))
        hit.score = max(hit.score, head[above].score)
        moved.add(hit.memory.id)
        head.insert(above, head.pop(newer))
    return head + tail


def _first_newer(head: list[Hit], moved: set[str], depth: int) -> tuple[int, int, float] | None:
    """The first (above, newer, tie) where ``above`` is among the first ``depth``, ``newer`` ranks below it, was
    saved later, and speaks about the same subject; a hit that moved once does not move again (no cycles between two
    statements)."""
    for a, upper in enumerate(head[:depth]):
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
