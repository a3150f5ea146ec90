"""The gateway's edge against bad input, on a real node: oversized and streamed bodies, wrong media types, deep
JSON, long or repeated import lines, imports that stop part-way, unknown MCP arguments, handoff targets, Host case.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.embed import OnnxEmbedder
from engram.embed.sparse import Bm25Encoder
from engram.errors import DiskFull
from engram.log.nats import NatsLog
from engram.model import Caller, MemoryInput
from engram.process.health import Health
from engram.process.natsd import NatsServer
from engram.process.runtime import DiskGuard
from engram.results import ImportItem
from engram.services.ingest.writer import MemoryWriter
from engram.validation import Limits
from tests.conftest import NodeHandle, engram_env
from tests.helpers.mcp import http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MiB = 1024 * 1024
HUGE = 200 * MiB
CHUNK = 64 * 1024
PROBLEM = "application/problem+json"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    return body


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class Stream:
    """A request body of `total` bytes, produced as it is sent, remembering how much the server took."""

    def __init__(self, total: int, *, head: bytes = b"", fill: bytes = b"x") -> None:
        self.total = total
        self.head = head
        self.fill = fill * (CHUNK // len(fill))
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        if self.head:
            self.sent += len(self.head)
            yield self.head
        while self.sent < self.total:
            chunk = self.fill[: self.total - self.sent]
            self.sent += len(chunk)
            yield chunk


# --- body limits --------------------------------------------------------------------------------------------

ROUTES = [
    ("/v1/memories", "1 MiB", "ENGRAM_MAX_REQUEST_BYTES"),
    ("/v1/memories:search", "1 MiB", "ENGRAM_MAX_REQUEST_BYTES"),
    ("/v1/memories:import", "32 MiB", "ENGRAM_MAX_IMPORT_BYTES"),
    ("/mcp", "1 MiB", "ENGRAM_MAX_REQUEST_BYTES"),
]


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
@pytest.mark.parametrize(("path", "limit", "setting"), ROUTES)
def test_a_200_mb_body_is_refused_early_with_413_naming_the_limit(
    node: NodeHandle, path: str, limit: str, setting: str, declared: bool
) -> None:
    body = Stream(HUGE, head=b'{"content": "', fill=b"a")
    headers = {"Content-Type": "application/json", "Accept": MCP_HEADERS["Accept"]}
    if declared:
        headers["Content-Length"] = str(HUGE)
    before = peak_rss(node.worker_pid)
    started = time.monotonic()
    response = httpx.post(f"{node.http_url}{path}", content=iter(body), headers=headers, timeout=60)
    elapsed = time.monotonic() - started

    assert response.status_code == 413, response.text[:300]
    if path == "/mcp":  # a JSON-RPC error, which the MCP client shows as text
        assert response.headers["content-type"].startswith("application/json")
        message = response.json()["error"]["message"]
    else:
        message = problem(response, 413)["detail"]
    assert limit in message and setting in message, message
    if declared:
        assert "200 MiB" in message
    # Refused early: far less than the body was read, quickly, and the server never held it.
    assert body.sent < HUGE / 2, f"{body.sent} bytes were sent before the refusal"
    assert elapsed < 20
    assert peak_rss(node.worker_pid) - before < 100 * MiB


async def test_mcp_client_gets_a_readable_error_for_a_too_large_tool_call(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        with pytest.raises(Exception) as refused:
            await client.call_tool("save_memory", {"content": "x" * (2 * MiB)})
        text = str(refused.value)
        assert "1 MiB" in text and "ENGRAM_MAX_REQUEST_BYTES" in text, text
        # The session still works afterwards.
        result = await client.call_tool("ping", {})
        assert not result.is_error


def test_a_body_under_the_limit_is_still_accepted(node: NodeHandle) -> None:
    content = "y" * (30 * 1024)
    response = httpx.post(f"{node.http_url}/v1/memories", json={"content": content}, timeout=60)
    assert response.status_code == 201, response.text


# --- media type and deep JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/memories:search"])
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_wrong_content_type_is_415_saying_what_to_send(node: NodeHandle, path: str, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = httpx.post(
        f"{node.http_url}{path}", content=b'{"content": "x", "query": "x"}', headers=headers, timeout=30
    )
    assert "send Content-Type: application/json" in problem(response, 415)["detail"]


def test_json_with_a_charset_parameter_is_accepted(node: NodeHandle) -> None:
    response = httpx.post(
        f"{node.http_url}/v1/memories:search",
        content=b'{"query": "anything"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
        timeout=30,
    )
    assert response.status_code == 200, response.text


DEEP_BODIES = {
    "100k [": b"[" * 100_000,
    "100k [ closed": b"[" * 100_000 + b"]" * 100_000,
    "metadata 100k {": b'{"content": "x", "metadata": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001,
    "50 levels": b'{"content": "x", "metadata": ' + b'{"a": ' * 50 + b"1" + b"}" * 51,
}


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/memories:search"])
@pytest.mark.parametrize("name", list(DEEP_BODIES))
def test_deeply_nested_json_is_a_400_never_a_5xx(node: NodeHandle, path: str, name: str) -> None:
    response = httpx.post(
        f"{node.http_url}{path}", content=DEEP_BODIES[name], headers={"Content-Type": "application/json"}, timeout=30
    )
    assert "levels deep" in problem(response, 400)["detail"]


@pytest.mark.parametrize("name", list(DEEP_BODIES))
def test_deeply_nested_json_to_mcp_is_a_client_error(node: NodeHandle, name: str) -> None:
    response = httpx.post(f"{node.http_url}/mcp", content=DEEP_BODIES[name], headers=MCP_HEADERS, timeout=30)
    assert 400 <= response.status_code < 500, response.text[:300]


# --- import -------------------------------------------------------------------------------------------------


def _ndjson(rows: list[object]) -> str:
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows)


def test_a_3_mb_line_is_rejected_like_any_invalid_line_and_the_rest_imported(node: NodeHandle) -> None:
    tag = unique("long")
    good = [{"content": f"memory {n} about the billing service", "tags": [tag]} for n in range(1, 301)]
    long_line = json.dumps({"content": "z" * (3 * MiB), "tags": [tag]})
    body = _ndjson([*good, long_line, "[" * 100_000, {"content": "after the long line", "tags": [tag]}])
    response = httpx.post(f"{node.http_url}/v1/memories:import", content=body, timeout=120)
    assert response.status_code == 200, response.text[:500]
    result = response.json()
    assert result["imported"] == 301 and result["last_line"] == 303 and result["resume_from"] == 304
    assert [r["line"] for r in result["rejected"]] == [301, 302]
    too_long = result["rejected"][0]["reason"]
    assert "3.0 MiB" in too_long and "1 MiB" in too_long and "ENGRAM_MAX_IMPORT_LINE_BYTES" in too_long
    assert result["stopped"] is None


def test_an_import_stopped_by_its_body_limit_says_what_was_stored_and_where_to_resume(node: NodeHandle) -> None:
    tag = unique("stop")
    head = _ndjson([{"content": f"kept {n}", "tags": [tag], "source_id": f"{tag}:{n}"} for n in range(1, 6)])
    body = Stream(40 * MiB, head=head.encode() + b"\n")
    response = httpx.post(f"{node.http_url}/v1/memories:import", content=iter(body), timeout=120)
    result = problem(response, 413)
    assert result["imported"] == 5 and result["last_line"] == 5 and result["resume_from"] == 6
    assert "ENGRAM_MAX_IMPORT_BYTES" in result["stopped"] and "Resume from line 6" in result["detail"]
    assert body.sent == 40 * MiB  # the rest was read and dropped (up to the limit again): the client got the answer
    listed = httpx.get(f"{node.http_url}/v1/memories", params={"tags": tag, "min_seq": result["last_seq"]}).json()
    assert len(listed["memories"]) == 5


def test_a_chunked_import_over_its_limit_gets_its_whole_413_answer_not_a_reset(node: NodeHandle) -> None:
    # Issue 33: 40 MiB of lines sent chunked (no Content-Length) got "peer closed connection" after 128 KB of a
    # 3 MB answer: the node closed the connection with the body's rest unread, and the reset cut the answer short.
    line = json.dumps({"content": "r" * 900, "memory_type": "not-a-type"}).encode() + b"\n"
    body = Stream(40 * MiB, fill=line)
    response = httpx.post(
        f"{node.http_url}/v1/memories:import", content=iter(body), headers={"Content-Type": "application/x-ndjson"},
        timeout=120,
    )  # fmt: skip
    result = problem(response, 413)
    assert len(response.content) > MiB  # a rejection per line read: far more than the socket buffers hold
    assert result["code"] == "payload_too_large" and "ENGRAM_MAX_IMPORT_BYTES" in result["detail"]
    assert result["imported"] == 0 and len(result["rejected"]) == result["last_line"] > 30_000
    assert "memory_type" in result["rejected"][0]["reason"] and result["resume_from"] == result["last_line"] + 1
    assert response.headers["connection"] == "close"


async def test_an_import_stops_when_the_disk_fills_and_says_where_to_resume(
    nats_server: NatsServer, model_cache: Path, tmp_path: Path
) -> None:
    """The writer over a real log and embedder: the disk guard starts refusing after line 50 is read."""
    guard = DiskGuard(tmp_path, 0, Health())
    log = await NatsLog.connect(nats_server.url)
    writer = MemoryWriter(
        log, OnnxEmbedder.from_package(model_cache), Bm25Encoder(), Limits(32 * 1024, 16 * 1024), disk=guard
    )

    async def items() -> AsyncIterator[ImportItem]:
        for line in range(1, 81):
            if line == 51:
                guard.reserve_bytes = 1 << 62  # a reserve no disk has: every later write is refused
            content = "" if line == 5 else f"memory {line}"
            yield ImportItem(line, MemoryInput(content=content))
            await asyncio.sleep(0)

    try:
        summary = await writer.import_stream(Caller("ns", "importer"), items(), batch=10)
    finally:
        await log.close()
    assert isinstance(summary.stopped, DiskFull)
    last = summary.last_line  # the line before the first refused one: resume after it
    assert 20 <= last < 51
    assert [line for line, _, _ in summary.imported] == [n for n in range(1, last + 1) if n != 5]
    assert [line for line, _ in summary.rejected] == [5]
    log = await NatsLog.connect(nats_server.url)
    try:
        assert await log.last_seq() == len(summary.imported), "nothing past the stop was stored"
    finally:
        await log.close()


def test_reimported_lines_are_already_present_not_imported(node: NodeHandle) -> None:
    tag = unique("again")
    lines = _ndjson([{"content": f"once {n}", "tags": [tag], "source_id": f"{tag}:{n}"} for n in range(3)])
    first = httpx.post(f"{node.http_url}/v1/memories:import", content=lines, timeout=60).json()
    again = httpx.post(f"{node.http_url}/v1/memories:import", content=lines, timeout=60).json()
    assert (first["imported"], first["already_present"]) == (3, 0)
    assert (again["imported"], again["already_present"]) == (0, 3)
    assert all(item["already_present"] for item in again["items"])
    assert [i["id"] for i in again["items"]] == [i["id"] for i in first["items"]]


def test_cli_reimport_says_already_present(node: NodeHandle, tmp_path: Path) -> None:
    tag = unique("cli")
    source = tmp_path / "memories.jsonl"
    source.write_text(_ndjson([{"content": f"cli {n}", "tags": [tag], "source_id": f"{tag}:{n}"} for n in range(4)]))
    command = [sys.executable, "-m", "engram.services.node", "import", str(source), "--url", node.http_url]
    env = engram_env(node.model_cache)
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "imported 4 new memories" in first.stderr, first.stderr
    assert again.returncode == 0, again.stderr
    assert "imported 0 new memories" in again.stderr and "4 already present" in again.stderr, again.stderr


def test_cli_import_of_a_folder_says_it_is_a_folder(node: NodeHandle, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "import", str(tmp_path), "--url", node.http_url],
        env=engram_env(node.model_cache), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "is a folder" in result.stderr and ".jsonl" in result.stderr, result.stderr


# --- MCP arguments ------------------------------------------------------------------------------------------

UNKNOWN_ARGUMENTS = [
    ("save_memory", {"content": "x", "colour": "blue"}, "colour"),
    ("save_memory", {"content": "x", "tag": ["singular"]}, "tag"),
    ("search_memory", {"query": "x", "filters": {"tags": ["a"]}}, "filters"),
    ("list_memories", {"limitt": 5}, "limitt"),
    ("get_memory", {"id": "x", "history": True}, "history"),
    ("ping", {"verbose": True}, "verbose"),
]


@pytest.mark.parametrize(("tool", "arguments", "name"), UNKNOWN_ARGUMENTS)
async def test_unknown_mcp_arguments_are_refused_naming_them(
    node: NodeHandle, tool: str, arguments: dict[str, Any], name: str
) -> None:
    async with http_client(node.mcp_url) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = str(result.content[0].text)
    assert f"{name}: is not an argument of {tool}" in text, text


async def test_mcp_input_schemas_say_no_other_arguments(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        tools = (await client.list_tools()).tools
    assert {tool.input_schema.get("additionalProperties") for tool in tools} == {False}


INVALID_SAVES = [
    ({"content": "x", "importance": "urgent"}, "importance"),
    ({"content": "x", "tags": "not-a-list"}, "tags"),
    ({"content": "x", "metadata": [1, 2]}, "metadata"),
    ({"content": ""}, "content"),
    ({"content": 5}, "content"),
    ({"content": "x", "confidence": "certain"}, "confidence"),
]


@pytest.mark.parametrize(("arguments", "field"), INVALID_SAVES)
async def test_mcp_validation_errors_read_like_rest_without_pydantic_text(
    node: NodeHandle, arguments: dict[str, Any], field: str
) -> None:
    async with http_client(node.mcp_url) as client:
        result = await client.call_tool("save_memory", arguments)
    assert result.is_error
    text = str(result.content[0].text)
    assert "pydantic" not in text and "validation error for" not in text and "input_value" not in text, text
    rest = problem(httpx.post(f"{node.http_url}/v1/memories", json=arguments, timeout=30), 400)["detail"]
    # The same "field: what to fix" as REST, whose fields sit under "body.".
    assert text.endswith(rest.replace("body.", "")), (text, rest)
    assert text.split(": ", 1)[1].startswith(f"{field}"), text


# --- handoff_target and Host ----------------------------------------------------------------------------------

BAD_TARGETS = ["not an agent!", "-flag-like", "a" * 129, "tab\there", "new\nline", "ünïcode"]


@pytest.mark.parametrize("target", BAD_TARGETS)
async def test_handoff_target_must_be_an_agent_id_everywhere(node: NodeHandle, target: str) -> None:
    rest = problem(
        httpx.post(f"{node.http_url}/v1/memories", json={"content": "x", "handoff_target": target}, timeout=30), 400
    )
    assert rest["detail"].startswith("handoff_target:") and "agent id" in rest["detail"]
    async with http_client(node.mcp_url) as client:
        result = await client.call_tool("save_memory", {"content": "x", "handoff_target": target})
    assert result.is_error and "handoff_target:" in str(result.content[0].text)
    line = json.dumps({"content": "x", "handoff_target": target})
    imported = httpx.post(f"{node.http_url}/v1/memories:import", content=line, timeout=30).json()
    assert imported["imported"] == 0 and "handoff_target" in imported["rejected"][0]["reason"]


def test_a_valid_handoff_target_is_accepted(node: NodeHandle) -> None:
    saved = httpx.post(
        f"{node.http_url}/v1/memories", json={"content": "over to you", "handoff_target": "codex@laptop"}, timeout=30
    )
    assert saved.status_code == 201 and saved.json()["memory"]["handoff"]["target_agent"] == "codex@laptop"


@pytest.mark.parametrize("host", ["LOCALHOST", "LocalHost", "127.0.0.1"])
async def test_host_check_ignores_case(node: NodeHandle, host: str) -> None:
    port = node.http_url.rsplit(":", 1)[1]
    response = httpx.get(f"{node.http_url}/v1/memories", headers={"Host": f"{host}:{port}"}, timeout=30)
    assert response.status_code == 200, response.text
    async with http_client(f"http://{host}:{port}/mcp") as client:
        assert not (await client.call_tool("ping", {})).is_error


def test_a_foreign_host_is_still_refused(node: NodeHandle) -> None:
    response = httpx.get(f"{node.http_url}/v1/memories", headers={"Host": "EVIL.example"}, timeout=30)
    assert problem(response, 421)["code"] == "invalid_host"
