"""Secret scrubbing: credentials in text and metadata are replaced by markers before anything is stored.

Three sets of rules run in turn. First this module's own: private keys, URL passwords, the token formats
whose kinds Engram has always reported, passwords in assignments and in prose, and high-entropy values under a
secret-looking label (entropy thresholds after detect-secrets, https://github.com/Yelp/detect-secrets, Apache
License 2.0, Copyright 2018 Yelp Inc.). Then gitleaks' default rule set, adopted whole and unchanged
(engram/secrets/gitleaks.toml: gitleaks 8.30.1, https://github.com/gitleaks/gitleaks, MIT licence, Copyright
(c) 2019 Zachary Rice), and Engram's rules for credentials in command lines and config files, crypto wallets
and the token formats gitleaks lacks (engram/secrets/engram.toml); see engram/secrets/ and
docs/THIRD_PARTY.md. Format rules run before the generic ones, so a secret is reported under its most precise
kind.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engram.secrets import catalog
from engram.secrets.keywords import KeywordSet
from engram.secrets.rules import SecretRule, shannon_entropy

REDACTION_MARKER_FORMAT = "[REDACTED:{kind}]"

# Every kind scrub_text can report, for callers that want to document or filter them (docs/api.md lists
# what each one covers).
KINDS = (
    "api_key",
    "atlassian_token",
    "aws_access_key",
    "aws_secret_key",
    "azure_storage_key",
    "basic_auth",
    "bearer_token",
    "databricks_token",
    "digitalocean_token",
    "discord_token",
    "docker_auth",
    "engram_key",
    "github_token",
    "gitlab_token",
    "google_api_key",
    "google_oauth_token",
    "heroku_key",
    "high_entropy_secret",
    "huggingface_token",
    "jwt",
    "mailchimp_key",
    "mailgun_key",
    "npm_token",
    "password_assignment",
    "password_prose",
    "private_key",
    "pypi_token",
    "seed_phrase",
    "sendgrid_key",
    "service_token",
    "shopify_token",
    "slack_token",
    "slack_webhook",
    "square_token",
    "telegram_bot_token",
    "twilio_key",
    "url_password",
)


@dataclass(frozen=True, slots=True)
class Redaction:
    """``count`` secrets of one ``kind`` were replaced by ``[REDACTED:<kind>]``."""

    kind: str
    count: int


@dataclass(frozen=True, slots=True)
class ScrubResult:
    """Scrubbed text plus what was removed from it (kinds sorted, counts summed)."""

    text: str
    redactions: tuple[Redaction, ...]

    @property
    def count(self) -> int:
        """Total number of secrets replaced."""
        return sum(r.count for r in self.redactions)


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return REDACTION_MARKER_FORMAT.format(kind=kind)


# --- rules -------------------------------------------------------------------------------------------------
#
# Every pattern is written to run in linear time on hostile input:
# - a negative lookbehind of the token's own alphabet lets a match start only at the beginning of a run of
#   token characters, so a 100 kB run is tried once, not at each of its 100k offsets;
# - possessive quantifiers (Python 3.11+) over classes that cannot match what follows them, so a failed
#   attempt never backtracks through the run; quantifiers that must backtrack are bounded.
# Rules that need judgement ("is this really a key?") do it in Python on the match, which is cheaper to read
# and to get right than lookaheads. A rule may name keywords: it runs only on text that contains one of them
# (lower-cased), which keeps the cost of a long rule table close to that of a short one.

_Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Returns the span of the secret in the text (only that part is replaced, so "Bearer", the URL's user and
    # host, the "password=" etc. survive), or None when the match turns out not to be a secret.
    secret: Callable[[re.Match[str]], _Span | None]
    keywords: tuple[str, ...] = ()
    # A format rule's secret is a token: it is replaced to the token's real end (see _to_token_end).
    token: bool = False


def _whole(m: re.Match[str]) -> _Span | None:
    return m.span()


def _group(name: str) -> Callable[[re.Match[str]], _Span | None]:
    def span(m: re.Match[str]) -> _Span | None:
        return m.span(name)

    return span


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _tail_with_digit(prefix_len: int) -> Callable[[re.Match[str]], _Span | None]:
    # Random keys of 20+ characters practically always contain a digit; words, identifiers and package names
    # ("sk-learn-compatible", "xoxo-hugs-and-kisses") mostly don't.
    def span(m: re.Match[str]) -> _Span | None:
        return m.span() if _has_digit(m.group(0)[prefix_len:]) else None

    return span


def _random_tail(m: re.Match[str]) -> _Span | None:
    # For prefixed tokens: the part after the prefix (group "tail") must look random, not like a placeholder
    # ("npm_XXXXXXXX...", "dop_v1_000...") from documentation.
    tail = m.group("tail")
    return m.span() if shannon_entropy(tail) >= 2.5 else None


_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    # Body: base64, PEM headers ("Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,..."), real or
    # JSON-escaped ("\n") line breaks; it can't contain "-----", so it stops at the END line.
    r"(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+"
    # END is optional: a truncated key (a log line cut short) is still a secret, so the header and whatever
    # base64 follows it are removed.
    r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)
_AGE_KEY = re.compile(r"AGE-SECRET-KEY-1(?P<tail>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})")
# PuTTY .ppk files: the private half is the base64 block after "Private-Lines: N".
_PUTTY_PRIVATE = re.compile(
    r"Private-Lines:[ \t]*[0-9]{1,4}[ \t]*(?:\r?\n|\\n)(?P<secret>(?:[A-Za-z0-9+/=]|\r?\n|\\n)++)"
)

_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<prefix>[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@?#\[\]]{0,256}+:)"
    # Greedy and bounded so it backtracks to the *last* "@" of the authority, as URL parsers do: a password
    # containing a raw "@" is removed entirely instead of leaking its tail.
    r"(?!\[REDACTED:)(?P<secret>[^\s/?#]{1,256})(?=@)"
)

_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]*+")

# OpenAI ("sk-", "sk-proj-", "sk-svcacct-") and Anthropic ("sk-ant-api03-") keys.
_SK_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}+")
# Stripe secret and restricted keys, same family of mistakes.
_STRIPE_KEY = re.compile(r"(?<![A-Za-z0-9_-])[rs]k_(?:live|test|prod)_[A-Za-z0-9]{16,}+")
_GITHUB_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?:gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{40,}+)")
_SLACK_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,}+")
_AWS_ACCESS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])")
_GOOGLE_API_KEY = re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
# Engram's own API keys (engram.keys): "engram_<8 hex>_<43 base64url>".
_ENGRAM_KEY = re.compile(r"(?<![A-Za-z0-9_-])engram_[A-Za-z0-9_-]{20,}+")
_ENGRAM_KEY_EXACT = re.compile(r"engram_[0-9a-f]{8}_[A-Za-z0-9_-]{43}")


def _engram_key(m: re.Match[str]) -> _Span | None:
    token = m.group(0)
    if _ENGRAM_KEY_EXACT.fullmatch(token):
        return m.span()
    # Other long random tails (an older or hand-made key) have mixed case and digits; snake_case identifiers
    # such as engram_consolidation_interval_seconds don't.
    tail = token[len("engram_") :]
    if len(tail) >= 30 and _has_digit(tail) and tail.lower() != tail and tail.upper() != tail:
        return m.span()
    return None


# The secret half of a cloud access-key pair has no prefix: 40 characters of base64 for AWS (and the S3-compatible
# HMAC keys of Google Cloud Storage), 30 or 32 letters and digits for Alibaba Cloud and Tencent Cloud. Alone it can't
# be told from other base64, so it is taken only when it is not hex (git SHAs, SHA-1 digests), has both cases and a
# digit, looks random, and something says what it is, wherever the half is written apart from its id: the key id or
# the provider's name nearby; a label naming a secret or credentials just before it ("the secret half is", "Secret
# access key"); or, for a value alone on its line (a credentials file, a console's copy), such a label anywhere near.
_AWS_SECRET_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=_-])")
_AWS_EVIDENCE = re.compile(r"(?i)aws|amazon|(?<![A-Za-z0-9])(?:AKIA|ASIA|GOOG1)")
_CLOUD_SECRET_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/=_-])(?:[A-Za-z0-9]{32}|[A-Za-z0-9]{30})(?![A-Za-z0-9+/=_-])")
_CLOUD_EVIDENCE = re.compile(r"(?i)alibaba|aliyun|tencent|(?<![A-Za-z0-9])(?:LTAI|AKID)")
_SECRET_HALF_LABEL = re.compile(
    r"(?i)secret|credential|access[ _-]?key|key[ _-]?(?:id|pair)|\[(?:default|profile)|client[ _-]?key"
)
_SECRET_HALF_KEYWORDS = ("secret", "credential", "key", "[default", "[profile")
_AWS_WINDOW = 400  # characters either side in which the id, the provider or (for a line of its own) a label counts
_LABEL_BEFORE = 80  # characters before the value in which a label counts wherever the value is


def _secret_half(evidence: re.Pattern[str]) -> Callable[[re.Match[str]], _Span | None]:
    def span(m: re.Match[str]) -> _Span | None:
        token, text = m.group(0), m.string
        if token.lower() == token or token.upper() == token or not _has_digit(token):
            return None
        if shannon_entropy(token) < 4.0:
            return None
        window = text[max(0, m.start() - _AWS_WINDOW) : m.end() + _AWS_WINDOW]
        if evidence.search(window) or _SECRET_HALF_LABEL.search(text[max(0, m.start() - _LABEL_BEFORE) : m.start()]):
            return m.span()
        return m.span() if _alone_on_line(m) and _SECRET_HALF_LABEL.search(window) else None

    return span


def _alone_on_line(m: re.Match[str]) -> bool:
    text = m.string
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return text[start : len(text) if end < 0 else end].strip(" \t\r'\",;") == m.group(0)


_aws_secret = _secret_half(_AWS_EVIDENCE)
_AWS_SECRET_KEYWORDS = ("aws", "akia", "asia", "amazon", "goog1", *_SECRET_HALF_KEYWORDS)
_CLOUD_SECRET_KEYWORDS = ("alibaba", "aliyun", "tencent", "ltai", "akid", *_SECRET_HALF_KEYWORDS)

_BASIC_AUTH = re.compile(
    r"(?P<prefix>(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+)"
    r"(?P<secret>[A-Za-z0-9+/]{8,}+={0,2}+)"
)

_BEARER = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<prefix>(?i:bearer)[ \t]+)(?!\[REDACTED:)(?P<secret>[A-Za-z0-9._~+/=-]{8,}+)"
)


def _bearer(m: re.Match[str]) -> _Span | None:
    # "Bearer bonds" is prose; a token has a digit or is long.
    token = m.group("secret")
    return m.span("secret") if _has_digit(token) or len(token) >= 20 else None


# --- prefixed token formats, as data ------------------------------------------------------------------------
#
# (kind, regex, keywords). Each regex names the random part "tail"; the rule takes the whole match if the tail
# looks random (_random_tail). A run of the token's alphabet before the prefix stops a match, so a prefix
# inside a longer identifier ("my_hf_token_name") is not taken.
_B = r"(?<![A-Za-z0-9_-])"  # token boundary
_PREFIXED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # GitLab: personal, pipeline trigger, deploy, runner, SCIM, CI job, feed, mail, agent, OAuth, flags.
    (
        "gitlab_token",
        _B + r"gl(?:pat|ptt|dt|rt|soat|cbt|ft|imt|agent|oas|ffct)-(?P<tail>[A-Za-z0-9_.-]{20,}+)",
        ("gl",),
    ),
    ("gitlab_token", _B + r"GR1348941(?P<tail>[A-Za-z0-9_-]{20,}+)", ("gr1348941",)),
    ("sendgrid_key", _B + r"SG\.(?P<tail>[A-Za-z0-9_-]{16,32}+\.[A-Za-z0-9_-]{16,64}+)", ("sg.",)),
    ("pypi_token", _B + r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)(?P<tail>[A-Za-z0-9_-]{50,}+)", ("pypi-",)),
    ("huggingface_token", _B + r"(?:hf_|api_org_)(?P<tail>[A-Za-z0-9]{30,}+)(?![A-Za-z0-9_-])", ("hf_", "api_org_")),
    ("npm_token", _B + r"npm_(?P<tail>[A-Za-z0-9]{36,}+)", ("npm_",)),
    ("digitalocean_token", _B + r"do[opr]_v1_(?P<tail>[a-f0-9]{64,}+)", ("_v1_",)),
    ("shopify_token", _B + r"shp(?:at|ss|ca|pa)_(?P<tail>[a-fA-F0-9]{32,}+)", ("shp",)),
    ("twilio_key", r"(?<![A-Za-z0-9])SK(?P<tail>[0-9a-fA-F]{32})(?![A-Za-z0-9])", ("sk",)),
    ("google_oauth_token", _B + r"ya29\.(?P<tail>[A-Za-z0-9_-]{20,}+)", ("ya29.",)),
    ("google_oauth_token", _B + r"GOCSPX-(?P<tail>[A-Za-z0-9_-]{24,}+)", ("gocspx-",)),
    ("google_oauth_token", r"(?<![A-Za-z0-9_/-])1//0(?P<tail>[A-Za-z0-9_-]{40,}+)", ("1//0",)),
    ("mailgun_key", _B + r"key-(?P<tail>[0-9a-zA-Z]{32})(?![A-Za-z0-9_-])", ("key-",)),
    ("mailchimp_key", _B + r"(?P<tail>[0-9a-f]{32})-us[0-9]{1,2}(?![A-Za-z0-9_-])", ("-us",)),
    ("square_token", _B + r"(?:EAAA|sq0atp-|sq0csp-)(?P<tail>[A-Za-z0-9_-]{22,}+)", ("eaaa", "sq0atp-", "sq0csp-")),
    ("heroku_key", _B + r"HRKU-(?P<tail>[A-Za-z0-9_-]{58,}+)", ("hrku-",)),
    ("atlassian_token", _B + r"AT[AC]TT3(?P<tail>[A-Za-z0-9_=-]{150,}+)", ("att3",)),
    ("databricks_token", _B + r"dapi(?P<tail>[a-f0-9]{32})(?:-[0-9])?(?![A-Za-z0-9_-])", ("dapi",)),
    ("telegram_bot_token", r"(?<![A-Za-z0-9_:-])[0-9]{5,16}:(?P<tail>A[A-Za-z0-9_-]{34})(?![A-Za-z0-9_-])", (":a",)),
    (
        "discord_token",
        _B + r"[MNO](?P<tail>[A-Za-z0-9_-]{23,27}+\.[A-Za-z0-9_-]{6,7}+\.[A-Za-z0-9_-]{27,40}+)(?![A-Za-z0-9_-])",
        (".",),
    ),
    # The long tail of services, one kind for all.
    ("service_token", _B + r"xkeysib-(?P<tail>[a-f0-9]{64}-[A-Za-z0-9]{16})", ("xkeysib-",)),  # Brevo
    ("service_token", _B + r"PMAK-(?P<tail>[a-f0-9]{24}-[a-f0-9]{34})", ("pmak-",)),  # Postman
    ("service_token", _B + r"NR(?:AK|II|JS)-(?P<tail>[A-Za-z0-9-]{19,}+)", ("nrak-", "nrii-", "nrjs-")),  # New Relic
    ("service_token", _B + r"sntry[us]_(?P<tail>[A-Za-z0-9+/=_-]{32,}+)", ("sntry",)),  # Sentry (JWT-like or not)
    ("service_token", _B + r"(?:glc_|glsa_)(?P<tail>[A-Za-z0-9+/_]{32,}+={0,3}+)", ("glc_", "glsa_")),  # Grafana
    ("service_token", _B + r"lin_(?:api|oauth)_(?P<tail>[A-Za-z0-9]{40,}+)", ("lin_",)),  # Linear
    ("service_token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<tail>[A-Za-z0-9]{40,}+)", ("dp.",)),  # Doppler
    ("service_token", _B + r"hv[sb]\.(?P<tail>[A-Za-z0-9_-]{90,}+)", ("hvs.", "hvb.")),  # Vault
    ("service_token", _B + r"[A-Za-z0-9]{14}\.atlasv1\.(?P<tail>[A-Za-z0-9_=-]{60,}+)", ("atlasv1",)),  # Terraform
    ("service_token", _B + r"pul-(?P<tail>[a-f0-9]{40})(?![A-Za-z0-9_-])", ("pul-",)),  # Pulumi
    ("service_token", _B + r"pscale_(?:tkn|oauth|pw)_(?P<tail>[A-Za-z0-9_=.-]{32,}+)", ("pscale_",)),  # PlanetScale
    ("service_token", _B + r"sbp_(?P<tail>[a-f0-9]{40,}+)", ("sbp_",)),  # Supabase
    ("service_token", _B + r"LTAI(?P<tail>[A-Za-z0-9]{20})(?![A-Za-z0-9_-])", ("ltai",)),  # Alibaba
    ("service_token", _B + r"(?:AKCp|cmVmd)(?P<tail>[A-Za-z0-9]{59,}+)", ("akcp", "cmvmd")),  # Artifactory
    ("service_token", _B + r"dt0c01\.(?P<tail>[A-Za-z0-9]{24}\.[A-Za-z0-9]{64})", ("dt0c01.",)),  # Dynatrace
    ("service_token", _B + r"EZ[AT]K(?P<tail>[A-Za-z0-9]{54})", ("ezak", "eztk")),  # EasyPost
    ("service_token", _B + r"FLWSECK(?:_TEST)?-(?P<tail>[a-h0-9]{32})-X", ("flwseck",)),  # Flutterwave
    ("service_token", _B + r"shippo_(?:live|test)_(?P<tail>[a-fA-F0-9]{40})", ("shippo_",)),  # Shippo
    ("service_token", _B + r"ntn_(?P<tail>[0-9]{11}[A-Za-z0-9]{35})", ("ntn_",)),  # Notion
    ("service_token", _B + r"pat[A-Za-z0-9]{14}\.(?P<tail>[a-f0-9]{64})", ("pat",)),  # Airtable
    ("service_token", _B + r"r8_(?P<tail>[A-Za-z0-9]{37,}+)", ("r8_",)),  # Replicate
    ("service_token", _B + r"gsk_(?P<tail>[A-Za-z0-9]{50,}+)", ("gsk_",)),  # Groq
    ("service_token", _B + r"xai-(?P<tail>[A-Za-z0-9]{70,}+)", ("xai-",)),  # xAI
    ("service_token", _B + r"pplx-(?P<tail>[A-Za-z0-9]{48,}+)", ("pplx-",)),  # Perplexity
    ("service_token", _B + r"whsec_(?P<tail>[A-Za-z0-9+/=]{32,}+)", ("whsec_",)),  # Stripe webhooks
    ("service_token", _B + r"rubygems_(?P<tail>[a-f0-9]{48})", ("rubygems_",)),  # RubyGems
    ("service_token", _B + r"fo1_(?P<tail>[A-Za-z0-9_-]{43,}+)", ("fo1_",)),  # Fly.io
    ("service_token", _B + r"dckr_pat_(?P<tail>[A-Za-z0-9_-]{27,}+)", ("dckr_pat_",)),  # Docker Hub
    ("service_token", _B + r"pnu_(?P<tail>[A-Za-z0-9]{36,}+)", ("pnu_",)),  # Prefect
    ("service_token", _B + r"rdme_(?P<tail>[a-z0-9]{70,}+)", ("rdme_",)),  # ReadMe
    ("service_token", _B + r"ico-(?P<tail>[A-Za-z0-9]{32})(?![A-Za-z0-9_-])", ("ico-",)),  # Infracost
    ("service_token", _B + r"CLOJARS_(?P<tail>[a-z0-9]{60,}+)", ("clojars_",)),  # Clojars
    ("service_token", _B + r"ops_eyJ(?P<tail>[A-Za-z0-9+/]{250,}+={0,3}+)", ("ops_",)),  # 1Password
    ("service_token", _B + r"EAA[MC](?P<tail>[A-Za-z0-9]{100,}+)", ("eaam", "eaac")),  # Facebook
    ("service_token", _B + r"sgp_(?P<tail>[a-fA-F0-9]{40,}+)", ("sgp_",)),  # Sourcegraph
    (
        "service_token",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~(?P<tail>[A-Za-z0-9_~.-]{31,34}+)(?![A-Za-z0-9_~.-])",
        ("q~",),
    ),  # Azure AD client secret
)


def _prefixed_rules() -> tuple[_Rule, ...]:
    return tuple(_Rule(kind, re.compile(rx), _random_tail, kw) for kind, rx, kw in _PREFIXED)


# Webhook URLs: the path after the fixed part is the credential; the host stays readable.
_SLACK_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{20,}+)", re.IGNORECASE
)
_DISCORD_WEBHOOK = re.compile(
    r"discord(?:app)?\.com/api/webhooks/[0-9]{5,20}/(?P<secret>[A-Za-z0-9_-]{30,}+)", re.IGNORECASE
)
_TEAMS_WEBHOOK = re.compile(r"\.webhook\.office\.com/webhookb2/(?P<secret>[A-Za-z0-9@/_-]{40,}+)", re.IGNORECASE)

# Azure storage connection strings ("...;AccountKey=<88 base64>;...") and SAS signatures ("&sig=...").
_AZURE_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?i:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<secret>[A-Za-z0-9+/]{20,}+={0,2}+)"
)
_AZURE_SAS = re.compile(r"(?<![A-Za-z0-9_])sig=(?P<secret>[A-Za-z0-9%+/]{30,}+(?:%3D|=){0,2}+)")

# ~/.docker/config.json: "auth" is base64("user:password"); identity and registry tokens likewise.
_DOCKER_AUTH = re.compile(
    r"\\?\"(?i:auth|identitytoken|registrytoken)\\?\"[ \t]*:[ \t]*\\?\"(?P<secret>[A-Za-z0-9+/_.-]{8,}+={0,2}+)\\?\""
)

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Old Heroku API keys are UUIDs: a secret only where the label says Heroku.
_HEROKU_LABELLED = re.compile(
    r"(?i)heroku[A-Za-z0-9_.-]{0,30}+[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*[\"']?(?P<secret>" + _UUID.pattern + ")"
)

# ADO.NET/ODBC connection strings: "Server=db;User Id=app;Pwd=s3cret;" ("Password=" is the rule below).
_CONNECTION_PWD = re.compile(
    r"(?<![A-Za-z0-9_])(?i:pwd)[ \t]*=[ \t]*(?P<secret>[^;\s'\"/~$%{<\[][^;\s'\"]{0,255}+)(?=;|\s|$)"
)


# Generic assignments: `api_key=...`, `"apiKey": "..."`, `DB_PASSWORD: ...`, `password => '...'`,
# `secret: str = "..."`. The key is a whole identifier (lookbehind) that *ends* in one of the cores, so
# OPENAI_API_KEY and client_secret match while password_hash and token_count don't.
# "token" covers GITHUB_TOKEN, HF_TOKEN, access_token, x-auth-token through the prefix.
_API_KEY_CORE = r"api[_-]?key|token"
_PASSWORD_CORE = r"pass(?:word|wd|phrase)|secret(?:[_-]?(?:access[_-]?)?key)?"
_KEY_PREFIX = r"[A-Za-z0-9_.-]{0,40}?"
_ASSIGNMENT_TAIL = (
    r"(?P<close>\\?[\"']|)[ \t]*"
    r"(?P<sep>=>|:=|(?::[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,60}+)?=(?![=~])|:(?![:/]))[ \t]*"
    r"(?:\\?\"(?P<dq>[^\"\r\n]{1,1024}?)\\?\""
    r"|\\?'(?P<sq>[^'\r\n]{1,1024}?)\\?'"
    r"|(?P<bare>[^\s\"'`,;&|()\[\]{}<>]{1,1024}+))"
)


def _assignment_pattern(core: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_.-])(?P<key>{_KEY_PREFIX}(?:{core})){_ASSIGNMENT_TAIL}", re.IGNORECASE)


_PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_MASKED = re.compile(r"[*xX.]+")
_FILE_PATH = re.compile(r"(?:\.{1,2}/|~/|/[\w.@+-]+/)[\w.@+/-]*")


def _assignment(m: re.Match[str]) -> _Span | None:
    """Decide whether the value of a matched assignment is a literal secret rather than code or prose."""
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    value = m.group(group).strip()
    if not value or value.startswith("[REDACTED:") or value.lower() in _PLACEHOLDERS:
        return None
    if _MASKED.fullmatch(value):  # already masked: "****", "xxxx"
        return None
    if value[0] in "$%{<":  # references and templates: $DB_PASS, ${X}, %(pw)s, {{ secret }}, <your-key>
        return None
    if _FILE_PATH.fullmatch(value):  # --from-file=password=./db-password.txt, password_file: /run/secrets/db
        return None
    if group != "bare":
        return m.span(group)
    # Unquoted values are ambiguous: they may be code rather than a literal.
    key_name = re.split(r"[.\-]", m.group("key"))[-1]
    if (
        m.string[m.end() : m.end() + 1] in ("(", "[")  # password=get_password(), key=keys[0]
        # password=args.password, api_key=os.environ (also at the end of a sentence: "... api_key=os.environ.")
        or _DOTTED_IDENTIFIER.fullmatch(value.rstrip(".,:;!?"))
        or _CONSTANT_NAME.fullmatch(value)  # api_key=OPENAI_API_KEY
        or value.lower() == key_name.lower()  # password=password
    ):
        return None
    if m.group("sep") == ":" and value.isalpha():
        # "Password: the one we discussed" is prose; "password: hunter" alone on its line (YAML) is not.
        line_end = m.string.find("\n", m.end())
        rest = m.string[m.end() : line_end if line_end >= 0 else len(m.string)].strip()
        if rest and not rest.startswith("#"):
            return None
    return m.span(group)


# --- labelled high-entropy values ---------------------------------------------------------------------------
#
# `<label> = <value>` where the label names a credential ("signing_key", "AUTH", "stripe_webhook_secret") and
# the value is a random-looking string, as detect-secrets' high-entropy plugins judge it: hex with more than
# 3.0 bits a character, base64 with more than 4.5 (less for short values, whose entropy can't reach 4.5).
_LABELLED = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,60}+)\\?[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*"
    r"(?P<q>\\?[\"']?)(?P<value>[A-Za-z0-9+/=_.~-]{16,4096}+)(?![A-Za-z0-9+/=_.~-])"
)
_LABEL_WORDS = (
    "key", "secret", "token", "credential", "creds", "auth", "passphrase", "password", "passwd",
    "signature", "salt", "cookie", "session",
)  # fmt: skip
# Label parts that name something other than the secret itself: ids, names, hashes, places, sizes.
_LABEL_EXCLUDED = frozenset(
    {
        "id", "ids", "name", "names", "hash", "hashed", "digest", "checksum", "sha", "sha1", "sha256", "sha512",
        "md5", "path", "file", "dir", "url", "uri", "endpoint", "header", "length", "len", "size", "count",
        "type", "format", "version", "ref", "alias", "cache", "idempotency", "primary", "foreign", "sort",
        "partition", "index", "dedup", "dedupe", "bucket", "row", "map", "lookup", "routing", "i18n",
        "translation", "public", "pub", "publishable", "fingerprint", "kid", "integrity", "commit", "etag",
        "nonce", "field", "column", "prefix", "suffix", "label", "hint", "policy", "timeout", "ttl", "expiry",
        "expires", "expiration", "max", "min", "mode", "method", "algorithm", "alg", "store", "vault", "env",
    }
)  # fmt: skip
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _label_parts(label: str) -> list[str]:
    return [p for p in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", label).lower()) if p]


def _secret_label(label: str) -> bool:
    parts = _label_parts(label)
    if not parts or any(p in _LABEL_EXCLUDED for p in parts):
        return False
    joined = "".join(parts)
    if joined in ("keyboard", "hotkey", "keyword", "keywords", "author", "authors", "authority", "monkey"):
        return False
    return any(word in p for p in parts for word in _LABEL_WORDS)


_HEX = re.compile(r"[0-9a-fA-F]+")


def high_entropy(value: str) -> bool:
    """Whether ``value`` looks like a random secret (detect-secrets' hex/base64 entropy tests, adapted)."""
    v = value.rstrip("=")
    if len(v) < 16 or _UUID.fullmatch(v) or v.isdigit():
        return False
    if _HEX.fullmatch(v):
        return shannon_entropy(v) > 3.0
    if not _has_digit(v) or not any(c.isalpha() for c in v):
        return False
    if _DOTTED_IDENTIFIER.fullmatch(v) or re.fullmatch(r"[a-z0-9]+(?:[_.-][a-z0-9]+)+", v):
        return False  # package.module, host.example.com, snake_case_v2, kebab-case-1
    return shannon_entropy(v) > min(4.5, 0.85 * math.log2(len(v)))


def _labelled(m: re.Match[str]) -> _Span | None:
    value = m.group("value")
    if value.startswith("[REDACTED") or not _secret_label(m.group("key")):
        return None
    quote = m.group("q").lstrip("\\")
    if quote and m.string[m.end() : m.end() + 1] not in (quote, "\\"):
        return None
    return m.span("value") if high_entropy(value) else None


# --- passwords in prose -------------------------------------------------------------------------------------
#
# "the password is hunter2", "password for the db is hunter2!", "pw is X", "my passphrase was 'a b c'".
# The regex finds the word and captures (in a lookahead, so nothing is consumed) the dozen words after it;
# Python then finds the verb and judges the word after it.
_PROSE = re.compile(
    r"(?<![A-Za-z0-9_$.-])(?i:pass(?:word|wd|phrase|code)|pw|pwd)(?![A-Za-z0-9_-])"
    r"(?=(?P<window>(?:[ \t]{1,20}+[^\s]{1,128}+){1,12}))"
)
_CONNECTORS = frozenset({"is", "was", "are", "=", ":", "be", "to", "remains", "becomes", "became"})
_FILLERS = frozenset(
    {"now", "still", "just", "simply", "set", "changed", "updated", "reset", "to", "be", "been", "currently",
     "actually", "literally", "probably", "again", "temporarily", "today"}
)  # fmt: skip
_NOT_PASSWORDS = frozenset(
    {
        "a", "an", "the", "in", "on", "at", "for", "of", "to", "from", "by", "with", "without", "not", "no",
        "never", "always", "usually", "also", "too", "very", "only", "being", "same", "different", "correct",
        "incorrect", "wrong", "right", "invalid", "valid", "required", "optional", "mandatory", "missing",
        "empty", "blank", "unknown", "known", "weak", "strong", "secure", "insecure", "long", "short", "fine",
        "ok", "okay", "good", "bad", "new", "old", "random", "temporary", "default", "secret", "private",
        "public", "sensitive", "needed", "necessary", "case", "it", "this", "that", "these", "those", "what",
        "which", "mine", "yours", "ours", "theirs", "his", "hers", "my", "your", "our", "their", "its",
        "here", "there", "below", "above", "none", "null", "nil", "undefined", "true", "false", "yes",
        "something", "nothing", "anything", "everything", "obvious", "simple", "complex", "easy", "hard",
        "unique", "personal", "safe", "unsafe", "great", "fixed", "static", "dynamic", "per", "via", "as",
        "like", "because", "if", "when", "and", "or", "but", "so", "then", "than", "who", "how", "why",
        "where", "all", "any", "some", "each", "every", "both", "either", "neither", "one", "two",
        "sufficient", "insufficient", "available", "unavailable", "enough", "ready", "due",
    }
)  # fmt: skip
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "passcode", "pw", "pwd", "str", "string", "secretstr"})
_NOT_PASSWORD_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "ous", "ful", "less", "ive", "ment", "tion")
_UNITS = frozenset(
    {"characters", "chars", "char", "character", "digits", "digit", "letters", "symbols", "long", "days",
     "weeks", "months", "years", "hours", "minutes", "times", "bytes", "bits", "words", "old"}
)  # fmt: skip
_QUOTES = {"'": "'", '"': '"', "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_TRAILING = ".,;:!?)]}"
# Stripped from the end of a password in prose: sentence punctuation, but not "!" or "?", which passwords
# often end with ("the password is hunter2!" loses the "!", which says nothing).
_STRIPPED = ".,;:)]}"
_WORD = re.compile(r"\S+")


