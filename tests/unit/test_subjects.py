"""Subjects (engram/subjects.py) and the newest statement of a subject first (services/search/latest.py): which
memories speak about one subject, and how search orders them."""

from __future__ import annotations

import pytest

from engram.model import Memory
from engram.results import Hit
from engram.services.search.latest import SUBJECT, newest_of_subject
from engram.subjects import subject, tie

SAME = [
    ("The API dev server listens on port 8080", "The API dev port is back to 8000"),
    ("tally-web installs its packages with npm", "tally-web moved from npm to pnpm 9"),
    ("Planning is on Tuesdays at 10:00", "Planning goes back to Monday at 11:00"),
    ("Leo swims on Mondays at 18:00", "Leo's swimming moved to Thursdays 17:30"),
    ("design-system unit tests run on Jest", "design-system moved its unit tests from Jest to Vitest"),
    ("PgBouncer for staging listens on 6432", "Staging PgBouncer moved to port 6543 after the pooler rebuild"),
]
OTHER = [
    ("Storefront .nvmrc pins Node 18.19", "Storefront production URL is shop.acme.com"),
    ("Rotated the Cloudflare API token (2026-02-14)", "Rotated the Zendesk API token (2026-02-08)"),
    ("pgadmin on logs-1.internal: port 5050", "Consul on logs-1.internal: port 8500"),
    ("Kwame reviews the mobile pull requests", "Lucia reviews the mobile pull requests"),
]


@pytest.mark.parametrize(("older", "newer"), SAME)
def test_two_statements_of_one_subject_are_tied_however_the_newer_is_worded(older: str, newer: str) -> None:
    assert tie(older, newer) > 0


@pytest.mark.parametrize(("older", "newer"), OTHER)
def test_other_attributes_or_other_entities_in_one_template_are_not_tied(older: str, newer: str) -> None:
    assert tie(older, newer) == 0


def test_values_and_change_words_are_what_differs_not_what_a_memory_is_about() -> None:
    read = subject("The API dev port is back to 8000")
    assert "8000" in read.values and "8000" not in read.frame
    assert subject("tally-web moved from npm to pnpm 9").changes


def _hit(content: str, created: float, score: float, memory_id: str) -> Hit:
    return Hit(Memory(id=memory_id, namespace="n", content=content, owner_agent="a", created_at=created), score)


def test_the_newest_statement_of_a_subject_takes_the_place_of_an_older_one_ranked_above_it() -> None:
    hits = [
        _hit("Planning is on Tuesdays at 10:00", 1.0, 0.9, "old"),
        _hit("Storefront production URL is shop.acme.com", 2.0, 0.8, "neighbour"),
        _hit("Planning goes back to Monday at 11:00", 3.0, 0.5, "new"),
    ]
    ordered = newest_of_subject(hits, "question")
    assert [h.memory.id for h in ordered] == ["new", "old", "neighbour"]
    assert ordered[0].score == 0.9 and ordered[0].explain[SUBJECT][0] == 3


def test_an_identifier_query_and_an_older_statement_below_keep_their_order() -> None:
    hits = [_hit("Planning goes back to Monday at 11:00", 3.0, 0.9, "new"),
            _hit("Planning is on Tuesdays at 10:00", 1.0, 0.8, "old")]  # fmt: skip
    assert [h.memory.id for h in newest_of_subject(hits, "question")] == ["new", "old"]
    flipped = list(reversed(hits))
    assert [h.memory.id for h in newest_of_subject(flipped, "identifier")] == ["old", "new"]


def test_the_contradiction_job_also_compares_statements_of_one_subject_that_are_not_nearest_neighbours() -> None:
    import numpy as np

    from engram.services.consolidation.ties import MAX_GROUP, tied_pairs

    texts = ["Ravi prefers blue-green deploys for the payments service",
             "Ravi dislikes blue-green deploys for the payments service and wants rolling updates",
             "Rotated the Zendesk API token", "Rotated the Figma API token"]  # fmt: skip
    vectors = np.eye(4, dtype=np.float32) * 0.5 + 0.5 / np.sqrt(4)  # every pair alike enough
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    found = tied_pairs(texts, vectors, 0.3, known=set())
    assert [(i, j) for i, j, _ in found] == [(0, 1)], "one subject; two entities in one template are not tied"
    assert tied_pairs(texts, vectors, 0.3, known={(0, 1)}) == [], "a pair compared already is not added again"
    crowd = [f"Ravi note {k}: the payments service deploys blue-green" for k in range(MAX_GROUP + 1)]
    many = np.ones((len(crowd), 4), dtype=np.float32) / 2
    assert tied_pairs(crowd, many, 0.3, known=set()) == [], "a thing every memory names ties nothing by itself"


@pytest.mark.parametrize("text", ["", ":", "...", "   ", "the a of"])
def test_texts_with_no_words_to_compare_are_tied_to_nothing(text: str) -> None:
    # A search for ":" reached this with both sides empty and divided by zero (the MCP fuzz test found it).
    assert tie(text, text) == 0.0
    assert tie(text, "The API dev port is back to 8000") == 0.0
