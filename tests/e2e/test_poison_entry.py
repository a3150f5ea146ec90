"""A log entry the index cannot apply, on a real node with keys (real NATS, Qdrant Edge, the gateway, the CLI): a
memory with metadata {"x": NaN} written straight into the log, as versions before the edges refused it did. Every
namespace goes on saving and searching, the node answers ready (degraded) and says so in /readyz, /v1/status,
`engram status`, the metrics and the log; an admin lists, retries and purges the entry (REST and CLI), a restart
keeps it set aside, and an admin purge of its memory answers at once."""

from __future__ import annotations

import asyncio
import copy
import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram import cli
from engram.ids import uuid7
from engram.log.nats import NatsLog
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _key(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _save(client: httpx.Client, key: str, content: str) -> dict[str, Any]:
    saved = client.post("/v1/memories", json={"content": content}, headers=_key(key))
    assert saved.status_code == 201, saved.text
    body: dict[str, Any] = saved.json()
    return body


def _found(client: httpx.Client, key: str, query: str, min_seq: int) -> list[str]:
    answer = client.post("/v1/memories:search", json={"query": query, "min_seq": min_seq}, headers=_key(key))
    assert answer.status_code == 200, answer.text
    return [hit["memory"]["content"] for hit in answer.json()["hits"]]


async def _poison(nats_url: str, seq: int) -> tuple[str, int]:
    """A copy of the save at seq, as a new memory whose metadata holds NaN, appended straight to the log."""
    log = await NatsLog.connect(nats_url)
    try:
        entry = await log.read(seq)
        assert entry is not None
        body = copy.deepcopy(entry.body)
        memory_id = uuid7()
        body["memory_id"] = body["memory"]["id"] = memory_id
        body["memory"]["metadata"] = {"x": math.nan}
        namespace = body["namespace"]
        appended = await log.append(namespace, entry.event, body, msg_id=f"{memory_id}:1")
        return memory_id, appended.seq
    finally:
        await log.close()


def _quarantine(client: httpx.Client, key: str) -> dict[str, Any]:
    listed = client.get("/v1/index/quarantine", headers=_key(key))
    assert listed.status_code == 200, listed.text
    body: dict[str, Any] = listed.json()
    return body


def _engram(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, key: str, *argv: str) -> str:
    monkeypatch.setenv("ENGRAM_API_KEY", key)
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_a_poison_entry_in_the_log_is_set_aside_reported_and_managed_while_every_namespace_is_served(
    tmp_path: Path, model_cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    node: NodeHandle = start_node(home, model_cache, ENGRAM_DEV_MODE="false")
    writer_b, admin_b = node.create_key("b", "writer"), node.create_key("b", "admin", ("read", "write", "admin"))
    writer_c, admin_c = node.create_key("c", "writer"), node.create_key("c", "admin", ("read", "write", "admin"))
    client = httpx.Client(base_url=node.http_url, timeout=60)
    try:
        model = _save(client, writer_b, "the model entry of the poison")
        first_id, first_seq = asyncio.run(_poison(node.nats_url, model["seq"]))
        second_id, second_seq = asyncio.run(_poison(node.nats_url, model["seq"]))

        # Every namespace is served: saves, searches that wait for them, lists.
        after_b = _save(client, writer_b, "saved in b after the poison about kiwis")
        after_c = _save(client, writer_c, "saved in c after the poison about lemons")
        assert "saved in b after the poison about kiwis" in _found(client, writer_b, "kiwis", after_b["seq"])
        assert "saved in c after the poison about lemons" in _found(client, writer_c, "lemons", after_c["seq"])
        assert client.get("/v1/memories", headers=_key(writer_c)).status_code == 200

        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "degraded", ready.text
        [problem] = [p for p in ready.json()["problems"] if p["condition"] == "index_quarantine"]
        assert problem["degraded"] and f"log sequence {second_seq}" in problem["detail"]
        assert first_id not in problem["detail"] and "b" not in problem["detail"].split()  # no tenant data

        status = client.get("/v1/status", headers=_key(admin_b)).json()
        assert status["ready"] and status["index"]["quarantined"] == 2
        assert status["index"]["quarantine_newest"]["seq"] == second_seq
        assert (
            "NaN" in status["index"]["quarantine_newest"]["error"]
            or "Float" in status["index"]["quarantine_newest"]["error"]
        )
        other = client.get("/v1/status", headers=_key(writer_c)).json()
        assert other["index"]["quarantined"] == 2 and other["index"]["quarantine_newest"] is None
        out = _engram(capsys, monkeypatch, admin_b, "status", "--url", node.http_url)
        assert "quarantine 2 log entries set aside" in out and f"seq {second_seq}" in out
        assert ": ready, degraded (pid" in out
        metrics = client.get("/metrics", headers=_key(admin_b)).text
        assert "engram_index_quarantined_entries 2.0" in metrics

        # An admin sees its own namespace's entries; others see none of them; a writer is refused.
        listed = _quarantine(client, admin_b)
        assert [(e["seq"], e["namespace"], e["memory_id"], e["event"]) for e in listed["entries"]] == [
            (first_seq, "b", first_id, "memory_saved"), (second_seq, "b", second_id, "memory_saved"),
        ]  # fmt: skip
        assert _quarantine(client, admin_c) == {"entries": [], "total": 2}
        assert client.get("/v1/index/quarantine", headers=_key(writer_b)).status_code == 403
        refused = client.post("/v1/index/quarantine/purge", json={"seqs": [first_seq]}, headers=_key(admin_c))
        assert refused.status_code == 400 and "not in the quarantine" in refused.text  # another namespace's
        out = _engram(capsys, monkeypatch, admin_b, "index", "quarantine", "list", "--url", node.http_url)
        assert f"{first_seq}  b memory {first_id}  memory_saved" in out

        retried = client.post("/v1/index/quarantine/retry", json={"seqs": []}, headers=_key(admin_b)).json()
        assert retried["applied"] == [] and [e["seq"] for e in retried["failed"]] == [first_seq, second_seq]
    finally:
        client.close()
        assert node.stop() == 0
    assert "cannot be applied to the index and is set aside" in (home / "serve.log").read_text()

    # A restart keeps them set aside, and the index serves at once.
    node = start_node(home, model_cache, ENGRAM_DEV_MODE="false")
    client = httpx.Client(base_url=node.http_url, timeout=60)
    try:
        assert client.get("/readyz").json()["status"] == "degraded"
        assert [e["seq"] for e in _quarantine(client, admin_b)["entries"]] == [first_seq, second_seq]

        # The reported 503: an admin purge of the memory whose entry is set aside. It erases the entry too.
        purged = client.delete(f"/v1/memories/{first_id}", params={"purge": "true"}, headers=_key(admin_b))
        assert purged.status_code == 200, purged.text
        assert [e["seq"] for e in _quarantine(client, admin_b)["entries"]] == [second_seq]

        out = _engram(capsys, monkeypatch, admin_b, "index", "quarantine", "purge", str(second_seq), "--erase",
                      "--url", node.http_url)  # fmt: skip
        assert "1 log entry dropped" in out and second_id in out
        assert _quarantine(client, admin_b) == {"entries": [], "total": 0}
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and not ready["problems"]
        assert client.get(f"/v1/memories/{second_id}", headers=_key(admin_b)).status_code == 404
        assert "kiwis" in _found(client, writer_b, "kiwis", 0)[0]
    finally:
        client.close()
        assert node.stop() == 0