def _prose_password(m: re.Match[str]) -> _Span | None:
    text, base = m.string, m.end()
    words = [(w.group(0), base + w.start()) for w in _WORD.finditer(m.group("window"))]
    for i, (word, _) in enumerate(words[:8]):
        bare = word.lower()
        if bare in _CONNECTORS or (bare.endswith(":") and len(bare) > 1):
            if i == 0 and bare == "=":
                return None  # "password = ..." is code: the assignment rule has judged it already
            j = i + 1
            while j < len(words) and words[j][0].lower() in _FILLERS:
                j += 1
            if j >= len(words):
                return None
            return _prose_value(text, words, j)
        if bare[-1] in ".!?;" or bare.startswith("[redacted"):
            return None  # the sentence ended before saying what the password is
    return None


def _prose_value(text: str, words: list[tuple[str, int]], j: int) -> _Span | None:
    word, start = words[j]
    if word.startswith("[REDACTED") or word[0] in "$%{<":
        return None
    close = _QUOTES.get(word[0])
    if close is not None:
        line_end = text.find("\n", start)
        end = text.find(close, start + 1, line_end if line_end >= 0 else min(len(text), start + 258))
        if end > start + 1 and end - start <= 257:
            inner = text[start + 1 : end]
            if not inner.startswith("[REDACTED") and not _MASKED.fullmatch(inner) and inner[:1] not in ("$", "{", "<"):
                return start + 1, end
            return None
        word = word.strip("".join(_QUOTES) + "".join(_QUOTES.values()))
        start += 1
    value = word
    while len(value) > 1 and value[-1] in _STRIPPED:
        value = value[:-1]
    if not value or value.lower() in _NOT_PASSWORDS or value.lower() in _PASSWORD_WORDS or _MASKED.fullmatch(value):
        return None
    following = words[j + 1][0].lower().strip(_TRAILING) if j + 1 < len(words) else ""
    if re.fullmatch(r"[0-9.,+\-\u2013]+", value) and (len(value) < 4 or following in _UNITS):
        return None  # "8 characters", "8-16 chars", "12"
    if _DOTTED_IDENTIFIER.fullmatch(value.split("[")[0].split("(")[0]) or value.endswith(("()", "]")):
        return None  # "password is os.environ['PW']", "get_password()"
    if value.isalpha():
        lowered = value.lower()
        ends_clause = j + 1 >= len(words) or word[-1] in _TRAILING or _line_ends_after(text, start + len(word))
        mixed = value[1:].lower() != value[1:]  # "hUnter" but not "Swordfish"
        if not mixed and (not ends_clause or lowered.endswith(_NOT_PASSWORD_SUFFIXES)):
            return None
    elif following in _UNITS:
        return None
    return start, start + len(value)


