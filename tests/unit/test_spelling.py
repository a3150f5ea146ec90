"""The normalisation layer consolidation compares memories through (services/consolidation/spelling.py and the
pair readings of stance.py): periods, ranges, ordinals, acronyms and joined words written one way, and every guard
that tells an update or another fact from a restatement still in front of a merge."""

from __future__ import annotations

import pytest

from engram.services.consolidation import spelling, stance


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("Water bills are paid every three months.", "Water bills are paid quarterly."),
        ("Recycling goes out every other Thursday.", "Recycling goes out biweekly Thursday."),
        ("Recycling goes out on alternate Thursdays.", "Recycling goes out on biweekly Thursdays."),
        ("The mart refreshes every half hour.", "The mart refreshes every 30 minutes."),
        ("Backups run once a week.", "Backups run weekly."),
        ("The flat is booked 14\u201328 July.", "The flat is booked from 14 to 28 July."),
        ("Runners scale between 2 and 20 VMs.", "Runners scale from 2 to 20 VMs."),
        ("Grandma was born on March 9th.", "Grandma was born on March 9."),
        ("The app needs iOS 16.0.", "The app needs iOS 16."),
        ("The heating is serviced every fall.", "The heating is serviced every autumn."),
    ],
)
def test_rewrite_writes_periods_ranges_ordinals_and_whole_decimals_one_way(text: str, written: str) -> None:
    assert spelling.rewrite(text) == written


def test_rewrite_leaves_counts_of_other_periods_and_the_verb_fall_alone() -> None:
    assert spelling.rewrite("Invoices go out every 2 months.") == "Invoices go out every 2 months."
    assert spelling.rewrite("Prices fall in January.") == "Prices fall in January."
    assert spelling.rewrite("Version 1.0.3 ships.") == "Version 1.0.3 ships."


def test_an_acronym_folds_the_other_memorys_words_it_stands_for() -> None:
    one = ["hilt", "handles", "di", "in", "the", "android", "app"]
    other = ["the", "android", "app", "uses", "hilt", "for", "dependency", "injection"]
    assert spelling.fold_acronyms(one, other, skip=frozenset({"the", "for", "uses", "in"})) == [
        "the", "android", "app", "uses", "hilt", "for", "di",
    ]  # fmt: skip
    assert spelling.fold_acronyms(["vms"], ["virtual", "machines"]) == ["vms"]
    assert spelling.fold_acronyms(["it"], ["install", "tools"], skip=frozenset({"it"})) == ["install", "tools"]


def test_two_words_the_other_memory_writes_as_one_are_joined() -> None:
    assert spelling.fold_joined(["oauth2", "pkce"], ["oauth", "2", "with", "pkce"]) == ["oauth2", "with", "pkce"]
    assert spelling.fold_joined(["autoscale"], ["auto", "scale"]) == ["autoscale"]


@pytest.mark.parametrize(
    ("a", "b", "similarity"),
    [
        ("The Android app uses Hilt for dependency injection.", "Hilt handles DI in the Android app.", 0.78),
        ("Water bills are paid quarterly.", "The water bill is paid every three months.", 0.80),
        ("The CI runners autoscale between 2 and 20 VMs.", "CI runners auto-scale from 2 up to 20 virtual machines.",
         0.81),
        ("The design files for the app are in Figma under Mobile/2024.", "App designs: Figma, Mobile/2024.", 0.79),
        ("Recycling is collected every other Thursday.", "The recycling collection is on alternate Thursdays.", 0.86),
        ("Leo prefers apple juice to orange juice.", "Leo would rather have apple juice than orange juice.", 0.93),
        ("Mobile QA is done by Ines on real devices.", "Ines does mobile QA on physical devices.", 0.928),
        ("Infra on-call escalates to Kenji after 15 minutes.",
         "After 15 min without an answer, the infrastructure on-call escalates to Kenji.", 0.85),
    ],
)  # fmt: skip
def test_restatements_in_other_words_are_duplicates_and_never_contradictions(a: str, b: str, similarity: float) -> None:
    same, why = stance.is_duplicate(a, b, similarity)
    assert same, why
    assert stance.conflict(a, b, similarity) is None


@pytest.mark.parametrize(
    ("a", "b", "similarity"),
    [
        ("The flaky payment test is caused by a race in token refresh.",
         "The flaky payment test is caused by a timeout in token refresh.", 0.937),  # one slot, another value
        ("Recycling is collected every Thursday.", "Recycling is collected every other Thursday.", 0.93),
        ("Invoices are paid quarterly.", "Invoices are paid every 2 months.", 0.9),
        ("Deploys go out with approval.", "Deploys go out without approval.", 0.93),
        ("The frontend uses Jest.", "The frontend replaced Jest with Vitest.", 0.85),
    ],
)  # fmt: skip
def test_the_guards_still_keep_values_negations_and_updates_apart(a: str, b: str, similarity: float) -> None:
    assert not stance.is_duplicate(a, b, similarity)[0]


