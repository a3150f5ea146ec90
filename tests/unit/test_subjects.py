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
    # A date's month is a value, not a thing each statement names on its own.
    ("Lidar calibration done on 4 February, error 0.8 mm", "Lidar recalibrated 20 June (after a crash), error 0.4 mm"),
    # A hyphenated English word (on-call) is no name the newer statement would have to repeat.
    ("On-call alerts go through Opsgenie", "We moved alerting from Opsgenie to incident.io"),
]
OTHER = [
    ("Storefront .nvmrc pins Node 18.19", "Storefront production URL is shop.acme.com"),
    ("Rotated the Cloudflare API token (2026-02-14)", "Rotated the Zendesk API token (2026-02-08)"),
    ("pgadmin on logs-1.internal: port 5050", "Consul on logs-1.internal: port 8500"),
    ("Kwame reviews the mobile pull requests", "Lucia reviews the mobile pull requests"),
    ("Rotated the Zendesk API token in March", "Rotated the Figma API token in March"),
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


def test_months_are_values_and_hyphenated_english_words_are_not_names() -> None:
    read = subject("Lidar calibration done on 4 February, error 0.8 mm")
    assert "february" in read.values and read.things == {"lidar"}
    assert subject("On-call paging moved to the bi-hourly rota").things == frozenset()
    assert subject("tally-web moved its cache to db-main").things == {"tally-web", "db-main"}


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


def test_a_newer_statement_is_found_below_the_first_ten_when_its_older_one_ranks_among_them() -> None:
    # "which tool pages the on-call engineer?": the replacement, worded unlike the question, ranks 12th by its own
    # match; the older statement it is tied to ranks first.
    others = [_hit(f"Note {k} about something else entirely", 2.0, 0.8 - k / 100, f"n{k}") for k in range(30)]
    old = _hit("On-call paging goes through Opsgenie", 1.0, 0.9, "old")
    new = _hit("We moved paging from Opsgenie to PagerDuty", 3.0, 0.3, "new")
    ordered = newest_of_subject([old, *others[:10], new, *others[10:]], "question")
    assert [h.memory.id for h in ordered[:2]] == ["new", "old"] and ordered[0].explain[SUBJECT][0] == 12
    too_far = newest_of_subject([old, *others[:25], _hit(new.memory.content, 3.0, 0.3, "new")], "question")
    assert too_far[0].memory.id == "old", "beyond twice the depth a statement is not what the query matched"
    below = newest_of_subject([*others[:10], old, new], "question")
    assert [h.memory.id for h in below[10:]] == ["old", "new"], "an older statement below the first ten moves nothing"


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