def _line_ends_after(text: str, pos: int) -> bool:
    rest = text[pos : pos + 80]
    stripped = rest.lstrip(" \t")
    return not stripped or stripped[0] in "\r\n"


# --- the table ----------------------------------------------------------------------------------------------
#
# Order matters: multi-line and structured secrets first, so that e.g. the JWT inside "Bearer eyJ..." or the
# sk- key inside "api_key=sk-..." is reported under its specific kind, and the generic rules then skip the
# marker it left behind. gitleaks' and Engram's rule files (engram/secrets) come in two parts: their format
# rules after this module's, their generic rules (a value judged by its label alone) last.


def _from_file(rule: SecretRule) -> _Rule:
    return _Rule(rule.kind, rule.pattern, rule.secret_span, rule.keywords)


_OWN_FORMAT_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PRIVATE_KEY, _whole, ("-----begin",)),
    _Rule("private_key", _AGE_KEY, _whole, ("age-secret-key-1",)),
    _Rule("private_key", _PUTTY_PRIVATE, _group("secret"), ("private-lines",)),
    _Rule("slack_webhook", _SLACK_WEBHOOK, _group("secret"), ("hooks.slack.com",)),
    _Rule("discord_token", _DISCORD_WEBHOOK, _group("secret"), ("/api/webhooks/",)),
    _Rule("service_token", _TEAMS_WEBHOOK, _group("secret"), ("webhook.office.com",)),
    _Rule("url_password", _URL_PASSWORD, _group("secret"), ("://",)),
    _Rule("jwt", _JWT, _whole, ("eyj",)),
    _Rule("api_key", _SK_KEY, _tail_with_digit(len("sk-")), ("sk-",)),
    _Rule("api_key", _STRIPE_KEY, _whole, ("k_live_", "k_test_", "k_prod_")),
    _Rule("github_token", _GITHUB_TOKEN, _whole, ("gh", "github_pat_")),
    _Rule("slack_token", _SLACK_TOKEN, _tail_with_digit(len("xoxb-")), ("xox", "xapp-")),
    _Rule("google_api_key", _GOOGLE_API_KEY, _whole, ("aiza",)),
    _Rule("engram_key", _ENGRAM_KEY, _engram_key, ("engram_",)),
    *_prefixed_rules(),
    _Rule("heroku_key", _HEROKU_LABELLED, _group("secret"), ("heroku",)),
    _Rule("azure_storage_key", _AZURE_KEY, _group("secret"), ("accountkey", "sharedaccesskey")),
    _Rule("azure_storage_key", _AZURE_SAS, _group("secret"), ("sig=",)),
    _Rule("docker_auth", _DOCKER_AUTH, _group("secret"), ("auth", "token")),
    # The AWS secret is looked for before the key id is replaced, and the id's marker still says "aws".
    _Rule("aws_secret_key", _AWS_SECRET_CANDIDATE, _aws_secret, _AWS_SECRET_KEYWORDS),
    _Rule("service_token", _CLOUD_SECRET_CANDIDATE, _secret_half(_CLOUD_EVIDENCE), _CLOUD_SECRET_KEYWORDS),
    _Rule("aws_access_key", _AWS_ACCESS_KEY, _whole, ("akia", "asia", "abia", "acca", "a3t")),
)
_OWN_GENERIC_RULES: tuple[_Rule, ...] = (
    _Rule("basic_auth", _BASIC_AUTH, _group("secret"), ("basic",)),
    _Rule("bearer_token", _BEARER, _bearer, ("bearer",)),
    _Rule("api_key", _assignment_pattern(_API_KEY_CORE), _assignment, ("key", "token")),
    _Rule("password_assignment", _assignment_pattern(_PASSWORD_CORE), _assignment, ("pass", "secret")),
    _Rule("password_assignment", _CONNECTION_PWD, _group("secret"), ("pwd",)),
    _Rule("high_entropy_secret", _LABELLED, _labelled, _LABEL_WORDS),
    _Rule("password_prose", _PROSE, _prose_password, ("pass", "pw")),
)


