"""Property-based fuzzing of the REST API from its own OpenAPI document (Schemathesis) against a real node.

Every operation is tried with valid inputs (positive) and with inputs that break the schema (negative); the
default Schemathesis checks run on each answer: never a 5xx, status codes and bodies as documented, invalid
input refused, valid input accepted. ENGRAM_FUZZ_EXAMPLES sets the examples per operation and mode (`make fuzz`
runs many more than `make test`)."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks
from schemathesis.checks import CheckContext
from schemathesis.config import SchemathesisConfig
from schemathesis.core import NOT_SET

from engram.services.gateway.sse.routes import STREAM_PATH
from tests.conftest import NodeHandle
from tests.fuzz.rules import CONSOLIDATION_RULES, PACK_RULES, TIME_RULES, VALUE_RULES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "20"))
# make test runs the same examples every time (CI stays reproducible); make fuzz explores new ones each run.
DERANDOMIZE = os.environ.get("ENGRAM_FUZZ_RANDOM", "") != "1"

# uvicorn's answer to a request HTTP itself cannot frame (it never reaches the app).
HTTP_LAYER_REFUSAL = "Invalid HTTP request received."

# Rules JSON Schema cannot state (several fields, or the server's state): a schema-valid request may break
# them, and then a 400 naming the rule is the right answer, not a drift between the schema and the server.
CROSS_FIELD_RULES = (
    "invalid_at: is earlier than valid_at",
    "is beyond the end of the log",
    "is not a token returned by list_memories",
    "is required for a memory of type 'handoff'",  # memory_type handoff needs a handoff_target
    "but a memory with a handoff_target is a handoff",  # and a handoff_target means memory_type handoff
    "hand the work over to another agent",  # a handoff to oneself
    "name a team, or join one",  # consolidating without a team, by a caller in none
    "has no active memories to summarise",
    *CONSOLIDATION_RULES,
    *PACK_RULES,
    *TIME_RULES,
    *VALUE_RULES,
)


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: schemathesis.SerializationContext, value: object) -> bytes:
    """The import body is raw bytes (one JSON object per line); send what was generated as it is."""
    if isinstance(value, bytes):
        return value
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else json.dumps(value).encode()


def _valid_data_accepted(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """Schemathesis' positive_data_acceptance, except for the documented cross-field rules."""
    if response.status_code == 400 and any(rule in response.text for rule in CROSS_FIELD_RULES):
        return True
    if response.status_code == 421 and _foreign_host(case):
        return True
    return checks.positive_data_acceptance(ctx, response, case)


def _invalid_data_rejected(ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """Schemathesis' negative_data_rejection, except for query values that break the schema only by their JSON type
    (false, 3, null): a query string carries text, so ``?tags=false`` is the tag "false", a valid value."""
    if response.status_code < 400 and _typed_query_only(case):
        return True
    if response.status_code == 421 and _foreign_host(case):
        return True  # refused at the edge for its Host header, before the rest of it was read
    return checks.negative_data_rejection(ctx, response, case)


def _documented_content_type(
    ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """Schemathesis' content_type_conformance, except for a request whose generated headers break HTTP's own
    framing (negative mode adds a random ``Transfer-Encoding``): the HTTP server refuses it before any route
    reads it, with its own plain-text 400, and no route of the document ever sees it."""
    if response.status_code == 400 and _broken_framing(case) and response.text == HTTP_LAYER_REFUSAL:
        return True
    return checks.content_type_conformance(ctx, response, case)


def _broken_framing(case: schemathesis.Case) -> bool:
    return any(name.lower() in {"transfer-encoding", "content-length"} for name in (case.headers or {}))


def _foreign_host(case: schemathesis.Case) -> bool:
    """The generated headers name a Host the node does not serve (negative mode adds random headers)."""
    return any(name.lower() == "host" for name in (case.headers or {}))


def _typed_query_only(case: schemathesis.Case) -> bool:
    values = [v for value in (case.query or {}).values() for v in (value if isinstance(value, list) else [value])]
    typed = [v for v in values if isinstance(v, bool | int | float)]
    no_body = case.body is NOT_SET or case.body is None
    return bool(typed) and no_body and all(v is None or isinstance(v, str | bool | int | float) for v in values)


def test_rest_api_conforms_to_its_schema(secured_node: NodeHandle) -> None:
    # The secured node (keys required) is the shape the OpenAPI document describes; the dev-mode node lets
    # anonymous loopback callers in, which Schemathesis would rightly report as ignored authentication.
    key = secured_node.create_key("fuzz", "fuzzer")
    config = SchemathesisConfig.from_dict({"auth": {"openapi": {"EngramApiKey": {"bearer": key}}}})
    # The live event stream never ends, so a valid request would never answer; tests/integration/test_sse.py covers it.
    schema = schemathesis.openapi.from_url(f"{secured_node.http_url}/openapi.json", config=config).exclude(
        path=STREAM_PATH
    )
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in GenerationMode:

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
                derandomize=DERANDOMIZE,
            )
            def run(case: schemathesis.Case) -> None:
                response = case.call_and_validate(
                    excluded_checks=[
                        checks.positive_data_acceptance,
                        checks.negative_data_rejection,
                        checks.content_type_conformance,
                    ],
                    additional_checks=[_valid_data_accepted, _invalid_data_rejected, _documented_content_type],
                )
                statuses[response.status_code] += 1

            try:
                run()
            except Unsatisfiable:
                continue  # nothing to break in a route without parameters (negative mode)
            except Exception as e:
                failures.append(f"{operation.label} ({mode.value}): {e}")
    print(f"REST fuzz: {sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}")
    assert not failures, "\n\n".join(failures)
    assert not [s for s in statuses if s >= 500]
