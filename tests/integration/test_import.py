"""Bulk import through REST, gRPC client streaming and `engram import`: order, rejections, idempotency, resume."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from engram.cli.vault import import_file
from engram.formats.importer import state_path
from engram.v1 import common_pb2, ingest_pb2, ingest_pb2_grpc
from tests.conftest import NodeHandle, engram_env
from tests.helpers.mcp import call, http_client
from tests.helpers.rest import bearer, unique

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _ndjson(rows: list[object]) -> str:
    return "\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows)


def test_rest_import_stores_valid_lines_in_order_and_says_why_others_were_rejected(node: NodeHandle) -> None:
    tag = f"imp-{uuid.uuid4().hex[:8]}"
    body = _ndjson([
        {"content": "first imported memory", "tags": [tag], "metadata": {"n": 1}},
        "{not json",
        {"content": ""},
        {"content": "second imported memory", "tags": [tag], "memory_type": "fact"},
        {"content": "bad type", "memory_type": "fakt"},
        {"content": "token sk-ABCDEFGHIJKLMNOPQRSTUVWX1234 leaked", "tags": [tag]},
    ])  # fmt: skip
    response = httpx.post(
        f"{node.http_url}/v1/memories:import", params={"first_line": 10}, content=body,
        headers={"Content-Type": "application/x-ndjson"}, timeout=60,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["imported"] == 3
    assert [r["line"] for r in result["rejected"]] == [11, 12, 14]
    assert "memory_type" in result["rejected"][2]["reason"]
    assert result["rejected"][0]["reason"].startswith("The line is not JSON at column 2: a field name without double")
    assert [i["line"] for i in result["items"]] == [10, 13, 15]
    assert result["last_line"] == 15 and result["last_seq"] > 0
    assert {r["kind"] for r in result["redactions"]} == {"api_key"}

    listed = httpx.get(f"{node.http_url}/v1/memories", params={"tags": tag, "min_seq": result["last_seq"]}).json()
    contents = [m["content"] for m in listed["memories"]]
    assert "first imported memory" in contents and "second imported memory" in contents
    assert any("[REDACTED:api_key]" in c for c in contents)
    ids = [i["id"] for i in result["items"]]
    seqs = [m["seq"] for m in sorted(listed["memories"], key=lambda m: ids.index(m["id"]))]
    assert seqs == sorted(seqs), "imported in line order"


def test_same_source_id_is_stored_once(node: NodeHandle) -> None:
    tag = f"dedup-{uuid.uuid4().hex[:8]}"
    line = {"content": "idempotent import", "tags": [tag], "source_id": f"file.jsonl:{tag}"}
    first = httpx.post(f"{node.http_url}/v1/memories:import", content=_ndjson([line]), timeout=60).json()
    again = httpx.post(f"{node.http_url}/v1/memories:import", content=_ndjson([line]), timeout=60).json()
    assert first["items"][0]["id"] == again["items"][0]["id"]
    listed = httpx.get(f"{node.http_url}/v1/memories", params={"tags": tag, "min_seq": again["last_seq"]}).json()
    assert len(listed["memories"]) == 1


def test_a_source_id_is_the_importing_agents_own_and_another_agent_cannot_squat_it(node: NodeHandle) -> None:
    """Issue 33 point 6: an agent that imports first under another agent's source_id neither answers for the
    other's import (already_present with the squatter's memory) nor blocks it; each agent's retry finds its own."""
    tag = f"squat-{uuid.uuid4().hex[:8]}"
    source_id = f"hook:{tag}"

    def imported(agent: str, content: str) -> dict[str, object]:
        line = {"content": content, "tags": [tag], "source_id": source_id}
        answer = httpx.post(f"{node.http_url}/v1/memories:import", content=_ndjson([line]),
                            headers={"X-Engram-Agent-ID": agent}, timeout=60)  # fmt: skip
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    squat = imported("mallory", "junk planted under the capture's source id")
    real = imported("claude-code", "Fixed: `pytest tests/test_login.py` failed with AssertionError")
    assert (squat["imported"], real["imported"], real["already_present"]) == (1, 1, 0)
    real_id = real["items"][0]["id"]  # type: ignore[index]
    assert real_id != squat["items"][0]["id"]  # type: ignore[index]
    again = imported("claude-code", "Fixed: `pytest tests/test_login.py` failed with AssertionError")
    assert (again["imported"], again["already_present"]) == (0, 1)
    assert again["items"][0]["id"] == real_id  # type: ignore[index]
    listed = httpx.get(f"{node.http_url}/v1/memories", params={"tags": tag, "min_seq": again["last_seq"]}).json()
    owners = {m["content"]: m["owner_agent"] for m in listed["memories"]}
    assert owners == {"junk planted under the capture's source id": "mallory",
                      "Fixed: `pytest tests/test_login.py` failed with AssertionError": "claude-code"}  # fmt: skip