@functools.cache
def _table() -> tuple[tuple[_Rule, ...], KeywordSet]:
    """Every rule in the order it runs, and their keywords. Built on first use: compiling the rule files' 245
    regexes takes a tenth of a second that importers of this module (the CLI's clients) need not pay."""
    formats = (*_OWN_FORMAT_RULES, *map(_from_file, catalog.format_rules()))
    rules = (
        *(dataclasses.replace(rule, token=True) for rule in formats),
        *_OWN_GENERIC_RULES,
        *map(_from_file, catalog.generic_rules()),
    )
    return rules, KeywordSet(k for rule in rules for k in rule.keywords)


# For metadata: a dict key that names a secret makes its whole string value one.
_SECRET_KEYS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("password_assignment", re.compile(rf"{_KEY_PREFIX}(?:{_PASSWORD_CORE})", re.IGNORECASE)),
    ("api_key", re.compile(rf"{_KEY_PREFIX}(?:{_API_KEY_CORE})", re.IGNORECASE)),
)


# --- API ---------------------------------------------------------------------------------------------------


# Texts that hold no secret by their shape, answered without running the rules: most strings of a log entry are
# one of them (ids, times, names of choices), and the log scrubs every entry whole (engram.log.scrubbing). A secret
# needs more than 7 characters; a bare value under a secret-naming key is caught by its key (scrub_value).
_PLAIN = re.compile(
    r".{0,7}"  # too short for any rule
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a UUID
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})"  # an RFC 3339 time
    r"|[a-z]+(?:[_-][a-z]+){0,3}",  # a lowercase word or name of a choice (memory_saved, action-item)
    re.DOTALL,
)


