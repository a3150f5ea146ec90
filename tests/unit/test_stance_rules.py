"""The stance rules of consolidation, each on a pair a person reads at once (the dense similarity given)."""

from __future__ import annotations

import pytest

from engram.services.consolidation import stance

CLOSE = 0.85


@pytest.mark.parametrize(
    ("older", "newer", "rule", "kind"),
    [
        ("Push notifications are turned on in the beta build.", "Push notifications are turned off in the beta build.",
         "antonym", "contradiction"),
        ("Noor prefers squash merges.", "Noor hates squash merges and wants merge commits kept.", "preference",
         "contradiction"),
        ("The ingest worker owner is Priya.", "The ingest worker owner is Marco.", "person", "contradiction"),
        ("The nightly ETL job runs at 02:00 UTC.", "The nightly ETL job runs at 04:00 UTC.", "value", "contradiction"),
        ("max_connections on db-main is 200.", "max_connections on db-main was lowered to 120.", "value", "update"),
        ("The frontend uses Jest.", "The frontend replaced Jest with Vitest.", "update", "update"),
    ],
)  # fmt: skip
def test_each_rule_names_itself_and_an_update_is_its_own_kind(older: str, newer: str, rule: str, kind: str) -> None:
    found = stance.conflict(older, newer, CLOSE)
    assert found is not None and found.score >= stance.CONTRADICTION_THRESHOLD, found
    assert (found.rule, found.kind) == (rule, kind)
    assert not stance.is_duplicate(older, newer, 0.95)[0], "what differs in stance is never merged"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("In summer the clinic opens 8-14.", "Outside summer the clinic opens 8-18."),
        ("Last year four engineers worked on the mobile app.", "This year six engineers work on the mobile app."),
        ("We use pnpm, not npm, for the web portal.", "The web portal installs packages with pnpm."),
        ("Daniel reviews the backend pull requests.", "Chidi reviews the frontend pull requests."),
        ("Feature flags are enabled on staging.", "Feature flags are disabled on production."),
        # A record's number names the record: two trials, two orders, not two values of one.
        (
            "TRIAL REGISTRATION clinicaltrials.gov Identifier: NCT00403806.",
            "TRIAL REGISTRATION clinicaltrials.gov Identifier: NCT00404079.",
        ),
        ("Order ORD1234567 shipped to Lisbon", "Order ORD7654321 shipped to Lisbon"),
        # A value only one side gives is a detail the other leaves out; many values are a report, not one attribute.
        ("Backups run nightly", "Backups run nightly at 02:00"),
        (
            "The incidence was 26% at 3 months, 30% at 6 months, 40% at 1 year and 45% at 5 years.",
            "The incidence was 5% at 3 months, 14% at 6 months, 24% at 1 year and 29% at 5 years.",
        ),
    ],
)
def test_scope_time_and_other_entities_raise_no_flag(a: str, b: str) -> None:
    assert stance.conflict(a, b, CLOSE) is None


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # the newer repeats the older and adds a sentence with a negation of its own
        ("Altered protein expression or genomic mutation of B23 is encountered in many different forms of cancer.",
         "Altered protein expression or genomic mutation of B23 is encountered in many different forms of cancer. "
         "Although described as multifunctional, a genuine molecular function of B23 is not fully understood."),
        # a finding of many more words about the subject, not the older's fact and what changed
        ("Simvastatin reduces platelet-endocardium adhesion in atrial fibrillation.",
         "Addition of simvastatin significantly reduced CD40 expression as well as platelet adhesion to fibrillating "
         "atria; its efficacy was not reversed by the addition of mevalonic acid."),
        ("Microtubule nucleation is the best known function of centrosomes.",
         "At the onset of mitosis, centrosomes undergo a structural reorganization, termed maturation, which leads to "
         "increased microtubule nucleation activity."),
    ],
)  # fmt: skip
def test_a_negation_in_an_added_sentence_and_a_longer_finding_are_neither_contradiction_nor_update(
    older: str, newer: str
) -> None:
    found = stance.conflict(older, newer, 0.9)
    assert found is None or found.score < stance.CONTRADICTION_THRESHOLD, found


def test_a_negation_in_the_sentence_both_say_is_still_one() -> None:
    older = "Staging deploys need a manual approval. The pipeline runs on GitHub Actions."
    newer = "Staging deploys do not need a manual approval. The pipeline runs on GitHub Actions."
    found = stance.conflict(older, newer, 0.93)
    assert found is not None and found.rule == "negation", found


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Kubernetes runs the staging cluster.", "k8s runs the staging cluster."),
        ("The data center is in Frankfurt.", "The data centre is in Frankfurt."),
        ("The primary brand colour is teal.", "The primary brand color is teal."),
        ("Grandma visits every Sunday for lunch.", "Every Sunday Grandma visits for lunch."),
        ("Family dinner is at 18:30 on weekdays.", "Family dinner is at 6:30 pm on weekdays."),
    ],
)
def test_abbreviations_spellings_and_reorderings_are_duplicates_not_contradictions(a: str, b: str) -> None:
    assert stance.is_duplicate(a, b, CLOSE)[0]
    assert stance.conflict(a, b, CLOSE) is None
