"""A purge leaves no byte of the memory on disk: after `DELETE /v1/memories/{id}?purge=true` on a real node, no file
under the data dir (the JetStream store, both search indexes with their WALs, logs) holds its text or a distinctive
token of it, while the node runs and after it stops; every other memory is still served."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_node

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MEMORIES = 2000  # "a few thousand": the purge rewrites the index shards, so its time grows with them


def _files_holding(home: Path, needles: list[str]) -> dict[str, int]:
    """Every file under home holding one of the needles, with how many times they occur in it."""
    found = {}
    for path in home.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits = sum(data.count(needle.encode()) for needle in needles)
            if hits:
                found[str(path.relative_to(home))] = hits
    return found


def test_a_purged_memory_leaves_no_byte_in_any_file_of_the_data_dir(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    node = start_node(home, model_cache, ENGRAM_DEV_MODE="false")
    admin = {"Authorization": f"Bearer {node.create_key('ops', 'root', scopes=('read', 'write', 'admin'))}"}
    token = f"zq{uuid.uuid4().hex[:16]}"
    content = f"The vault under the stairs opens with {token}"
    needles = [token, content]
    client = httpx.Client(base_url=node.http_url, timeout=120, headers=admin)
    try:
        lines = "\n".join(json.dumps({"content": f"filler memory {n} about topic {n % 41}"}) for n in range(MEMORIES))
        imported = client.post(
            "/v1/memories:import", content=lines.encode(), headers={"Content-Type": "application/x-ndjson"}
        )
        assert imported.status_code == 200 and imported.json()["imported"] == MEMORIES, imported.text[:300]
        saved = client.post(
            "/v1/memories", json={"content": content, "tags": [token], "metadata": {"code": token}}
        ).json()
        updated = client.patch(f"/v1/memories/{saved['id']}", json={"content": f"{content} (moved)"})
        assert updated.status_code == 200  # the first version now sits in the versions index
        last = client.post("/v1/memories", json={"content": "saved after the secret"}).json()
        assert client.get("/v1/memories", params={"min_seq": last["seq"], "limit": 1}).status_code == 200
        before = _files_holding(home, needles)
        assert any(name.startswith("index-versions/") for name in before), before  # else this proves nothing
        assert any(name.startswith("nats/") for name in before) and any(name.startswith("index/") for name in before)

        started = time.monotonic()
        purged = client.delete(f"/v1/memories/{saved['id']}", params={"purge": "true"})
        took = time.monotonic() - started
        assert purged.status_code == 200, purged.text
        assert purged.json()["erased"] == 2
        left = _files_holding(home, needles)
        print(f"\npurge of one memory among {MEMORIES + 2}: answered in {took:.2f}s; left on disk: {left}")
        assert left == {}, left

        assert client.get(f"/v1/memories/{saved['id']}").status_code == 404
        hits = client.post("/v1/memories:search", json={"query": "filler memory 1234 about topic"}).json()["hits"]
        assert hits and "filler memory" in hits[0]["memory"]["content"]
        status = client.get("/v1/status").json()
        assert status["index"]["memories"] == MEMORIES + 1 and status["index"]["lag"] == 0
        after = client.post("/v1/memories", json={"content": "saved after the purge"})
        assert after.status_code == 201  # the rewritten index keeps taking writes
    finally:
        client.close()
        assert node.stop() == 0
    assert _files_holding(home, needles) == {}

    node = start_node(home, model_cache, ENGRAM_DEV_MODE="false")
    try:
        with httpx.Client(base_url=node.http_url, timeout=60, headers=admin) as client:
            assert client.get(f"/v1/memories/{saved['id']}").status_code == 404
            assert client.get("/v1/status").json()["index"]["memories"] == MEMORIES + 2
    finally:
        assert node.stop() == 0
    assert _files_holding(home, needles) == {}
