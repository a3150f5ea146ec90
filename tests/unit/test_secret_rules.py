"""The rule files of engram/secrets through engram.scrub: gitleaks' default rules are all loaded and compile for
Python's re, each rule (gitleaks' and Engram's) gets a realistic example generated from its own regex, and that
example is redacted in a sentence, in JSON and in a command line; gitleaks' semantics (keywords, secret group,
entropy, allowlists) hold, and no rule costs more than linear work on its own keywords."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
import tomllib
import warnings
from pathlib import Path

import pytest
from mnemonic import Mnemonic

from engram.scrub import KINDS, Redaction, scrub_text
from engram.secrets import catalog
from engram.secrets.catalog import load_rules
from engram.secrets.keywords import KeywordSet
from engram.secrets.rules import ENGRAM_FILE, GITLEAKS_FILE, SecretRule, translate
from tests.helpers.regex_examples import Example, example

ROOT = Path(__file__).resolve().parents[2]
RULES = catalog.rules()
# tools/gitleaks_rules.py writes gitleaks.toml; update this with it (and the version in LICENSE.gitleaks).
GITLEAKS_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"


def _toml(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text())


# --- the rule files -----------------------------------------------------------------------------------------


def test_gitleaks_rules_are_the_unchanged_upstream_file() -> None:
    # Changes to gitleaks' rules go in engram.toml, which extends it; this file is only ever replaced whole.
    assert hashlib.sha256(GITLEAKS_FILE.read_bytes()).hexdigest() == GITLEAKS_SHA256
    assert "gitleaks 8.30.1" in (GITLEAKS_FILE.parent / "LICENSE.gitleaks").read_text()


def test_every_gitleaks_rule_with_a_regex_is_loaded() -> None:
    upstream = _toml(GITLEAKS_FILE)["rules"]
    assert isinstance(upstream, list)
    with_regex = {r["id"] for r in upstream if "regex" in r}
    assert len(with_regex) >= 220
    loaded = {r.id for r in RULES if r.source == "gitleaks"}
    assert loaded == with_regex  # only path-only rules (a file name, no content) are left out
    assert {r["id"] for r in upstream} - with_regex == {"pkcs12-file"}


def test_every_rule_compiles_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rules = load_rules()
    assert len(rules) == len(RULES)
    engram_rules = _toml(ENGRAM_FILE)["rules"]
    assert isinstance(engram_rules, list)
    engram_ids = {r["id"] for r in engram_rules}
    assert {r.id for r in rules if r.source == "engram"} == engram_ids - {r.id for r in rules if r.source == "gitleaks"}


def test_every_rule_reports_a_known_kind() -> None:
    assert {r.kind for r in RULES} <= set(KINDS)


def test_generic_rules_are_the_ones_that_judge_by_label() -> None:
    generic = {r.id for r in catalog.generic_rules()}
    assert {"generic-api-key", "command-password-flag", "authorization-header"} <= generic


# --- RE2 to Python ------------------------------------------------------------------------------------------

TRANSLATIONS = [
    (r"\b(LTAI(?i)[a-z0-9]{20})\b", r"\b(LTAI(?i:[a-z0-9]{20}))\b"),
    (r"dp\.pt\.(?i)[a-z0-9]{43}", r"dp\.pt\.(?i:[a-z0-9]{43})"),
    (r"(?i)abc", r"(?i)abc"),
    (r"\b(pat[[:alnum:]]{14})", r"\b(pat[A-Za-z0-9]{14})"),
    (r"a(?:b|c)\z", r"a(?:b|c)\Z"),
    (r"(?<name>x)", r"(?P<name>x)"),
    (r"curl.*?-u.+x", r"curl.{0,256}?-u.{1,256}x"),
    (r"value=\"(.{8,})\"", r"value=\"(.{8,256})\""),
    (r"[\w.-]{0,50}?(?:a|(?-i:B))", r"[\w.-]{0,50}?(?:a|(?-i:B))"),
    # RE2's flags hold for the later alternatives too, and the alternation keeps its place
    (r"(?:\"(?i)ab\"|'(?i)cd')", r"(?:\"(?i:ab\")|(?i:'(?i:cd')))"),
]


@pytest.mark.parametrize(("go", "python"), TRANSLATIONS)
def test_translate_rewrites_what_python_reads_differently(go: str, python: str) -> None:
    assert translate(go) == python
    re.compile(python)


def test_mid_pattern_flags_apply_to_the_rest_of_their_group_only() -> None:
    pattern = re.compile(translate(r"(a(?i)b)c"))
    assert pattern.fullmatch("aBc") and not pattern.fullmatch("aBC") and not pattern.fullmatch("ABc")
    quoted = re.compile(translate(r"x(?:\"(?i)ab\"|'(?i)cd')"))
    assert quoted.fullmatch('x"AB"') and quoted.fullmatch("x'CD'") and not quoted.fullmatch("x\"AB'")


# --- gitleaks' semantics ------------------------------------------------------------------------------------


def _rule(rule_id: str) -> SecretRule:
    return next(r for r in RULES if r.id == rule_id)


def test_secret_group_entropy_and_keywords_decide_as_gitleaks_does() -> None:
    sonar = _rule("sonar-api-token")
    assert sonar.secret_group == 2
    m = sonar.pattern.search("sonar.login = 0123456789abcdef0123456789abcdef01234567 ")
    assert m is not None and m.string[slice(*sonar.secret_span(m))] == "0123456789abcdef0123456789abcdef01234567"  # type: ignore[misc]
    generic = _rule("generic-api-key")
    low = generic.pattern.search("api_key = aaaaaaaaaa1 ")
    assert low is not None and generic.secret_span(low) is None  # entropy 1.4 <= 3.5
    assert "key" in generic.keywords and "token" in generic.keywords


def test_allowlists_of_a_rule_and_of_the_file_drop_findings() -> None:
    generic = _rule("generic-api-key")
    # gitleaks' own allowlist on the whole match: a public key is not a secret (the identifier is only seen
    # because the match is widened back over the prefix gitleaks' regex starts with).
    public = generic.pattern.search("public_key = Zx8Lk2Qw9Vb4Nm7Rt1Yp3Hs6 ")
    assert public is not None and generic.secret_span(public) is None
    # the file's global allowlist: environment references are not secrets
    env = generic.pattern.search("api_token = ${API_TOKEN_VALUE} ")
    assert env is None or generic.secret_span(env) is None
    # Engram's addition to gitleaks' rule (engram.toml): an idempotency key is not a credential
    idem = generic.pattern.search("idempotency_key: 7d9f2c1e-4b3a-4c5d-8e6f-9a0b1c2d3e4f\n")
    assert idem is not None and generic.secret_span(idem) is None
    aws = _rule("aws-access-token")
    example_id = aws.pattern.search("AKIA" + "IOSFODNN7EXAMPLE")
    assert example_id is not None and aws.secret_span(example_id) is None  # rule allowlist: ...EXAMPLE


def test_keyword_set_finds_exactly_the_keywords_present() -> None:
    keywords = sorted({k for r in RULES for k in r.keywords})
    found = KeywordSet(keywords)
    texts = ["plain words only", "my api_key and an sk-ant key", "hooks.slack.com/services and ghp_ and -----begin"]
    for text in texts:
        assert found.found_in(text) == {k for k in keywords if k in text}


# --- a generated example for every rule ---------------------------------------------------------------------


def _seed_phrase(rule: SecretRule) -> Example:
    # The regex only finds runs of words; what makes them a secret is the BIP39 list and checksum.
    phrase = Mnemonic("english").to_mnemonic(random.Random(rule.id).randbytes(16))
    return Example(phrase, phrase, 0)


SPECIAL = {"bip39-seed-phrase": _seed_phrase}
EXAMPLES = {r.id: (SPECIAL[r.id](r) if r.id in SPECIAL else example(r)) for r in RULES}


def _contexts(text: str) -> dict[str, str]:
    contexts = {
        "sentence": f"Notes from the deploy on Tuesday: {text} - rotate it after the demo, please.",
        "command line": f"$ ./run.sh --verbose {text} 2>&1 | tee run.log",
    }
    # JSON escapes a double quote as \" and a rule that needs the quote (nuget's <add key="Password" ...>) reads
    # raw file text, not JSON strings: such examples are tested in the other contexts only.
    if '"' not in text:
        contexts["JSON"] = json.dumps({"note": text, "source": "chat"})
    return contexts


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_has_a_generated_example_that_is_redacted_everywhere(rule: SecretRule) -> None:
    found = EXAMPLES[rule.id]
    assert found is not None, f"no example of {rule.id} passes its own entropy and allowlists"
    assert scrub_text(found.text).count >= 1
    for name, text in _contexts(found.text).items():
        secret = json.dumps(found.secret)[1:-1] if name == "JSON" else found.secret
        result = scrub_text(text)
        assert secret not in result.text, (name, text, result.text)
        assert result.redactions, name
        again = scrub_text(result.text)
        assert again.text == result.text and again.redactions == (), (name, result.text)


# Examples that an earlier rule of engram.scrub reports under its own kind.
TAKEN_EARLIER = {
    "authorization-header": "high_entropy_secret",  # "authorization = <random>": a labelled random value
    "freemius-secret-key": "password_assignment",  # 'secret_key' => '...': an assignment
    "sidekiq-sensitive-url": "url_password",  # http://user:password@host
}


def test_examples_are_reported_under_their_rules_kind() -> None:
    for rule in RULES:
        found = EXAMPLES[rule.id]
        assert found is not None
        kinds = {r.kind for r in scrub_text(found.text).redactions}
        assert TAKEN_EARLIER.get(rule.id, rule.kind) in kinds, (rule.id, rule.kind, kinds)


def test_an_engram_rule_and_its_kind() -> None:
    assert scrub_text("mysql -u root -pS3cr3t-Pw app").redactions == (Redaction("password_assignment", 1),)
    assert scrub_text("curl -u admin:S3cr3tPw9 https://x.example").redactions == (Redaction("basic_auth", 1),)


# --- hostile input ------------------------------------------------------------------------------------------


def _hostile_units(rule: SecretRule) -> list[str]:
    keywords = rule.keywords or ("a",)
    found = EXAMPLES[rule.id]
    units = [f"{k}{tail}" for k in keywords[:3] for tail in ("", " = ", ": a", "-", "_a.", " ")]
    if found is not None:
        units += [found.text, found.text[:-1]]
    return units


def _apply_cost(rule: SecretRule, text: str) -> float:
    started = time.process_time()
    for m in rule.pattern.finditer(text):
        rule.secret_span(m)
    return time.process_time() - started


@pytest.mark.slow
@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_no_rule_costs_more_than_linear_work_on_its_own_keywords(rule: SecretRule) -> None:
    for unit in _hostile_units(rule):
        small = (unit * (20_000 // len(unit) + 1))[:20_000]
        large = (unit * (200_000 // len(unit) + 1))[:200_000]
        cost_small = max(_apply_cost(rule, small), 0.002)
        cost_large = _apply_cost(rule, large)
        # 10x the input: linear work costs ~10x, quadratic ~100x. Generous bound for a busy machine.
        assert cost_large < 3.0 and cost_large / cost_small < 40, (unit, cost_small, cost_large)


def test_the_api_docs_list_every_kind() -> None:
    section = (ROOT / "docs" / "api.md").read_text().split("## Secret scrubbing", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    assert documented == set(KINDS)


def test_a_line_allowlist_still_reads_the_line_around_a_match_on_a_very_long_line() -> None:
    """secret_span reads at most LINE_REACH characters of the line either side of a match (a whole minified line for
    every match was quadratic); a line allowlist's marker beside the match is still seen on a line far longer."""
    rule = next(r for r in RULES if r.id == "generic-api-key")
    found = EXAMPLES[rule.id]
    assert found is not None
    padding = "x " * 5_000  # one line, ten times the reach, before the match
    for text, reported in (
        (padding + found.text, True),
        (padding + "RUN --mount=type=secret,id=k " + found.text, False),
    ):
        spans = [rule.secret_span(m) for m in rule.pattern.finditer(text)]
        assert any(span is not None for span in spans) is reported, (text[-80:], spans)


def test_no_line_allowlist_is_anchored_so_reading_less_of_a_line_only_exempts_less() -> None:
    """An allowlist reads at most LINE_REACH of a long line either side of a match: unanchored, whatever it finds in
    that part it finds in the whole line, so the cut can only report more, never hide a secret; an anchor (^, $,
    \\A, \\Z, \\b) would match where the part is cut and exempt what the whole line does not."""
    for rule in RULES:
        for allowlist in rule.allowlists:
            if allowlist.target != "line":
                continue
            for regex in allowlist.regexes:
                bare = re.sub(r"\\[^AZzbB]|\[\^", "", regex.pattern)  # escapes and negated classes are no anchors
                assert not re.search(r"[$^]|\\[AZzbB]", bare), (rule.id, regex.pattern)