def scrub_text(text: str) -> ScrubResult:
    """Replace every secret found in ``text`` by ``[REDACTED:<kind>]``, keeping the text around it.

    Idempotent: scrubbing already scrubbed text changes nothing and reports nothing.
    """
    if not isinstance(text, str):
        raise TypeError(f"scrub_text expects str, got {type(text).__name__}")
    if _PLAIN.fullmatch(text):
        return ScrubResult(text, ())
    counts: dict[str, int] = {}
    # Keywords are looked up in the original text: a replacement only ever removes evidence, and the markers
    # it adds name no keyword a rule waits for except "aws", which the AWS secret rule wants to see.
    lowered = text.lower()
    rules, keywords = _table()
    present = keywords.found_in(lowered)
    for rule in rules:
        if rule.keywords and present.isdisjoint(rule.keywords):
            continue
        text = _apply(rule, text, counts)
    return ScrubResult(text, merge(Redaction(k, c) for k, c in counts.items()))


def _apply(rule: _Rule, text: str, counts: dict[str, int]) -> str:
    parts: list[str] = []
    last = 0
    mark = marker(rule.kind)
    for m in rule.pattern.finditer(text):
        span = rule.secret(m)
        if span is None or span[0] < last or span[0] >= span[1] or _in_marker(text, span):
            continue
        if rule.token:
            span = _to_token_end(text, span)
        parts += (text[last : span[0]], mark)
        last = span[1]
        counts[rule.kind] = counts.get(rule.kind, 0) + 1
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


