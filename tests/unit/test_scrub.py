"""Tests for engram.scrub: every secret kind, false positives, counts, metadata, idempotence, speed."""

from __future__ import annotations

import time

import pytest

from engram.scrub import (
    KINDS,
    REDACTION_MARKER_FORMAT,
    Redaction,
    ScrubResult,
    marker,
    merge,
    scrub_text,
    scrub_value,
)

# Secrets are assembled at run time so that secret scanners (ours included) don't flag this file.
SK_ANT = "sk-" + "ant-api03-" + "Xy7_" * 20 + "AA"
SK_PROJ = "sk-" + "proj-" + "aB3dE6gH9jK2" * 4
SK_LEGACY = "sk-" + "T3BlbkFJ" * 6
GHP = "gh" + "p_" + "a1B2c3D4e5" * 4
GHS = "gh" + "s_" + "Z9y8X7w6V5" * 4
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" * 2 + "_" + "aBcDeF1234" * 6
SLACK = "xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
AWS = "AK" + "IA" + "IOSFODNN7EXAMPLE"
AWS_TEMP = "AS" + "IA" + "Q3EGRKLMN4OPQ5RS"
GOOGLE = "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
JWT = (
    "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
ENGRAM = "engram" + "_3f9a1c2b_" + "Qm9vT2xkX3NlY3JldF9rZXlfZm9yX3Rlc3RzX29ubHk"
OPAQUE = "tok" + "9f8e7d6c5b4a3921"
PEM = (
    "-----BEGIN " + "RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aNRXk4fTvCJRwWTgHQvtP5tE0Y7vZZSQoWk2KyWQAlcN3HqNnF6P3w==\n"
    "-----END RSA " + "PRIVATE KEY-----"
)
PEM_OPENSSH = (
    "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH " + "PRIVATE KEY-----"
)

# (kind, text containing the secret, expected scrubbed text)
POSITIVES = [
    ("api_key", f"anthropic key {SK_ANT} for prod", "anthropic key [REDACTED:api_key] for prod"),
    ("api_key", f"use {SK_PROJ}.", "use [REDACTED:api_key]."),
    ("api_key", f"old key: {SK_LEGACY}", "old key: [REDACTED:api_key]"),
    ("api_key", "api_key=" + OPAQUE + " then", "api_key=[REDACTED:api_key] then"),
    ("api_key", "apikey: " + OPAQUE, "apikey: [REDACTED:api_key]"),
    ("api_key", '{"api_key": "' + OPAQUE + '", "n": 1}', '{"api_key": "[REDACTED:api_key]", "n": 1}'),
    ("api_key", "X-Api-Key: " + OPAQUE, "X-Api-Key: [REDACTED:api_key]"),
    ("api_key", "export GITHUB_TOKEN=" + OPAQUE, "export GITHUB_TOKEN=[REDACTED:api_key]"),
    ("github_token", f"token {GHP} here", "token [REDACTED:github_token] here"),
    ("github_token", f"app {GHS}", "app [REDACTED:github_token]"),
    ("github_token", f"pat={GITHUB_PAT}", "pat=[REDACTED:github_token]"),
    ("slack_token", f"slack: {SLACK} ok", "slack: [REDACTED:slack_token] ok"),
    ("aws_access_key", f"id {AWS} region", "id [REDACTED:aws_access_key] region"),
    ("aws_access_key", f"({AWS_TEMP})", "([REDACTED:aws_access_key])"),
    ("google_api_key", f"maps key {GOOGLE}", "maps key [REDACTED:google_api_key]"),
    ("jwt", f"session {JWT} expired", "session [REDACTED:jwt] expired"),
    (
        "bearer_token",
        "Authorization: Bearer " + OPAQUE + "\nAccept: */*",
        "Authorization: Bearer [REDACTED:bearer_token]\nAccept: */*",
    ),
    ("bearer_token", "curl -H 'bearer " + OPAQUE + "'", "curl -H 'bearer [REDACTED:bearer_token]'"),
    ("basic_auth", "Authorization: Basic dXNlcjpodW50ZXIy", "Authorization: Basic [REDACTED:basic_auth]"),
    ("private_key", f"key:\n{PEM}\nend of note", "key:\n[REDACTED:private_key]\nend of note"),
    ("private_key", f"{PEM_OPENSSH} trailing", "[REDACTED:private_key] trailing"),
    (
        "url_password",
        "db at postgres://admin:s3cr3t-pw@db.example.com:5432/app now",
        "db at postgres://admin:[REDACTED:url_password]@db.example.com:5432/app now",
    ),
    ("url_password", "redis://:p@ss@cache:6379/0", "redis://:[REDACTED:url_password]@cache:6379/0"),
    ("password_assignment", "password=hunter2 and more", "password=[REDACTED:password_assignment] and more"),
    ("password_assignment", "passwd: letmein99", "passwd: [REDACTED:password_assignment]"),
    ("password_assignment", "secret=topsecretvalue", "secret=[REDACTED:password_assignment]"),
    ("password_assignment", "DB_PASSWORD='correct horse'", "DB_PASSWORD='[REDACTED:password_assignment]'"),
    ("password_assignment", "password: hunter\nnext", "password: [REDACTED:password_assignment]\nnext"),
    ("password_assignment", 'password: str = "hunter2"', 'password: str = "[REDACTED:password_assignment]"'),
    ("password_assignment", "'password' => 'hunter2'", "'password' => '[REDACTED:password_assignment]'"),
    ("password_assignment", "client_secret: abc123xyz", "client_secret: [REDACTED:password_assignment]"),
    ("engram_key", f"ENGRAM key {ENGRAM} saved", "ENGRAM key [REDACTED:engram_key] saved"),
]


@pytest.mark.parametrize(
    ("kind", "text", "expected"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)]
)
def test_detects_each_kind(kind: str, text: str, expected: str) -> None:
    result = scrub_text(text)
    assert result.text == expected
    assert result.redactions == (Redaction(kind, 1),)
    assert kind in KINDS


