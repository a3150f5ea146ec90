"""Settings carry their own limits (engram.config.limited): one validator reads them, the messages read as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from engram.config import LIMIT, Limit, Settings, SettingsError


def outside(limit: Limit, defaults: Settings) -> Any:
    """A value the limit refuses, computed from its declaration."""
    if limit.choices:
        return "not-a-choice"
    if limit.pattern is not None:
        return "../x"

    def bound(b: float | str) -> Any:
        return getattr(defaults, b) if isinstance(b, str) else b

    if limit.ge is not None:
        return bound(limit.ge) - 1
    if limit.gt is not None:
        return bound(limit.gt) - 1
    assert limit.le is not None
    return bound(limit.le) + 1


LIMITED = [f for f in dataclasses.fields(Settings) if LIMIT in f.metadata]


def test_the_defaults_are_within_every_limit() -> None:
    Settings(home=Path("/tmp/h")).validate()
    assert len(LIMITED) >= 35


@pytest.mark.parametrize("field", LIMITED, ids=[f.name for f in LIMITED])
def test_every_limit_refuses_a_value_outside_it_naming_its_variable(field: dataclasses.Field[Any]) -> None:
    defaults = Settings(home=Path("/tmp/h"))
    value = outside(field.metadata[LIMIT], defaults)

    with pytest.raises(SettingsError, match=f"ENGRAM_{field.name.upper()}"):
        dataclasses.replace(defaults, **{field.name: value}).validate()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ENGRAM_PORT": "70000"}, "ENGRAM_PORT must be 0-65535, got 70000"),
        ({"ENGRAM_DISK_RESERVE_MB": "-1"}, "ENGRAM_DISK_RESERVE_MB must be >= 0, got -1"),
        ({"ENGRAM_JOB_LEASE_SECONDS": "0"}, "ENGRAM_JOB_LEASE_SECONDS must be > 0, got 0.0"),
        ({"ENGRAM_SIMILAR_FINDING_THRESHOLD": "0"}, "ENGRAM_SIMILAR_FINDING_THRESHOLD must be in (0, 1], got 0.0"),
        ({"ENGRAM_SYNC_BATCH": "501"}, "ENGRAM_SYNC_BATCH must be 1-500, got 501"),
        ({"ENGRAM_EMBED_PRECISION": "fp16"}, "ENGRAM_EMBED_PRECISION must be 'fp32' or 'int8', got 'fp16'"),
        ({"ENGRAM_STREAM_REPLICAS": "7"}, "ENGRAM_STREAM_REPLICAS must be 1-5 (a NATS cluster keeps at most 5), got 7"),
        ({"ENGRAM_MIN_RELEVANCE": "2"}, "ENGRAM_MIN_RELEVANCE must be between 0 and 1 (0: no floor), got 2.0"),
        (
            {"ENGRAM_MAX_IMPORT_LINE_BYTES": "8192", "ENGRAM_MAX_IMPORT_BYTES": "4096"},
            "ENGRAM_MAX_IMPORT_BYTES must be at least ENGRAM_MAX_IMPORT_LINE_BYTES",
        ),
        (
            {"ENGRAM_DECAY_ARCHIVE_AFTER_DAYS": "10"},
            "ENGRAM_DECAY_ARCHIVE_AFTER_DAYS must be 0 (never) or more than ENGRAM_DECAY_COLD_AFTER_DAYS",
        ),
        (
            {"ENGRAM_SYNC_RETRY_FIRST_SECONDS": "600"},
            "ENGRAM_SYNC_INTERVAL_SECONDS must be > 0 and 0 < ENGRAM_SYNC_RETRY_FIRST_SECONDS <= "
            "ENGRAM_SYNC_RETRY_MAX_SECONDS",
        ),
        (
            {"ENGRAM_HOOK_SPOOL_MAX_BYTES": "1024"},
            "ENGRAM_HOOK_CONTEXT_TOKENS must be 50-8000, ENGRAM_HOOK_MIN_QUALITY 0-1, ENGRAM_HOOK_MAX_CHARS >= 80 and "
            "ENGRAM_HOOK_SPOOL_MAX_BYTES >= 65536",
        ),
        ({"ENGRAM_NATS_USER": "u"}, "ENGRAM_NATS_USER and ENGRAM_NATS_PASSWORD go together: set both or neither"),
    ],
)
def test_the_messages_read_as_before(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env(env)

    assert str(refused.value) == message


def test_archiving_stays_off_at_zero_whatever_the_cold_tier() -> None:
    assert Settings.from_env({"ENGRAM_DECAY_ARCHIVE_AFTER_DAYS": "0"}).decay_archive_after_days == 0
    assert Settings.from_env({"ENGRAM_DECAY_ARCHIVE_AFTER_DAYS": "31"}).decay_archive_after_days == 31