# What may still follow where a format rule's pattern stopped inside a token: a provider that adds "-", "_" or
# padding to a format (a Sentry token with a "-" past the characters its rule knew) must not leave the rest behind.
_TOKEN_REST = re.compile(r"[A-Za-z0-9_-]*+={0,3}")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=")


def _to_token_end(text: str, span: _Span) -> _Span:
    """The span widened over the rest of its token: letters, digits, "_", "-", then "=" padding. A secret that spans
    lines or words (a PEM block, a seed phrase) is not one token and keeps its span."""
    start, end = span
    if end >= len(text) or text[end] not in _TOKEN_CHARS or any(c.isspace() for c in text[start:end]):
        return span
    rest = _TOKEN_REST.match(text, end)
    return (start, rest.end()) if rest is not None else span


def _in_marker(text: str, span: _Span) -> bool:
    """Whether the span overlaps a redaction marker: what was removed is not found again (idempotence)."""
    if "[REDACTED:" in text[span[0] : span[1]]:
        return True
    opened = text.rfind("[REDACTED:", max(0, span[0] - _LONGEST_MARKER), span[0] + len("[REDACTED:") - 1)
    return opened >= 0 and text.find("]", opened) >= span[0]


_LONGEST_MARKER = max(len(marker(kind)) for kind in KINDS)


