"""The gateway's lifecycle requests without a node: expiry durations, update masks, replacement rules, status
filters, the routes the edge reads as JSON, and the CLI's requests and output."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from engram.cli import build_parser
from engram.cli.common import UsageError, build_call
from engram.cli.memories import render_history, render_stats
from engram.errors import InvalidArgument
from engram.model import Caller, format_time, parse_time
from engram.services.gateway.operations import Operations, memories
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.memories import DURATION_UNITS, expiry_time
from engram.services.gateway.rest.bodies import reads_json_body
from engram.services.gateway.schemas.arguments import DURATION_PATTERN
from engram.services.gateway.schemas.requests import (
    REPLACEMENT_FIELDS,
    SUPERSEDE_RULE,
    UPDATE_FIELDS,
    UPDATE_RULE,
    Filters,
    SaveRequest,
    SupersedeRequest,
    UpdateRequest,
)
from engram.validation import TIME_RANGE

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


# --- expiry durations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90s", 90), ("45m", 45 * 60), ("12h", 12 * 3600), ("30d", 30 * 86400), ("2w", 14 * 86400), ("1s", 1)],
)
def test_an_expiry_duration_counts_from_now(value: str, seconds: int) -> None:
    assert expiry_time(value, now=NOW) == NOW + seconds


def test_an_expiry_time_is_read_as_rfc3339_and_empty_is_none() -> None:
    assert expiry_time("2031-01-31T12:00:00Z", now=NOW) == parse_time("2031-01-31T12:00:00Z")
    assert expiry_time("2031-01-31T13:00:00+01:00", now=NOW) == parse_time("2031-01-31T12:00:00Z")
    assert expiry_time(None, now=NOW) is None
    assert expiry_time("", now=NOW) is None


@pytest.mark.parametrize("value", ["30 days", "0d", "05d", "1y", "d", "-3d", "3.5h", "1000000s", "100000w", "tomorrow"])
def test_anything_else_is_refused_naming_expires_at_and_both_forms(value: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        expiry_time(value, now=NOW)
    assert refused.value.field == "expires_at"
    assert "RFC 3339" in refused.value.problem and "30d" in refused.value.problem


@pytest.mark.parametrize("value", ["999999s", "999999m", "999999h", "999999d", "99999w"])
def test_the_longest_published_durations_still_end_before_the_year_9999(value: str) -> None:
    assert re.fullmatch(DURATION_PATTERN, value)
    moment = expiry_time(value, now=datetime(2100, 1, 1, tzinfo=UTC).timestamp())
    assert moment is not None and format_time(moment) is not None


def test_the_published_pattern_is_the_one_the_parser_reads() -> None:
    assert DURATION_PATTERN.startswith("^") and DURATION_PATTERN.endswith("$")
    assert set(DURATION_UNITS) == set("smhdw")
    for value in ("1s", "30d", "2w", "999999d", "0d", "1000000d", "100000w", "30D", "30dd"):
        published = re.fullmatch(DURATION_PATTERN, value) is not None
        try:
            read = expiry_time(value, now=NOW) is not None
        except InvalidArgument:
            read = False
        assert published == read, value


# --- update masks and replacement rules ---------------------------------------------------------------------


def test_the_update_mask_names_the_fields_given_with_metadata_as_metadata_json() -> None:
    request = UpdateRequest(content="c", metadata={"k": 1}, tags=[], summary=None, expected_version=3)
    assert [memories._INPUT_NAME.get(n, n) for n in UPDATE_FIELDS if getattr(request, n) is not None] == [
        "content", "tags", "metadata_json",
    ]  # fmt: skip
    draft = memories.memory_input(request)
    assert (draft.content, draft.tags, draft.metadata_json, draft.summary) == ("c", [], '{"k": 1}', "")


def test_every_update_field_is_a_request_field_and_the_published_rule_names_each() -> None:
    assert set(UPDATE_FIELDS) == set(UpdateRequest.model_fields) - {"expected_version"}
    assert [branch["required"] for branch in UPDATE_RULE["anyOf"]] == [[name] for name in UPDATE_FIELDS]
    assert UpdateRequest.model_json_schema()["anyOf"] == UPDATE_RULE["anyOf"]


@pytest.mark.anyio
async def test_an_update_without_a_field_is_refused_before_any_call() -> None:
    ops = Operations(backend=None, cursors=CursorTracker())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="give at least one field to change"):
        await ops.update(Caller("ns", "a"), "id", UpdateRequest(summary=None, expected_version=2))


@pytest.mark.parametrize(
    ("fields", "refused"),
    [({}, "content"), ({"content": "c", "new_id": "n"}, "new_id"), ({"new_id": "n", "tags": ["t"]}, "tags")],
)
def test_a_supersede_needs_exactly_one_replacement(fields: dict[str, Any], refused: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        memories._check_replacement(SupersedeRequest(**fields))
    assert error.value.field == refused


@pytest.mark.parametrize("fields", [{"content": "c", "tags": ["t"]}, {"new_id": "n", "expected_version": 2}])
def test_a_supersede_with_one_replacement_passes(fields: dict[str, Any]) -> None:
    memories._check_replacement(SupersedeRequest(**fields))
    assert SupersedeRequest.model_json_schema()["anyOf"] == SUPERSEDE_RULE["anyOf"]


def test_the_supersede_rule_lists_every_save_field() -> None:
    supersede_fields = set(SupersedeRequest.model_fields) - {"new_id", "expected_version"}
    assert set(REPLACEMENT_FIELDS) == set(SaveRequest.model_fields) == supersede_fields


# --- filters and routes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "statuses"),
    [
        (Filters(), []),
        (Filters(include_archived=True), ["active", "archived"]),
        (Filters(status="superseded"), ["superseded"]),
        (Filters(status=["expired"], include_archived=True), ["expired", "archived"]),
        (Filters(status=["archived"], include_archived=True), ["archived"]),
    ],
)
def test_status_filters_and_include_archived_become_the_statuses_searched(
    filters: Filters, statuses: list[str]
) -> None:
    assert memories._filter(filters).statuses == statuses


def test_team_and_as_of_reach_the_kernel_filter() -> None:
    flt = memories._filter(Filters(team="infra"), as_of=5.0)
    assert (flt.team, flt.as_of) == ("infra", 5.0)


@pytest.mark.parametrize(
    ("method", "path", "json"),
    [
        ("POST", "/v1/memories", True),
        ("POST", "/v1/memories:search", True),
        ("PATCH", "/v1/memories/0192-ab", True),
        ("POST", "/v1/memories/0192-ab:supersede", True),
        ("POST", "/v1/memories:import", False),
        ("DELETE", "/v1/memories/0192-ab", False),
        ("GET", "/v1/memories/0192-ab/history", False),
        ("PATCH", "/v1/memories/a/b", False),
    ],
)
def test_the_edge_reads_json_bodies_of_exactly_the_json_routes(method: str, path: str, json: bool) -> None:
    assert reads_json_body(method, path) is json


# --- the CLI ------------------------------------------------------------------------------------------------


def _call(*argv: str) -> Any:
    return build_call(build_parser().parse_args(list(argv)))


def test_cli_update_sends_only_the_fields_given() -> None:
    call = _call("update", "m-1", "--tag", "a", "--tag", "b", "--expires", "30d", "--expected-version", "4")
    assert (call.method, call.path) == ("PATCH", "/v1/memories/m-1")
    assert call.body == {"tags": ["a", "b"], "expires_at": "30d", "expected_version": 4}


def test_cli_update_without_a_field_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="nothing to change"):
        _call("update", "m-1", "--expected-version", "2")


def test_cli_supersede_purge_and_reads_build_their_routes() -> None:
    new = _call("supersede", "m/1", "--content", "new fact", "--type", "decision")
    assert (new.method, new.path, new.body) == (
        "POST", "/v1/memories/m%2F1:supersede", {"content": "new fact", "memory_type": "decision"},
    )  # fmt: skip
    assert _call("supersede", "m", "--new-id", "n").body == {"new_id": "n"}
    with pytest.raises(UsageError, match="--new-id takes no other fields"):
        _call("supersede", "m", "--new-id", "n", "--tag", "t")
    purge = _call("admin", "purge", "m")
    assert (purge.method, purge.params) == ("DELETE", {"purge": "true"}) and "admin" in purge.hint_403
    assert _call("at", "m", "2026-01-01T00:00:00Z").params == {"time": "2026-01-01T00:00:00Z"}
    assert _call("stats").path == "/v1/stats"


def test_cli_renders_history_and_stats_for_people() -> None:
    history = {
        "memory_id": "m",
        "versions": [
            {"version": 1, "updated_at": "2026-01-01T00:00:00.000Z", "event": "memory_saved", "agent_id": "a",
             "source": "mcp", "status": "active", "content": "x " * 200},
        ],
    }  # fmt: skip
    text = render_history(history)
    assert text.splitlines()[0] == "Memory m: 1 version, oldest first"
    assert "v1  2026-01-01T00:00:00.000Z  saved by a via mcp  [active]" in text
    assert text.endswith("…")
    stats = {
        "namespace": "ns", "memories": 2, "total": 3, "by_agent": {"a": 1, "b": 2}, "by_type": {"fact": 3},
        "by_status": {"active": 2, "archived": 1}, "by_team": {}, "applied_seq": 9, "log_last_seq": 9,
    }  # fmt: skip
    lines = render_stats(stats).splitlines()
    assert lines[0].startswith("Namespace ns: 2 active memories, 3 in all")
    assert "b 2 · a 1" in lines[2] and lines[4].endswith("none")


@pytest.mark.parametrize("value", ["0000-06-01T00:00:00Z", "0001-01-01T00:00:00+01:01", "9999-12-31T23:59:59-23:59"])
def test_rfc3339_times_beyond_the_years_0001_to_9999_are_refused_not_moved(value: str) -> None:
    # Year 0000 and offsets across either end are valid RFC 3339, but no time Engram can store.
    with pytest.raises(InvalidArgument) as as_of:
        memories._time("as_of", value)
    with pytest.raises(InvalidArgument) as expires:
        expiry_time(value, now=NOW)
    for info, field in ((as_of, "as_of"), (expires, "expires_at")):
        assert info.value.field == field
        assert f"{value!r} is outside the times Engram stores, {TIME_RANGE}" in str(info.value)


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "1900-01-01T00:00:00+01:00"])
def test_the_first_and_last_moments_of_the_years_0001_to_9999_are_kept(value: str) -> None:
    assert format_time(memories._time("as_of", value)) == format_time(parse_time(value))
    assert expiry_time(value, now=NOW) == parse_time(value)