async def test_grpc_client_streaming_import_answers_once_for_the_stream(node: NodeHandle) -> None:
    tag = f"grpc-{uuid.uuid4().hex[:8]}"
    caller = common_pb2.CallContext(namespace="default", agent_id="importer@test", source="test")

    async def requests():  # type: ignore[no-untyped-def]
        for line in range(1, 301):
            memory = common_pb2.MemoryInput(content=f"streamed memory {line} about widgets", tags=[tag])
            yield ingest_pb2.ImportMemoriesRequest(caller=caller, memory=memory, line=line)

    async with grpc.aio.insecure_channel(node.grpc_address) as channel:
        reply = await ingest_pb2_grpc.IngestStub(channel).ImportMemories(requests())
    assert reply.imported == 300 and not reply.rejected and reply.last_line == 300
    assert [item.line for item in reply.items] == list(range(1, 301))
    async with http_client(node.mcp_url) as client:
        found = await call(client, "search_memory", query="streamed memory 123 widgets", tags=[tag],
                           min_seq=reply.last_seq, limit=3)  # fmt: skip
    assert found["hits"][0]["content"] == "streamed memory 123 about widgets"
    assert found["hits"][0]["owner_agent"] == "importer@test"


def test_cli_import_resumes_after_the_last_acknowledged_line(node: NodeHandle, tmp_path: Path) -> None:
    tag = f"cli-{uuid.uuid4().hex[:8]}"
    source = tmp_path / "memories.jsonl"
    source.write_text(_ndjson([{"content": f"cli memory {i}", "tags": [tag]} for i in range(1, 8)]) + "\n")
    state_path(source).write_text(json.dumps({"last_line": 4, "last_seq": 0}))  # an earlier run got to line 4

    report = import_file(source, node.http_url, chunk_lines=2, progress=False)

    assert report.imported == 3 and report.last_line == 7
    assert not state_path(source).exists()
    listed = httpx.get(f"{node.http_url}/v1/memories", params={"tags": tag, "min_seq": report.last_seq}).json()
    assert sorted(m["content"] for m in listed["memories"]) == ["cli memory 5", "cli memory 6", "cli memory 7"]


def test_cli_import_prints_a_summary_and_exits_nonzero_on_rejections(node: NodeHandle, tmp_path: Path) -> None:
    source = tmp_path / "mixed.jsonl"
    source.write_text(_ndjson([{"content": "fine"}, {"content": ""}]) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "import", str(source), "--url", node.http_url],
        env=engram_env(node.model_cache), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 3
    assert "imported 1 new memory" in result.stderr and "line 2: content" in result.stderr