def test_word_match_counts_forms_and_spellings_of_one_word_once() -> None:
    share, contained = stance.word_match(frozenset({"grocery", "deliver", "mom"}), frozenset({"groceri", "mom"}))
    assert contained == 1.0 and share == pytest.approx(2 / 3)


def test_a_sentence_is_never_merged_into_a_text_that_repeats_it_and_says_more() -> None:
    sentence = "Adipose stem cells originate from perivascular cells in the bone marrow niche."
    paragraph = f"{sentence} Their migration depends on CXCL12 signalling and declines with age in mice."
    same, why = stance.is_duplicate(sentence, paragraph, 0.9)
    assert not same and "says more" in why


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("The wildcard cert expires 2 Nov 2025.", "The wildcard cert expires 2025-11-02."),
        ("It expires on November 2nd, 2025.", "It expires on 2025-11-02."),
        ("Renewed 3 Sept. 2024 by Ana.", "Renewed 2024-09-03 by Ana."),
    ],
)
def test_a_date_written_in_words_is_the_iso_date_it_names(text: str, written: str) -> None:
    assert spelling.rewrite(text) == written


def test_what_only_looks_like_a_date_is_left_alone() -> None:
    for text in ("Marketing 3 2024 plan", "the 2 mars 2024 note", "since 45 May 2024", "Run 3 of 2024"):
        assert spelling.rewrite(text) == text


def test_an_acronym_in_capitals_may_take_later_letters_and_a_hyphen_splits_initials() -> None:
    # "DWH": d(ata) w(are)h(ouse), only for an acronym its memory writes in capitals
    assert spelling.fold_acronyms(["dwh"], ["the", "data", "warehouse"], skip=frozenset({"the"}),
                                  capitals=frozenset({"dwh"})) == ["the", "dwh"]  # fmt: skip
    assert spelling.fold_acronyms(["dwh"], ["data", "warehouse"]) == ["data", "warehouse"]
    assert spelling.fold_acronyms(["app"], ["apple", "pie"]) == ["apple", "pie"]
    assert spelling.fold_acronyms(["sso"], ["via", "single", "sign-on"], capitals=frozenset({"sso"})) == ["via", "sso"]


@pytest.mark.parametrize(
    ("a", "b", "similarity"),
    [
        # one spells out the acronym the other writes: the embedder does not know it, the words do
        ("CDC from the orders Postgres DB uses Debezium.",
         "Debezium does change data capture from the orders Postgres database.", 0.673),
        ("The data warehouse bills are reviewed monthly by Samuel.", "Samuel reviews the DWH bills every month.",
         0.639),
        # the shared words in another order: one plain word for another is part of the rewording
        ("The app sends analytics to Amplitude.", "Amplitude receives the app's analytics events.", 0.925),
        ("The Android app is written in Kotlin.", "Kotlin is the language of the Android app.", 0.869),
        ("The wildcard cert for *.corp.example.com expires on 2025-11-02.",
         "Wildcard certificate *.corp.example.com expires 2 Nov 2025.", 0.96),
    ],
)  # fmt: skip
def test_acronyms_spelled_out_reordered_sentences_and_dates_are_duplicates(a: str, b: str, similarity: float) -> None:
    same, why = stance.is_duplicate(a, b, similarity)
    assert same, why


@pytest.mark.parametrize(
    ("a", "b", "similarity"),
    [
        ("The portal is available in English and Spanish.", "The portal is available in Spanish.", 0.95),
        ("Customer dashboards live in the DWH.", "Customer dashboards live in the data lake.", 0.7),  # no spelling
        ("The onboarding flow has 3 screens.", "The onboarding flow has 3 steps.", 0.9),  # in place: another word
        ("Staff log in through Okta SSO.", "Staff log in through Okta without SSO.", 0.6),  # spelled out, negated
    ],
)  # fmt: skip
def test_a_name_only_the_older_gives_or_a_swap_in_place_keeps_the_two(a: str, b: str, similarity: float) -> None:
    same, why = stance.is_duplicate(a, b, similarity)
    assert not same, why


def test_a_newer_memory_that_names_more_restates_the_older_and_survives_its_merge() -> None:
    older, newer = "The portal is available in Spanish.", "The portal is available in English and Spanish."
    same, why = stance.is_duplicate(older, newer, 0.95)
    assert same, why
    assert "older names" in stance.is_duplicate(newer, older, 0.95)[1]


def test_a_longer_form_of_a_name_and_a_capital_that_starts_a_sentence_lose_nothing() -> None:
    for a, b, similarity in (
        ("The fraud detection job runs on Apache Flink.", "The fraud detection job runs on Flink.", 0.93),
        ("The Android app supports phones and tablets.", "Both phones and tablets are supported by the Android app.",
         0.912),
    ):  # fmt: skip
        same, why = stance.is_duplicate(a, b, similarity)
        assert same, why
