"""The secret corpus (tests/data/secrets) through engram.scrub: every fake secret is removed under its kind,
every innocent technical text comes back unchanged, and hostile input costs linear work."""

from __future__ import annotations

import re

import pytest

import engram.scrub as scrub_module
from engram.scrub import KINDS, Redaction, scrub_text, scrub_value
from tests.helpers.secret_corpus import SecretCase, load_innocent, load_secrets

SECRETS = load_secrets()
INNOCENT = load_innocent()


def test_corpus_size() -> None:
    assert len(SECRETS) >= 60
    assert len(INNOCENT) >= 30


@pytest.mark.parametrize("case", SECRETS, ids=[c.id for c in SECRETS])
def test_every_corpus_secret_is_scrubbed_under_its_kind(case: SecretCase) -> None:
    result = scrub_text(case.text)
    for secret in case.secrets:
        assert secret not in result.text
    assert {r.kind for r in result.redactions} == case.kinds
    assert result.count == len(case.secrets)
    assert case.kinds <= set(KINDS)


@pytest.mark.parametrize("case", SECRETS, ids=[c.id for c in SECRETS])
def test_scrubbing_a_corpus_secret_is_idempotent(case: SecretCase) -> None:
    once = scrub_text(case.text)
    assert scrub_text(once.text) == scrub_module.ScrubResult(once.text, ())


@pytest.mark.parametrize("text", INNOCENT, ids=[f"innocent-{i}" for i in range(len(INNOCENT))])
def test_innocent_technical_text_is_unchanged(text: str) -> None:
    result = scrub_text(text)
    assert result.text == text
    assert result.redactions == ()


def test_whole_corpus_at_once() -> None:
    everything = "\n\n".join([*INNOCENT, *(c.text for c in SECRETS)])
    result = scrub_text(everything)
    for case in SECRETS:
        for secret in case.secrets:
            assert secret not in result.text
    for text in INNOCENT:
        assert text in result.text


def test_every_kind_is_in_the_corpus_or_the_unit_cases() -> None:
    from tests.unit.test_scrub import POSITIVES

    covered = {k for c in SECRETS for k in c.kinds} | {k for k, _, _ in POSITIVES}
    assert covered == set(KINDS)


def test_metadata_values_under_secret_labels_are_scrubbed() -> None:
    signing = "q8Zr2Lk0Vw9Xy4Bt7Nm3Hs6Pd1Fg5Jc8Ke2Ra0Tu"
    out, redactions = scrub_value({"auth": signing, "cache_key": "user:42:profile", "commit": "3f78" * 10})
    assert out == {"auth": "[REDACTED:high_entropy_secret]", "cache_key": "user:42:profile", "commit": "3f78" * 10}
    assert redactions == [Redaction("high_entropy_secret", 1)]


PROSE = [
    ("the password is hunter2", "the password is [REDACTED:password_prose]"),
    ("The password for the db is hunter2!", "The password for the db is [REDACTED:password_prose]"),
    ("my pw is Xk9#mm and that's it", "my pw is [REDACTED:password_prose] and that's it"),
    ("the passphrase was 'blue fish 42'.", "the passphrase was '[REDACTED:password_prose]'."),
    ("The password is swordfish.", "The password is [REDACTED:password_prose]."),
    ("password is now s3cr3t; keep it", "password is now [REDACTED:password_prose]; keep it"),
    ("admin password for staging: Zq7!wp", "admin password for staging: [REDACTED:password_prose]"),
]


@pytest.mark.parametrize(("text", "expected"), PROSE)
def test_password_in_prose_is_replaced_and_the_words_around_it_kept(text: str, expected: str) -> None:
    assert scrub_text(text).text == expected


PROSE_NEGATIVES = [
    "The password is incorrect.",
    "the password is stored in Vault",
    "Your password is too short; the password is required.",
    "the password is 8 characters",
    "the password is the same as before",
    "Password was changed yesterday and the password is rotated monthly.",
    "password = password",
    "if password is None: return",
    "the password is ${DB_PASSWORD} at runtime",
    "Reset the password. It is fine now.",
]


@pytest.mark.parametrize("text", PROSE_NEGATIVES)
def test_prose_about_passwords_is_not_a_password(text: str) -> None:
    assert scrub_text(text).text == text


LABELLED_NEGATIVES = [
    "signing_key = my_signing_key_name_v2",
    "key: created_at",
    "token_endpoint: https://auth.example.com/oauth/token",
    "public_key = MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=",
    "auth_mode = oauth2-client-credentials",
    "session_id = 018f2b1c-7e3a-7c4d-9a1b-2c3d4e5f6a7b",
    "keyboard: us-international-altgr-2",
]


@pytest.mark.parametrize("text", LABELLED_NEGATIVES)
def test_low_entropy_or_non_secret_labels_are_kept(text: str) -> None:
    assert scrub_text(text).text == text


# --- hostile input -----------------------------------------------------------------------------------------
#
# Regex engines don't expose a step count, so the test compares the CPU time of the same input at 100 kB and
# at 1 MB: linear work gives a ratio near 10, a quadratic pattern near 100. The bound is generous so that a
# busy machine can't make it flake.


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


HOSTILE_UNITS = {
    "letters": "a",
    "equals": "=",
    "password-is": "password is ",
    "pw-pw": "pw ",
    "base64": "Ab3+/x9Z",
    "alternating": "a=b:c@d/e ",
    "key-colon": "key: ",
    "quotes": "password='",
    "url-prefixes": "a://u:",
    "sk-run": "sk-",
    "labels": "signing_key=",
    "hex": "0123456789abcdef",
    "aws": "AKIA aws ",
    "digits-colon": "12345:",
    "dots": "M.",
    "webhooks": "hooks.slack.com/services/",
}


@pytest.mark.slow
@pytest.mark.parametrize("unit", HOSTILE_UNITS.values(), ids=HOSTILE_UNITS.keys())
def test_hostile_input_costs_linear_work(unit: str) -> None:
    import time

    def cost(size: int) -> float:
        text = _repeat(unit, size)
        started = time.process_time()
        scrub_text(text)
        return time.process_time() - started

    small = max(cost(100_000), 0.005)
    large = cost(1_000_000)
    # Linear work gives a ratio near 10 for 10x the input; a quadratic pattern gives ~100. The bound is
    # generous so that a busy machine can't fail it, and 1 MB must also finish within 10 s.
    assert large < 10.0
    assert large / small < 40, (small, large)


def test_keyword_gating_skips_rules_whose_keywords_are_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = scrub_module._apply

    def spy(rule, text, counts):  # type: ignore[no-untyped-def]
        calls.append(rule.kind)
        return original(rule, text, counts)

    monkeypatch.setattr(scrub_module, "_apply", spy)
    scrub_text("plain words only")
    assert "slack_webhook" not in calls and "private_key" not in calls
    assert all(re.fullmatch(r"[a-z_]+", k) for k in calls)