def test_an_admin_import_stores_the_dense_vector_a_line_brings_and_others_are_refused(
    secured_node: NodeHandle,
) -> None:
    """Issue 35 point 6: a line's pre-computed vector is stored instead of embedding its content (the log's body
    carries it as sent), for an admin key only; a line that brings a wrong one is rejected, naming the field."""
    namespace = unique("vec")
    admin = secured_node.create_key(namespace, "loader", scopes=("read", "write", "admin"))
    writer = secured_node.create_key(namespace, "agent")
    url = f"{secured_node.http_url}/v1/memories:import"

    def imported(key: str, rows: list[object]) -> dict[str, Any]:
        answer = httpx.post(url, content=_ndjson(rows), headers=bearer(key), timeout=60)
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result

    def pulled_vectors(last_seq: int) -> dict[str, dict[str, Any]]:
        answer = httpx.get(f"{secured_node.http_url}/v1/sync/pull", params={"device": "bench", "limit": 1000},
                           headers=bearer(admin), timeout=60)  # fmt: skip
        assert answer.status_code == 200, answer.text
        return {c["body"]["memory"]["content"]: c["body"]["vectors"] for c in answer.json()["changes"]}

    made = imported(admin, [{"content": "cats and dogs play in the garden"}])
    vectors = pulled_vectors(made["last_seq"])["cats and dogs play in the garden"]
    given = {"model": vectors["model"], "dense": vectors["dense"]}
    width = len(base64.b64decode(vectors["dense"]))
    nan = base64.b64encode(b"\x00\x00\xc0\x7f" * (width // 4)).decode()

    result = imported(admin, [{"content": "the quarterly tax report for finance", "vectors": given}])
    assert result["imported"] == 1, result
    stored = pulled_vectors(result["last_seq"])["the quarterly tax report for finance"]
    assert stored["dense"] == given["dense"] and stored["model"] == given["model"]
    assert stored["sparse"]["indices"], "the node still makes the BM25 vector from the text"

    refused = imported(writer, [{"content": "an agent's line with a vector", "vectors": given}])
    assert refused["imported"] == 0 and "admin key only" in refused["rejected"][0]["reason"]
    wrong = imported(admin, [
        {"content": "another model", "vectors": {**given, "model": "other-model"}},
        {"content": "too short", "vectors": {**given, "dense": base64.b64encode(b"\x00" * 8).decode()}},
        {"content": "not a number", "vectors": {**given, "dense": nan}},
        {"content": "not base64", "vectors": {**given, "dense": "@@@@"}},
        {"content": "no model", "vectors": {"dense": given["dense"]}},
    ])  # fmt: skip
    assert wrong["imported"] == 0
    reasons = [r["reason"] for r in wrong["rejected"]]
    assert "vectors.model" in reasons[0] and "vectors.dense" in reasons[1] and "finite" in reasons[2]
    assert "vectors.dense" in reasons[3] and "base64" in reasons[3] and "model" in reasons[4]


def test_a_line_with_a_vector_holds_the_imports_boundaries(secured_node: NodeHandle) -> None:
    """A line bringing its vector passes the import's own checks: the key's agent may not claim another agent, a
    secret in the text is scrubbed, and then the node embeds the scrubbed text itself instead of taking the vector
    made from the text with the secret. (Import lines take no memory id: the server chooses every id.)"""
    namespace = unique("vecb")
    admin = secured_node.create_key(namespace, "loader", scopes=("read", "write", "admin"))
    url = f"{secured_node.http_url}/v1/memories:import"
    first = httpx.post(url, content=_ndjson([{"content": "cats and dogs play in the garden"}]), headers=bearer(admin))
    pulled = httpx.get(f"{secured_node.http_url}/v1/sync/pull", params={"device": "t", "limit": 10},
                       headers=bearer(admin), timeout=60)  # fmt: skip
    assert first.status_code == 200 and pulled.status_code == 200, (first.text, pulled.text)
    vectors = pulled.json()["changes"][0]["body"]["vectors"]
    given = {"model": vectors["model"], "dense": vectors["dense"]}

    claim = httpx.post(url, content=_ndjson([{"content": "as bob", "vectors": given}]),
                       headers={**bearer(admin), "X-Engram-Agent-ID": "bob"}, timeout=60)  # fmt: skip
    assert claim.status_code == 403, claim.text

    token = "ghp_" + "Zq7" * 12
    line = {"content": f"the deploy token is {token}", "vectors": given}
    answer = httpx.post(url, content=_ndjson([line]), headers=bearer(admin), timeout=60)
    assert answer.status_code == 200 and answer.json()["imported"] == 1, answer.text
    assert token not in answer.text
    changes = httpx.get(f"{secured_node.http_url}/v1/sync/pull", params={"device": "t", "limit": 10},
                        headers=bearer(admin), timeout=60).json()["changes"]  # fmt: skip
    stored = changes[-1]["body"]
    assert token not in json.dumps(stored) and stored["memory"]["content"].startswith("the deploy token is ")
    assert stored["memory"]["owner_agent"] == "loader"
    assert stored["vectors"]["dense"] != given["dense"], "the vector of the unscrubbed text was kept"
