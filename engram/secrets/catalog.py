"""The secret rules Engram runs: gitleaks' default rule set, whole, and Engram's own rules (engram.toml).

engram.scrub runs its own rules first, then every format rule here, then its generic assignment rules, then
the generic rules here. gitleaks' rules report the redaction kind of their family (``GITLEAKS_KINDS``), and
``service_token`` for the long tail of services.
"""

from __future__ import annotations

import functools

from engram.secrets.rules import ENGRAM_FILE, GITLEAKS_FILE, Check, SecretRule, load
from engram.secrets.seed_phrase import seed_phrase_span

# gitleaks rule id prefix -> redaction kind; the longest matching prefix wins.
GITLEAKS_KINDS: dict[str, str] = {
    "generic-api-key": "api_key",
    "openai-": "api_key",
    "anthropic-": "api_key",
    "stripe-": "api_key",
    "aws-access-token": "aws_access_key",
    "age-secret-key": "private_key",
    "private-key": "private_key",
    "atlassian-": "atlassian_token",
    "curl-auth-header": "bearer_token",
    "curl-auth-user": "basic_auth",
    "databricks-": "databricks_token",
    "digitalocean-": "digitalocean_token",
    "discord-": "discord_token",
    "gcp-api-key": "google_api_key",
    "github-": "github_token",
    "gitlab-": "gitlab_token",
    "hashicorp-tf-password": "password_assignment",
    "heroku-": "heroku_key",
    "huggingface-": "huggingface_token",
    "jwt": "jwt",
    "mailchimp-": "mailchimp_key",
    "mailgun-": "mailgun_key",
    "npm-": "npm_token",
    "nuget-config-password": "password_assignment",
    "pypi-": "pypi_token",
    "sendgrid-": "sendgrid_key",
    "shopify-": "shopify_token",
    "slack-webhook-url": "slack_webhook",
    "slack-": "slack_token",
    "square-": "square_token",
    "telegram-": "telegram_bot_token",
    "twilio-": "twilio_key",
}

CHECKS: dict[str, Check] = {"bip39": seed_phrase_span}


def load_rules() -> tuple[SecretRule, ...]:
    """gitleaks' rules extended by Engram's (engram.toml adds rules and changes some of gitleaks')."""
    return load(GITLEAKS_FILE, ENGRAM_FILE, kinds=GITLEAKS_KINDS, checks=CHECKS)


@functools.cache
def rules() -> tuple[SecretRule, ...]:
    """The rules, loaded once."""
    return load_rules()


def format_rules() -> tuple[SecretRule, ...]:
    """The rules that recognise a secret's own format."""
    return tuple(r for r in rules() if not r.generic)


def generic_rules() -> tuple[SecretRule, ...]:
    """The rules that judge a value by its label or its surroundings alone."""
    return tuple(r for r in rules() if r.generic)
