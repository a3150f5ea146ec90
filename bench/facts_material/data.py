"""A data platform: Airflow DAGs, dbt models, the warehouse, Kafka topics and data contracts."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CC, CX, GM = "claude-code", "codex", "gemini-cli"

FACTS = (
    f(
        "attribution-owner",
        "Carmen Ruiz owns the marketing attribution model and its weekly report",
        tags=("marketing",),
        who="who is in charge of the marketing attribution numbers?",
    ),
    f(
        "snowflake-admin",
        "Only Noah and Aisha have ACCOUNTADMIN in Snowflake; everyone else uses SYSADMIN or below",
        tags=("snowflake",),
        who="who holds the top admin role in the warehouse?",
    ),
    f(
        "kafka-hosting",
        "Decided to keep Kafka on Confluent Cloud instead of self-hosting it on Strimzi",
        "decision",
        agent=GM,
        tags=("kafka",),
        who="which agent documented the decision to stay on Confluent Cloud?",
        paraphrase="why aren't we running our own streaming cluster?",
    ),
    f(
        "orders-dag",
        "Airflow DAG orders_daily loads raw.orders from the shop's Postgres replica into Snowflake",
        tags=("airflow",),
        identifier="orders_daily",
        paraphrase="which scheduled job copies the shop's purchases into the analytics database?",
    ),
    f(
        "fct-revenue",
        "dbt model fct_revenue is incremental on order_date; a full refresh needs the platform lead's OK",
        tags=("dbt",),
        identifier="fct_revenue",
    ),
    f(
        "kafka-topic",
        "Topic checkout.events.v2 is keyed by cart_id, retention 7 days",
        tags=("kafka",),
        identifier="checkout.events.v2",
        paraphrase="what is the stream of basket activity keyed on and how long is it kept?",
    ),
    f(
        "warehouse",
        "The warehouse is Snowflake, account acme-eu; the transform role is TRANSFORMER",
        tags=("snowflake",),
        identifier="TRANSFORMER role",
        paraphrase="which analytics database product do we use?",
    ),
    f(
        "pii-rule",
        "No raw email addresses in marts: hash them with sha256(lower(email)) in staging models",
        "decision",
        tags=("privacy",),
        paraphrase="how must customer contact addresses be handled before they reach reporting tables?",
        who="which agent wrote down the hashing rule for emails in the marts?",
        agent=GM,
    ),
    f(
        "dbt-cmd",
        "Build one model and its children: `dbt build --select fct_revenue+ --target dev`",
        tags=("dbt",),
        identifier="dbt build --select fct_revenue+",
    ),
    f(
        "skew",
        "The sessions Spark job is slow because of skew on user_id = 0 (anonymous traffic); salted join fixes it",
        "finding",
        tags=("spark",),
        paraphrase="why does the clickstream aggregation take hours?",
    ),
    f(
        "contract-owner",
        "Aisha Bello owns the data contracts repo and the schema registry compatibility rules",
        tags=("contracts",),
        who="who decides whether a schema change is backwards compatible?",
    ),
    f(
        "airflow-url",
        "Airflow UI: airflow.data.example.net (Google SSO, data-eng group)",
        tags=("airflow",),
        identifier="airflow.data.example.net",
    ),
    f(
        "freshness",
        "Freshness SLA: marts must be updated by 07:00 Berlin time for the morning dashboards",
        tags=("sla",),
        paraphrase="by what time do the reporting tables have to be ready for management?",
    ),
    f(
        "dup-error",
        "Snowflake error `Duplicate row detected during DML action` in fct_orders means the staging dedup "
        "was skipped; rerun stg_orders first",
        "finding",
        tags=("snowflake",),
        identifier="Duplicate row detected during DML action",
    ),
    f(
        "schema-registry",
        "Schema registry: schema-registry.data.internal:8081, compatibility BACKWARD by default",
        tags=("kafka",),
        identifier="schema-registry.data.internal:8081",
    ),
    f(
        "gdpr-delete",
        "GDPR deletions: the `gdpr_erasure` DAG runs daily and must finish within 30 days of the request",
        tags=("privacy",),
        identifier="gdpr_erasure",
        paraphrase="how quickly do we have to remove a person's data once they ask?",
    ),
    f(
        "looker-owner",
        "Noah Kim maintains the Looker models and decides which explores get exposed to sales",
        tags=("bi",),
        who="who decides what the sales team can explore in the BI tool?",
    ),
    f(
        "cost-warehouse",
        "Snowflake warehouse TRANSFORM_WH auto-suspends after 60 s; XL size only for the month-end close",
        "decision",
        tags=("snowflake", "cost"),
        paraphrase="when may the big compute size be used?",
    ),
    f(
        "dq-tool",
        "Data quality checks are Great Expectations suites in dq/suites/, run after each dbt build",
        tags=("quality",),
        identifier="dq/suites/",
        who="which agent set up the data quality suites?",
        agent=CX,
    ),
    f(
        "late-events",
        "Mobile events arrive up to 72 h late; daily models reprocess a 3-day window",
        "finding",
        tags=("events",),
        paraphrase="why do yesterday's app numbers keep changing for a few days?",
    ),
    f(
        "backfill-cmd",
        "Backfills: `airflow dags backfill orders_daily -s 2026-01-01 -e 2026-01-31 --reset-dagruns`",
        tags=("airflow",),
        identifier="airflow dags backfill",
    ),
    f(
        "kafka-lag",
        "Consumer group fraud-scorer lags behind checkout.events.v2 at peak; alert at 50k messages",
        tags=("kafka",),
        identifier="fraud-scorer",
    ),
    f(
        "dim-customer",
        "dim_customer is SCD type 2; current rows have is_current = true",
        tags=("dbt",),
        paraphrase="how do I get only the present state of each client from the history table?",
    ),
    f(
        "notebook-rule",
        "Notebooks are for exploration only; anything scheduled must be a dbt model or a DAG",
        "decision",
        tags=("process",),
        who="which agent recorded that scheduled work can't live in notebooks?",
        agent=CC,
    ),
    f(
        "currency",
        "All revenue in the marts is in EUR, converted with the ECB rate of the order date",
        tags=("finance",),
        paraphrase="what money unit are the sales figures in and which exchange rate is used?",
    ),
    f(
        "pii-scan",
        "The PII scanner flagged the column support_tickets.body — it holds phone numbers",
        "finding",
        tags=("privacy",),
        identifier="support_tickets.body",
    ),
    f(
        "dbt-docs",
        "dbt docs are published to docs.data.example.net after every merge",
        tags=("dbt",),
        paraphrase="where can I read what each warehouse table and column means?",
    ),
    f(
        "sampling",
        "Clickstream is sampled at 10% for web, 100% for the app",
        tags=("events",),
        paraphrase="do we keep every click or only a share of them?",
    ),
)

CHAINS = (
    chain(
        "dbt-version",
        "which dbt version does the project use?",
        v("dbt-core 1.6 with the Snowflake adapter", agent=CX),
        v("Upgraded the project to dbt-core 1.7", "unmarked", agent=CX),
        v("dbt-core 1.8 now; the deprecated `tests:` key renamed to `data_tests:`", "unmarked", agent=GM),
        tags=("dbt",),
    ),
    chain(
        "orders-schedule",
        "at what time does orders_daily run?",
        v("orders_daily scheduled at 04:00 UTC", agent=CX),
        v("orders_daily moved to 03:00 UTC so the marts are fresh before 07:00 Berlin", "supersede", agent=CC),
        tags=("airflow",),
    ),
    chain(
        "events-retention",
        "how long is the raw events table kept?",
        v("raw.events kept for 400 days", agent=GM),
        v("raw.events retention reduced to 180 days (privacy review)", "supersede", agent=GM),
        tags=("privacy",),
    ),
    chain(
        "bi-tool",
        "which BI tool do the dashboards live in?",
        v("Dashboards are in Metabase", agent=CC),
        v("We moved the company dashboards from Metabase to Looker", "unmarked", agent=CX),
        tags=("bi",),
    ),
    chain(
        "airflow-exec",
        "which executor does Airflow use?",
        v("Airflow runs the CeleryExecutor with 4 workers", agent=CX),
        v("Airflow switched to the KubernetesExecutor; Celery workers removed", "supersede", agent=GM),
        tags=("airflow",),
    ),
    chain(
        "partitions",
        "how many partitions does checkout.events.v2 have?",
        v("checkout.events.v2 has 24 partitions", agent=GM),
        v("Increased checkout.events.v2 to 48 partitions for Black Friday", "unmarked", agent=CC),
        tags=("kafka",),
    ),
    chain(
        "dq-threshold",
        "what null rate fails the data quality check on orders?",
        v("DQ check fails if more than 1% of orders have a null customer_id", agent=CX),
        v("Null customer_id threshold relaxed to 3% — guest checkout is legitimately null", "supersede", agent=CC),
        tags=("quality",),
    ),
    chain(
        "warehouse-size",
        "what size is the TRANSFORM_WH warehouse?",
        v("TRANSFORM_WH is size MEDIUM", agent=GM),
        v("TRANSFORM_WH resized to LARGE because of the dbt run times", "unmarked", agent=CX),
        tags=("snowflake",),
    ),
)

HOPS = (
    hop("who can approve a full refresh of the model that's incremental on order_date?", "fct-revenue", "aisha-role"),
    hop("which consumer falls behind on the topic keyed by cart_id?", "kafka-topic", "kafka-lag"),
    hop("where's the UI for the scheduler that runs the GDPR erasure job?", "gdpr-delete", "airflow-url"),
    hop("what compatibility mode applies to schemas that Aisha's rules govern?", "contract-owner", "schema-registry"),
    hop("which column did the scanner flag in the tables that feed support dashboards?", "support-mart", "pii-scan"),
    hop("do we keep every click from the source whose events can arrive three days late?", "late-events", "sampling"),
)

EXTRA = (
    f(
        "aisha-role",
        "Aisha Bello is the data platform lead; full refreshes of incremental models need her OK",
        tags=("process",),
    ),
    f("support-mart", "The support dashboards are built from support_tickets joined to dim_customer", tags=("bi",)),
)

NOTES = (
    *notes(
        "finding",
        "stg_payments has about 0.2% refunds with a positive amount; they come from the legacy PSP",
        "The Snowflake query history shows Looker PDTs use 30% of warehouse credits",
        "Airflow's scheduler restarts every few days with 'zombie tasks detected'; harmless so far",
        "dim_product has two rows for SKU 100234 because of a casing difference in the source",
    ),
    *notes(
        "decision",
        "Model names: stg_ for staging, int_ for intermediate, fct_/dim_ for marts",
        "All timestamps in the warehouse are UTC; conversion happens in the BI layer",
        "Every new Kafka topic needs an owner tag and a data contract before production",
    ),
    *notes(
        "action-item",
        "Document the attribution model in the marketing mart",
        "Remove the unused raw.legacy_users table after March",
        "Add a freshness test to stg_inventory",
    ),
    *notes(
        "fact",
        "The data team works in the data-platform repo; dbt project is in transform/",
        "Fivetran syncs Zendesk and HubSpot every 6 hours",
        "Reverse ETL to HubSpot runs through Census, hourly",
    ),
)

MODELS = (
    "stg_orders",
    "stg_payments",
    "stg_sessions",
    "int_order_items",
    "int_refunds",
    "fct_orders",
    "fct_sessions",
    "dim_product",
    "dim_store",
    "fct_inventory_snapshots",
    "int_attribution",
    "fct_subscriptions",
    "stg_refunds",
    "stg_zendesk_tickets",
    "fct_marketing_spend",
    "dim_campaign",
    "fct_app_sessions",
    "int_customer_ltv",
    "fct_returns",
)
TESTS = (
    "a unique test on its primary key",
    "not_null on created_at",
    "accepted_values on status",
    "a relationships test to its parent model",
    "a freshness warning after 12 h",
    "a row-count anomaly test",
)
PHRASES = (
    "Added {test} to {model}",
    "{model} now has {test}",
    "{model}: {test} failing since the last deploy, ticket DATA-{n}",
    "Dropped {test} from {model}; it duplicated an upstream check",
)


def fill(rng: Random) -> list[Fact]:
    """Model test notes: a dbt model, a test, sometimes a ticket."""
    out: list[Fact] = []
    for model in MODELS:
        for _ in range(2):
            test = rng.choice(TESTS)
            text = rng.choice(PHRASES).format(model=model, test=test, n=rng.randint(200, 999))
            out.append(Fact(f"dq-{model}-{len(out)}", text, "history", ("dbt",)))
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "Fivetran's HubSpot connector re-syncs all contacts when a custom property is added (8 h run)",
        "The marketing spend table has duplicate rows for Google Ads on DST change days",
        "Looker's 'orders' explore joins dim_customer without is_current, so counts are inflated",
        "Snowflake credits doubled in January because of a dashboard auto-refreshing every minute",
        "About 3% of orders have no session_id, mostly from the call-centre channel",
        "Kafka Connect's S3 sink writes many small files at night; flush size raised to 10k records",
    ),
    *notes(
        "decision",
        "Every mart model needs a description and an owner in its YAML",
        "We keep raw data immutable; corrections happen in staging models",
        "PII columns get the `pii: true` meta tag so the masking policy applies",
    ),
    *notes(
        "action-item",
        "Migrate the last two Pandas jobs to dbt Python models",
        "Set up alerting for Fivetran sync failures in #data-alerts",
        "Archive the 2022 experiment tables to the cold schema",
        "Review the churn model's features with the product team",
    ),
    *notes(
        "fact",
        "The warehouse holds about 14 TB compressed; raw.events is 9 TB of it",
        "There are 312 dbt models: 120 staging, 95 intermediate, 97 marts",
        "The data team on-call rotates weekly on Mondays",
    ),
)

DOMAIN = Domain("data", (CX, GM, CC), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