def test_every_kind_here_is_a_known_kind() -> None:
    # The corpus test (test_scrub_corpus.py) checks that every kind has a positive case somewhere.
    assert {k for k, _, _ in POSITIVES} <= set(KINDS)


NEGATIVES = [
    "The skeleton of the task-list is in the sketch; ask Skye about the desk.",
    "We used sk-learn-compatible-estimators and sklearn for this.",
    "request id 550e8400-e29b-41d4-a716-446655440000 failed",
    "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (short 3f78685)",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "Bearer bonds and the bearer of bad news.",
    "Password: the one we discussed yesterday.",
    "Reset your password at https://example.com:8443/account?user=bob#reset",
    "email bob@example.com or see https://docs.example.com/path",
    "password=None; password = password; password=args.password; password=get_password()",
    "api_key=OPENAI_API_KEY, token = tokenizer.encode(text), password=${DB_PASS}, pw=<your-password>",
    "def login(password: str, api_key: str | None = None) -> None:",
    "max_tokens=1000 token_count: 5 password_hash=abc123 secret_name=prod",
    'json: {"password": null, "api_key": "", "token": "***"}',
    "the engram_consolidation_interval_seconds setting and engram_v1_memory_pb2",
    "AKIA is a prefix; AKIALOWERcase0000000 isn't a key",
    "We discussed the API key rotation and secret management policy.",
    "eyJ alone, or eyJhbGciOiJIUzI1NiJ9 without the other parts",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_leaves_ordinary_text_alone(text: str) -> None:
    result = scrub_text(text)
    assert result.text == text
    assert result.redactions == ()


def test_empty_text() -> None:
    assert scrub_text("") == ScrubResult("", ())


def test_rejects_non_string() -> None:
    with pytest.raises(TypeError):
        scrub_text(b"password=x")  # type: ignore[arg-type]


def test_counts_per_kind_sorted_by_kind() -> None:
    text = f"{SK_PROJ} and {SK_LEGACY}\n{GHP}\npassword=hunter2\nagain {SK_ANT}"
    result = scrub_text(text)
    assert result.redactions == (
        Redaction("api_key", 3),
        Redaction("github_token", 1),
        Redaction("password_assignment", 1),
    )
    assert result.count == 5
    for secret in (SK_PROJ, SK_LEGACY, GHP, "hunter2", SK_ANT):
        assert secret not in result.text


def test_specific_kind_wins_over_generic_assignment() -> None:
    # Reported once, under the specific kind, not again by the "api_key=" or "Bearer" rule.
    assert scrub_text(f"OPENAI_API_KEY={SK_PROJ}").redactions == (Redaction("api_key", 1),)
    assert scrub_text(f"GH_TOKEN={GHP}").redactions == (Redaction("github_token", 1),)
    result = scrub_text(f"Authorization: Bearer {JWT}")
    assert result.text == "Authorization: Bearer [REDACTED:jwt]"
    assert result.redactions == (Redaction("jwt", 1),)


def test_private_key_block_is_removed_whole() -> None:
    text = f"before\n{PEM}\nbetween\n{PEM_OPENSSH}\nafter"
    result = scrub_text(text)
    assert result.text == "before\n[REDACTED:private_key]\nbetween\n[REDACTED:private_key]\nafter"
    assert "MIIE" not in result.text
    assert result.redactions == (Redaction("private_key", 2),)


def test_json_escaped_private_key() -> None:
    escaped = PEM.replace("\n", "\\n")
    result = scrub_text('{"key": "' + escaped + '\\n"}')
    assert result.text == '{"key": "[REDACTED:private_key]\\n"}'


def test_truncated_private_key_still_removed() -> None:
    truncated = PEM.split("-----END")[0]
    result = scrub_text("log: " + truncated)
    assert result.redactions == (Redaction("private_key", 1),)
    assert "MIIE" not in result.text


def test_url_password_keeps_scheme_user_and_host() -> None:
    result = scrub_text("mongodb+srv://app_user:pa55w0rd@cluster0.example.net/db?retryWrites=true")
    assert result.text == "mongodb+srv://app_user:[REDACTED:url_password]@cluster0.example.net/db?retryWrites=true"


def test_marker_format() -> None:
    assert REDACTION_MARKER_FORMAT == "[REDACTED:{kind}]"
    assert marker("jwt") == "[REDACTED:jwt]"
    assert scrub_text(GHP).text == REDACTION_MARKER_FORMAT.format(kind="github_token")


ALL_SECRETS_TEXT = "\n".join(text for _, text, _ in POSITIVES)


@pytest.mark.parametrize("text", [*(t for _, t, _ in POSITIVES), ALL_SECRETS_TEXT])
def test_idempotent(text: str) -> None:
    once = scrub_text(text)
    twice = scrub_text(once.text)
    assert twice.text == once.text
    assert twice.redactions == ()


def test_all_at_once_matches_one_by_one() -> None:
    result = scrub_text(ALL_SECRETS_TEXT)
    assert result.text == "\n".join(expected for _, _, expected in POSITIVES)
    assert result.count == len(POSITIVES)


def test_scrub_value_recurses_and_keeps_structure() -> None:
    notes: list[object] = [f"deploy with {GHP}", {"deep": f"auth Bearer {OPAQUE}", "n": 7}]
    metadata = {
        "source": "chat",
        "count": 3,
        "ratio": 0.5,
        "ok": True,
        "missing": None,
        "notes": notes,
        "pair": ("plain", f"{AWS}"),
        f"{SK_PROJ}-as-key": "keys are kept",
    }
    out, redactions = scrub_value(metadata)
    assert out == {
        "source": "chat",
        "count": 3,
        "ratio": 0.5,
        "ok": True,
        "missing": None,
        "notes": [
            "deploy with [REDACTED:github_token]",
            {"deep": "auth Bearer [REDACTED:bearer_token]", "n": 7},
        ],
        "pair": ("plain", "[REDACTED:aws_access_key]"),
        f"{SK_PROJ}-as-key": "keys are kept",
    }
    assert redactions == [
        Redaction("aws_access_key", 1),
        Redaction("bearer_token", 1),
        Redaction("github_token", 1),
    ]
    assert notes[0] == f"deploy with {GHP}"  # input not modified


def test_scrub_value_merges_counts_across_strings() -> None:
    out, redactions = scrub_value([f"{SK_PROJ}", {"a": f"{SK_LEGACY} {SK_ANT}"}])
    assert out == ["[REDACTED:api_key]", {"a": "[REDACTED:api_key] [REDACTED:api_key]"}]
    assert redactions == [Redaction("api_key", 3)]


def test_scrub_value_secret_named_keys() -> None:
    out, redactions = scrub_value(
        {"password": "hunter2", "db": {"GITHUB_TOKEN": "abc"}, "password_hint": "pet name", "token": 5}
    )
    assert out == {
        "password": "[REDACTED:password_assignment]",
        "db": {"GITHUB_TOKEN": "[REDACTED:api_key]"},
        "password_hint": "pet name",
        "token": 5,
    }
    assert redactions == [Redaction("api_key", 1), Redaction("password_assignment", 1)]
    again, more = scrub_value(out)
    assert again == out
    assert more == []


@pytest.mark.parametrize("value", [None, 1, 2.5, True, b"bytes"])
def test_scrub_value_non_strings_untouched(value: object) -> None:
    out, redactions = scrub_value(value)
    assert out is value
    assert redactions == []


def test_merge_sums_and_sorts() -> None:
    merged = merge(
        [Redaction("jwt", 1), Redaction("api_key", 2)],
        (Redaction("jwt", 3),),
        [],
        [Redaction("aws_access_key", 0)],
    )
    assert merged == (Redaction("api_key", 2), Redaction("jwt", 4))
    assert merge() == ()


def _repeat(unit: str, size: int = 100_000) -> str:
    return (unit * (size // len(unit) + 1))[:size]


ADVERSARIAL = {
    "letters": "a" * 100_000,
    "sk-run": _repeat("sk-"),
    "sk-long": "sk-" + "a" * 100_000,
    "jwt-fragments": _repeat("eyJ-"),
    "jwt-dots": _repeat("eyJaaaaaaaa."),
    "pem-headers": _repeat("-----BEGIN PRIVATE KEY-----"),
    "pem-body": "-----BEGIN PRIVATE KEY-----" + "A" * 100_000,
    "dashes": "-" * 100_000,
    "url-prefixes": _repeat("a://u:"),
    "url-password": "a://u:" + "p" * 100_000,
    "url-ats": _repeat("x://a:b@"),
    "assignments": _repeat("password="),
    "colons": _repeat("api_key: a"),
    "open-quotes": _repeat('password="'),
    "annotations": _repeat("password: str"),
    "bearers": _repeat("Bearer "),
    "basic": _repeat("Authorization: Basic "),
    "engram": _repeat("engram_"),
    "long-identifier": _repeat("x_x-"),
    "whitespace": " " * 100_000,
    "mixed": _repeat("a=b:c@d/e "),
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_linear_time_on_adversarial_input(text: str) -> None:
    # Locally ~10-100 ms each; a quadratic pattern would take many seconds on 100 kB.
    start = time.perf_counter()
    scrub_text(text)
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    "text", ["", "mcp", "memory_saved", "action-item", "01a21510-0088-7229-aafe-9c74576bcc6b", "2026-03-02T10:00:00Z"]
)
def test_texts_plain_by_their_shape_pass_unchanged(text: str) -> None:
    """The log scrubs every string of every entry: ids, times and names of choices skip the rules."""
    assert scrub_text(text).text == text and not scrub_text(text).redactions


def test_a_plain_looking_value_under_a_secret_key_is_still_caught_by_its_key() -> None:
    clean, found = scrub_value({"password": "correcthorsebatterystaple", "token": "abcdefgh"})
    assert isinstance(clean, dict) and all(str(value).startswith("[REDACTED:") for value in clean.values())
    assert found
