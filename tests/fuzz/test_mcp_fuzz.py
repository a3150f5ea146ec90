"""Property-based fuzzing of the MCP tools from their own input schemas, over streamable HTTP to a real node.

Valid arguments (generated from each tool's inputSchema) must succeed with structured content matching the
tool's outputSchema, or fail with a readable tool error; arguments that break the schema (wrong types, unknown
names, missing required ones) must fail with a readable tool error. Never a protocol error, a traceback, raw
Pydantic text, or a dead session. ENGRAM_FUZZ_EXAMPLES sets the examples per tool and mode."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from mcp import Client
from schemathesis import GenerationMode

from tests.conftest import NodeHandle
from tests.fuzz.rules import CONSOLIDATION_RULES, PACK_RULES, TIME_RULES, VALUE_RULES
from tests.helpers.mcp import http_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "20"))
# make test runs the same examples every time (CI stays reproducible); make fuzz explores new ones each run.
DERANDOMIZE = os.environ.get("ENGRAM_FUZZ_RANDOM", "") != "1"
# What an agent must never see in a tool error: internals instead of "field: what to fix".
LEAKS = ("Traceback", "errors.pydantic.dev", "validation error for", "Internal Server Error", "Exception")
# Tool errors that a schema-valid call may still get, for rules JSON Schema cannot state.
STATE_RULES = (
    "is beyond the end of the log",
    "is not a token returned by list_memories",
    "is earlier than",
    "No memory with id",
    "name a team, or join one",  # consolidate_team by a caller in no team
    "has no active memories to summarise",
    "is required for a memory of type 'handoff'",
    "but a memory with a handoff_target is a handoff",
    "hand the work over to another agent",
    "Only an admin may merge memories of other agents",  # force by a caller without the admin scope
    *CONSOLIDATION_RULES,
    *PACK_RULES,
    *TIME_RULES,
    *VALUE_RULES,
)


def _openapi(tools: list[Any]) -> dict[str, Any]:
    """An OpenAPI document with one operation per tool whose request body is the tool's input schema, so that
    Schemathesis (which generates valid and schema-breaking data from OpenAPI) generates tool arguments."""
    components: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for tool in tools:
        schema = json.loads(json.dumps(tool.input_schema).replace('"#/$defs/', '"#/components/schemas/'))
        components.update(schema.pop("$defs", {}))
        paths[f"/{tool.name}"] = {
            "post": {
                "operationId": tool.name,
                "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
                "responses": {"200": {"description": "ok"}},
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "MCP tools", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }


class ClientThread:
    """An MCP client held open by one task on an event loop thread, so synchronous Hypothesis tests can call it
    (anyio wants a client entered and exited by the same task)."""

    def __init__(self, url: str, key: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._stop = asyncio.Event()
        self._opened: concurrent.futures.Future[Client] = concurrent.futures.Future()
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(url, key), self.loop)
        self.client = self._opened.result(60)

    async def _hold(self, url: str, key: str) -> None:
        try:
            async with http_client(url, key=key) as client:
                self._opened.set_result(client)
                await self._stop.wait()
        except BaseException as e:
            if not self._opened.done():
                self._opened.set_exception(e)
            raise

    def run(self, coroutine: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._holder.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def mcp(secured_node: NodeHandle) -> Iterator[ClientThread]:
    holder = ClientThread(secured_node.mcp_url, secured_node.create_key("mcpfuzz", "fuzzer"))
    yield holder
    holder.close()


def _text(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


def _messages(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "\n  ".join(_messages(e) for e in error.exceptions)
    return str(error).splitlines()[0][:600]


def _fuzz(strategy: st.SearchStrategy[dict[str, Any]], check: Callable[[dict[str, Any]], None]) -> None:
    @given(arguments=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=DERANDOMIZE,
    )
    def run(arguments: dict[str, Any]) -> None:
        check(arguments)

    run()


def test_mcp_tools_answer_every_generated_call_cleanly(mcp: ClientThread) -> None:
    runner, client = mcp, mcp.client
    tools = runner.run(client.list_tools()).tools
    schema = schemathesis.openapi.from_dict(_openapi(tools))
    operations = {result.ok().label.split("/", 1)[1]: result.ok() for result in schema.get_all_operations()}
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    for tool in tools:

        def check(arguments: dict[str, Any], valid: bool, tool: Any = tool) -> None:
            result = runner.run(client.call_tool(tool.name, arguments))
            text = _text(result)
            assert not any(leak in text for leak in LEAKS), f"{tool.name}({arguments}) leaked internals: {text}"
            if not valid:
                assert result.is_error, f"{tool.name} accepted arguments that break its schema: {arguments}"
                assert ":" in text, f"{tool.name}({arguments}) error does not name the field: {text}"
                outcomes["refused"] += 1
            elif result.is_error:
                assert any(rule in text for rule in STATE_RULES), f"{tool.name}({arguments}) refused: {text}"
                outcomes["refused by a state rule"] += 1
            else:
                if tool.output_schema:
                    jsonschema.validate(result.structured_content, tool.output_schema)
                outcomes["succeeded"] += 1

        operation = operations[tool.name]
        for mode in GenerationMode:
            valid = mode is GenerationMode.POSITIVE
            # Only objects: the MCP client itself refuses any other arguments before they are sent.
            strategy = operation.as_strategy(generation_mode=mode).map(lambda case: case.body)
            strategy = strategy.filter(lambda body: isinstance(body, dict))
            try:
                _fuzz(strategy, lambda arguments, valid=valid: check(arguments, valid))
            except Unsatisfiable:
                continue  # nothing to break in a tool without parameters
            except Exception as e:  # every tool is tried; failures are listed together
                failures.append(f"{tool.name} ({mode.value}): {_messages(e)}")
    assert not runner.run(client.call_tool("ping", {})).is_error  # the session survived all of it
    print(f"MCP fuzz: {sum(outcomes.values())} calls over {len(tools)} tools: {dict(outcomes)}")
    assert not failures, "\n\n".join(failures)
