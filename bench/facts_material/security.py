"""Security: credential rotations (dates only, never values), certificates, SSO, audits, vulnerabilities."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CC, GM, CX = "claude-code", "gemini-cli", "codex"

FACTS = (
    f(
        "dpo",
        "The data protection officer is Clara Meyer (external, via Privacy Partners GmbH)",
        tags=("people",),
        who="who is our DPO?",
    ),
    f(
        "bounty-triage",
        "Bug bounty reports are triaged by Omar within 2 business days",
        tags=("bounty",),
        who="who triages bug bounty submissions?",
    ),
    f(
        "okta-hardening",
        "Enabled Okta ThreatInsight and blocked sign-ins from anonymizing proxies",
        "decision",
        agent=CC,
        tags=("sso",),
        who="which agent turned on the Okta sign-in protections?",
        paraphrase="do we stop logins that come through anonymous proxy networks?",
    ),
    f(
        "stripe-key",
        "Stripe restricted API key for checkout-api rotated on 2026-01-20; next rotation due in July",
        tags=("rotation",),
        paraphrase="when was the payment provider's credential for the order service last replaced?",
    ),
    f(
        "wildcard-cert",
        "The *.example.net wildcard certificate expires on 2026-05-14; cert-manager renews it 30 days before",
        tags=("tls",),
        identifier="*.example.net",
        paraphrase="when does our catch-all TLS certificate run out?",
    ),
    f(
        "sso",
        "SSO is Okta; every internal tool must use SAML or OIDC through it, no local accounts",
        "decision",
        tags=("sso",),
        paraphrase="how should staff sign in to a new internal web tool?",
    ),
    f(
        "mfa",
        "MFA is mandatory for everyone; hardware keys (YubiKey 5) required for prod admins",
        "decision",
        tags=("mfa",),
        paraphrase="what second factor do people with production admin rights need?",
    ),
    f(
        "cve-openssh",
        "CVE-2024-6387 (regreSSHion) patched on all bastions on 2 July 2024",
        "history",
        tags=("cve",),
        identifier="CVE-2024-6387",
    ),
    f(
        "pentest",
        "Annual pentest by Cobalt Box scheduled for the week of 16 March; scope is storefront and checkout-api",
        tags=("audit",),
        paraphrase="when are the outside hackers testing us this year and on what?",
    ),
    f(
        "sec-owner",
        "Fatima Zahra is the security lead; she approves any new third-party data processor",
        tags=("people",),
        who="who must approve a new vendor that will handle our customers' data?",
    ),
    f(
        "secrets-store",
        "Secrets live in Vault at vault.internal:8200 under kv/prod/<service>; apps read them with "
        "the Vault agent injector",
        tags=("vault",),
        identifier="kv/prod/<service>",
        paraphrase="where do services get their credentials from at runtime?",
    ),
    f(
        "gitleaks",
        "gitleaks runs as a pre-commit hook and in CI; `gitleaks protect --staged` locally",
        tags=("scanning",),
        identifier="gitleaks protect --staged",
        who="which agent added the leak scanner to CI?",
        agent=CX,
    ),
    f(
        "soc2",
        "SOC 2 Type II audit window runs 1 April to 30 September; evidence collected in Vanta",
        tags=("audit",),
        paraphrase="during which months is the compliance observation period?",
    ),
    f(
        "dep-policy",
        "Critical CVEs in dependencies must be patched within 7 days, high within 30",
        "decision",
        tags=("cve",),
        paraphrase="how quickly do we have to fix a severe vulnerability in a library we use?",
    ),
    f(
        "ssh-keys",
        "SSH access uses short-lived certificates from Vault SSH CA (8 h TTL); no static keys on servers",
        "decision",
        tags=("ssh",),
        paraphrase="how long is a login credential for the servers valid?",
    ),
    f(
        "waf",
        "Cloudflare WAF rule 100015 blocks the /wp-admin scanner traffic; false positives go to #sec-ops",
        tags=("waf",),
        identifier="WAF rule 100015",
    ),
    f(
        "phishing",
        "Phishing simulation in February: 6% clicked, down from 11% in the autumn",
        "history",
        tags=("training",),
        paraphrase="how many employees fell for the fake email test?",
    ),
    f(
        "aws-root",
        "AWS root account MFA device re-registered on 2026-02-11; the hardware token is in the office safe",
        tags=("rotation", "aws"),
        paraphrase="when was the top-level cloud account's second factor re-enrolled?",
        who="which agent logged the root account MFA change?",
        agent=GM,
    ),
    f(
        "ghsa",
        "GHSA-9wx4-h78v-vm56 (requests) fixed by pinning requests>=2.32.0 in the data-platform repo",
        tags=("cve",),
        identifier="GHSA-9wx4-h78v-vm56",
    ),
    f(
        "csp",
        "Storefront Content-Security-Policy is enforced (no longer report-only) since 3 February",
        "decision",
        tags=("web",),
        paraphrase="is the browser script allow-list actually blocking things on the shop yet?",
    ),
    f(
        "incident-lead",
        "Omar Haddad is incident commander for security incidents outside office hours",
        tags=("people",),
        who="who leads a security incident at night?",
    ),
    f(
        "access-review",
        "Quarterly access review (a SOC 2 control): managers confirm their team's Okta groups by the 15th of "
        "the quarter's first month",
        tags=("audit",),
        paraphrase="when do managers have to check who has access to what?",
    ),
    f(
        "kms",
        "Database encryption keys are in AWS KMS, key alias alias/prod-db, automatic yearly rotation on",
        tags=("kms",),
        identifier="alias/prod-db",
    ),
    f(
        "scrub",
        "Logs must never contain tokens; the log shipper drops fields named token, secret, authorization",
        "decision",
        tags=("logs",),
        who="which agent wrote the rule about dropping credential fields from logs?",
        agent=CC,
    ),
    f(
        "vuln-scan",
        "Container images are scanned with Trivy in CI; builds fail on CRITICAL findings with a fix",
        tags=("scanning",),
        identifier="Trivy",
    ),
)

CHAINS = (
    chain(
        "staging-db-pass",
        "when was the staging database password last rotated?",
        v("The staging database password was rotated on 2025-12-01", agent=CC),
        v("The staging database password was rotated on 2026-03-02 (quarterly rotation)", "supersede", agent=GM),
        tags=("rotation",),
    ),
    chain(
        "github-token",
        "when does the deploy bot's GitHub token expire?",
        v("Deploy bot GitHub token expires 2026-02-28", agent=CX),
        v(
            "Deploy bot moved to a GitHub App installation token (1 h, auto-refreshed); the PAT is revoked",
            "supersede",
            agent=CC,
        ),
        tags=("rotation",),
    ),
    chain(
        "prod-db-rotation",
        "when were the production database credentials last rotated?",
        v("Prod Postgres app user credentials rotated on 2026-01-05", agent=GM),
        v("Prod Postgres app credentials rotated 2026-02-02 after the contractor offboarding", "unmarked", agent=CX),
        v("Prod Postgres credentials rotated again on 2026-03-03 (quarterly)", "supersede", agent=GM),
        tags=("rotation",),
    ),
    chain(
        "smtp-key",
        "when was the email sending key rotated?",
        v("SendGrid API key for transactional email rotated 2025-11-18", agent=CC),
        v(
            "Transactional email moved to Amazon SES; SMTP credentials created 2026-02-09, SendGrid key deleted",
            "unmarked",
            agent=GM,
        ),
        tags=("rotation",),
    ),
    chain(
        "tls-min",
        "what is the minimum TLS version on the public endpoints?",
        v("Public endpoints accept TLS 1.2 and 1.3", agent=GM),
        v("TLS 1.2 disabled on the public API; 1.3 only since the 1 March change", "supersede", agent=CC),
        tags=("tls",),
    ),
    chain(
        "password-policy",
        "what is the minimum password length?",
        v("Password policy: 12 characters minimum, rotation every 90 days", agent=CX),
        v("Password policy now 14 characters minimum and no forced rotation (NIST 800-63B)", "supersede", agent=GM),
        type="decision",
        tags=("policy",),
    ),
    chain(
        "vault-version",
        "which Vault version runs in production?",
        v("Vault 1.14.4 in production", agent=CX),
        v("Vault upgraded to 1.15.6", "unmarked", agent=CX),
        tags=("vault",),
    ),
    chain(
        "ci-oidc",
        "how does CI authenticate to AWS?",
        v("CI uses an IAM user's access key stored as a GitHub secret (rotated every 90 days)", agent=CC),
        v(
            "CI authenticates to AWS with GitHub OIDC and role ci-deployer; the IAM user was deleted",
            "supersede",
            agent=CX,
        ),
        tags=("aws",),
    ),
)

HOPS = (
    hop("under which Vault path does the order service read its payment provider key?", "stripe-key", "secrets-store"),
    hop("who approves the vendor that runs our annual pentest?", "pentest", "sec-owner"),
    hop("where is the night rota pinned for the team that handles WAF false positives?", "waf", "sec-ops"),
    hop("what key alias encrypts the databases whose credentials are rotated quarterly?", "db-quarterly", "kms"),
    hop("which compliance tool collects the access review evidence?", "access-review", "soc2"),
    hop("which scanner checks the images that get mirrored to registry.internal:5000?", "infra:mirror", "vuln-scan"),
)

EXTRA = (
    f("sec-ops", "#sec-ops is the security team's Slack channel; the night rota is pinned there", tags=("people",)),
    f(
        "db-quarterly",
        "Quarterly rotations cover the prod and staging Postgres databases on AWS RDS",
        tags=("rotation",),
    ),
)

NOTES = (
    *notes(
        "finding",
        "Two stale Okta accounts of former contractors were still active; disabled",
        "The admin-portal session cookie lacked SameSite; fixed to Lax",
        "An S3 bucket with marketing exports was public-read; made private, no sensitive data in it",
        "Dependabot opened 40 PRs in one week; grouped updates enabled",
    ),
    *notes(
        "action-item",
        "Move the remaining service accounts from static keys to workload identity",
        "Write the incident response runbook for a leaked customer export",
        "Confirm with legal which logs count as personal data",
    ),
    *notes(
        "decision",
        "Security reviews are required for any new public endpoint",
        "Personal devices may read email but not access production",
    ),
)

SYSTEMS = (
    "Grafana service account",
    "Sentry auth token",
    "Slack bot token",
    "Algolia admin key",
    "Snowflake service user",
    "Cloudflare API token",
    "PagerDuty integration key",
    "Mailgun key (legacy)",
    "Figma API token",
    "Looker API client",
    "Docker Hub pull token",
    "LaunchDarkly SDK key",
    "Fivetran API key",
    "Zendesk API token",
    "Bitrise API token",
    "Crowdin token",
    "Vercel deploy hook",
    "Okta API token for SCIM",
    "Intercom access token",
    "Firebase service account",
    "Amplitude API key",
    "Twilio auth token",
    "HubSpot private app token",
    "Jira automation token",
)


def fill(rng: Random) -> list[Fact]:
    """Rotation log lines: a credential, a date (never a value)."""
    out: list[Fact] = []
    for system in SYSTEMS:
        month = rng.randint(1, 3)
        day = f"2026-{month:02d}-{rng.randint(1, 14 if month == 3 else 28):02d}"  # the saves end mid-March
        text = rng.choice(
            (
                "{s} rotated on {d}",
                "Rotated the {s} ({d}); old one revoked",
                "{s}: rotation done {d}, next due in 90 days",
                "{s} rotated {d} by the on-call",
            )
        )
        out.append(
            Fact(f"rot-{len(out)}", text.format(s=system, d=day).replace("the the", "the"), "history", ("rotation",))
        )
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "The staging API accepted expired JWTs for 5 minutes because of clock skew leeway; reduced to 30 s",
        "Three repos still had a deprecated GitHub Actions runner with a vulnerable Node 16",
        "Password reset emails were not rate limited per account; limit of 5 per hour added",
        "An old Jenkins server was still reachable from the office network; shut down",
        "Audit logs for Okta admin actions were kept only 90 days; export to S3 added",
    ),
    *notes(
        "decision",
        "Customer data exports are encrypted and expire after 7 days",
        "Break-glass accounts are tested every quarter and their use pages the security lead",
        "Third-party scripts on the storefront need a subresource integrity hash",
        "Vendors get access only through their own SSO accounts, never shared logins",
    ),
    *notes(
        "action-item",
        "Rotate the break-glass account's hardware token after the audit",
        "Finish the data-processing register for the new CRM",
        "Review the bug bounty scope with the web team",
        "Send the security awareness training reminder to the new joiners",
    ),
    *notes(
        "fact",
        "The security team is three people; the bug bounty runs on Intigriti",
        "We received 41 bug bounty reports last year, 6 valid",
    ),
)

DOMAIN = Domain("security", (CC, GM, CX), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