def scrub_value(value: object) -> tuple[object, list[Redaction]]:
    """Scrub a JSON-like value (e.g. memory metadata) recursively.

    Strings are scrubbed with :func:`scrub_text`; dicts keep their keys, lists and tuples their shape; other
    values (numbers, bools, None) are returned as they are. A string stored under a key that names a secret
    ("password", "api_key", "GITHUB_TOKEN", ...) is replaced whole, since the key is all the evidence there
    is. The input is not modified. Returns the new value and the merged redaction counts.
    """
    counts: dict[str, int] = {}
    out = _scrub(value, counts)
    return out, list(merge(Redaction(k, c) for k, c in counts.items()))


def _scrub(value: object, counts: dict[str, int]) -> object:
    if isinstance(value, str):
        result = scrub_text(value)
        for r in result.redactions:
            counts[r.kind] = counts.get(r.kind, 0) + r.count
        return result.text
    if isinstance(value, dict):
        out: dict[object, object] = {}
        for key, item in value.items():
            kind = _secret_key_kind(key, item) if isinstance(item, str) else None
            if kind is not None and item and not item.startswith("[REDACTED:"):
                counts[kind] = counts.get(kind, 0) + 1
                out[key] = marker(kind)
            else:
                out[key] = _scrub(item, counts)
        return out
    if isinstance(value, list):
        return [_scrub(item, counts) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item, counts) for item in value)
    return value


def _secret_key_kind(key: object, value: str) -> str | None:
    if not isinstance(key, str):
        return None
    for kind, pattern in _SECRET_KEYS:
        if pattern.fullmatch(key):
            return kind
    # Any other label that names a credential ("auth", "signing_key"): the value decides.
    if _secret_label(key) and high_entropy(value.strip()):
        return "high_entropy_secret"
    return None


def merge(*groups: Iterable[Redaction]) -> tuple[Redaction, ...]:
    """Combine redaction lists: counts summed per kind, kinds sorted by name, zero counts dropped."""
    totals: dict[str, int] = {}
    for group in groups:
        for r in group:
            totals[r.kind] = totals.get(r.kind, 0) + r.count
    return tuple(Redaction(kind, totals[kind]) for kind in sorted(totals) if totals[kind])
