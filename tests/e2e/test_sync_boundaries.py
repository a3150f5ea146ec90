"""Issue 22: what an edge device's sync key may do on a secured cluster node (real `engram serve`, real NATS, Qdrant
Edge and ONNX). Each test first reproduced its defect on the code before the fix:

1. an id from another namespace, pushed as a new memory, erased that namespace's memory;
2. a pushed secret was stored verbatim;
3. a device key spoke for any agent (edited another agent's memory, accepted another agent's handoff);
4. `restore: true` skipped the ownership checks and rewrote owners, and its answers were not kept.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.ids import uuid7
from engram.keys import KeyStore
from engram.log.nats import NatsLog
from tests.conftest import NodeHandle, start_node
from tests.helpers.rest import bearer, unique

pytestmark = pytest.mark.integration

GITHUB_TOKEN = "ghp_" + "Zq8Xv2Lm4Nc6Bt1Rw9Ky3Hd5Fs7Jp0Ga2Ue4"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("cluster"), model_cache, ENGRAM_DEV_MODE="false")
    yield handle
    assert handle.stop() == 0


@pytest.fixture
def http(cluster: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.http_url, timeout=60) as client:
        yield client


def key(node: NodeHandle, namespace: str, **fields: Any) -> str:
    _, secret = KeyStore(node.settings.keys_path).create(namespace=namespace, **fields)
    return secret


def save(http: httpx.Client, secret: str, content: str, **fields: Any) -> dict[str, Any]:
    saved = http.post("/v1/memories", json={"content": content, **fields}, headers=bearer(secret))
    assert saved.status_code == 201, saved.text
    memory: dict[str, Any] = saved.json()["memory"]
    memory["seq"] = saved.json()["seq"]
    return memory


def change(memory: dict[str, Any], device: str, seq: int, event: str, agent: str, **fields: Any) -> dict[str, Any]:
    """A pushed change: the memory after it, as the device's log holds it."""
    after = {**{k: v for k, v in memory.items() if k not in ("history", "seq")}, **fields}
    body = {"schema": 1, "event": event, "namespace": after["namespace"], "agent": agent, "memory_id": after["id"],
            "version": after["version"], "memory": after}  # fmt: skip
    return {"source_id": f"{device}:{seq}", "event": event, "body": body, "seq": seq, "parent": "server:1"}


def new_memory(namespace: str, content: str, owner: str, memory_id: str = "") -> dict[str, Any]:
    return {"id": memory_id or uuid7(), "namespace": namespace, "content": content, "owner_agent": owner,
            "version": 1, "memory_type": "general", "status": "active"}  # fmt: skip


def push(http: httpx.Client, secret: str, device: str, changes: list[dict[str, Any]], **extra: Any) -> list[dict]:
    answer = http.post("/v1/sync/push", json={"device": device, "changes": changes, **extra}, headers=bearer(secret))
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


def handoff(http: httpx.Client, secret: str, target: str, context: str) -> dict[str, Any]:
    made = http.post("/v1/handoffs", json={"target_agent": target, "context": context}, headers=bearer(secret))
    assert made.status_code == 201, made.text
    memory = get(http, secret, made.json()["id"], made.json()["seq"]).json()
    return {"id": memory["id"], "memory": memory}


def get(http: httpx.Client, secret: str, memory_id: str, min_seq: int = 0) -> httpx.Response:
    return http.get(f"/v1/memories/{memory_id}", params={"min_seq": min_seq}, headers=bearer(secret))


def test_a_pushed_id_of_another_namespace_is_refused_and_its_owner_keeps_the_memory(
    cluster: NodeHandle, http: httpx.Client
) -> None:
    alpha, beta = unique("alpha"), unique("beta")
    device = unique("dev")
    alpha_sync = key(cluster, alpha, agent="alice", device=device, scopes=["sync"])
    beta_key = key(cluster, beta, agent="bob")
    theirs = save(http, beta_key, "Beta's release checklist lives in the wiki")

    (answer,) = push(http, alpha_sync, device, [
        change(new_memory(alpha, "x", "alice", theirs["id"]), device, 1, "memory_saved", "alice")
    ])  # fmt: skip

    assert not answer["accepted"] and "taken outside this namespace" in answer["reason"]
    got = get(http, beta_key, theirs["id"])
    assert got.status_code == 200 and got.json()["content"] == theirs["content"]
    found = http.post("/v1/memories:search", json={"query": "release checklist"}, headers=bearer(beta_key)).json()
    assert [hit["memory"]["id"] for hit in found["hits"]][:1] == [theirs["id"]]
    listed = http.get("/v1/memories", headers=bearer(beta_key)).json()["memories"]
    assert theirs["id"] in [m["id"] for m in listed]
    # The same push as a restore is refused alike.
    (restored,) = push(http, alpha_sync, device, [
        change(new_memory(alpha, "x", "alice", theirs["id"]), device, 2, "memory_saved", "alice")
    ], restore=True)  # fmt: skip
    assert not restored["accepted"] and "taken outside this namespace" in restored["reason"]


def test_a_log_that_already_holds_a_foreign_id_keeps_both_memories_apart_and_so_does_a_rebuild(
    tmp_path: Path, model_cache: Path
) -> None:
    """What the index does with such an entry written before the fix: a memory is (namespace, id), so the entry is
    a memory of its own namespace and never touches the other's, also when the index is rebuilt from the log."""
    node = start_node(tmp_path / "node", model_cache, ENGRAM_DEV_MODE="false")
    try:
        beta_key, alpha_key = key(node, "beta", agent="bob"), key(node, "alpha", agent="alice")
        with httpx.Client(base_url=node.http_url, timeout=60) as http:
            theirs = save(http, beta_key, "Beta's on-call rota is in PagerDuty")
            entry = change(new_memory("alpha", "planted by a device", "alice", theirs["id"]), "d", 1,
                           "memory_saved", "alice")["body"]  # fmt: skip
            seq = asyncio.run(append_raw(node.nats_url, "alpha", entry, vectors_of=theirs["seq"]))
            assert get(http, alpha_key, theirs["id"], seq).json()["content"] == "planted by a device"
            assert get(http, beta_key, theirs["id"], seq).json()["content"] == theirs["content"]
        assert node.stop() == 0
        for index in ("index", "index-versions"):  # gone: the next start rebuilds both from the log
            shutil.rmtree(node.home / index)
        node = start_node(node.home, model_cache, ENGRAM_DEV_MODE="false")
        with httpx.Client(base_url=node.http_url, timeout=60) as http:
            assert get(http, beta_key, theirs["id"], seq).json()["content"] == theirs["content"]
            assert get(http, alpha_key, theirs["id"], seq).json()["content"] == "planted by a device"
    finally:
        node.stop()


async def append_raw(nats_url: str, namespace: str, body: dict[str, Any], vectors_of: int) -> int:
    """Appends ``body`` as it is, with the vectors of the entry at ``vectors_of`` (an entry the sync service wrote
    before the fix carried vectors too)."""
    log = await NatsLog.connect(nats_url)
    try:
        model = await log.read(vectors_of)
        assert model is not None
        body = {**body, "vectors": model.body["vectors"]}
        return (await log.append(namespace, body["event"], body, msg_id=unique("raw"))).seq
    finally:
        await log.close()


def test_a_pushed_secret_is_scrubbed_before_anything_is_stored(cluster: NodeHandle, http: httpx.Client) -> None:
    namespace, device = unique("ns"), unique("dev")
    sync = key(cluster, namespace, agent="robot", device=device, scopes=["sync"])
    reader = key(cluster, namespace, agent="ops", scopes=["read"])
    token = GITHUB_TOKEN[:-6] + unique("")[-6:]
    pushed = new_memory(namespace, f"CI pushes with {token} on main", "robot")
    pushed["metadata"] = {"note": f"rotate {token}"}
    pushed["tags"] = [token]

    (answer,) = push(http, sync, device, [change(pushed, device, 1, "memory_saved", "robot")])

    assert answer["accepted"] and answer["redacted"], answer
    stored = get(http, reader, pushed["id"], answer["seq"]).json()
    assert token not in json.dumps(stored) and "[REDACTED:" in stored["content"]
    on_disk = [p for p in cluster.home.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert on_disk == []


def test_a_device_speaks_only_for_the_agents_its_key_names(cluster: NodeHandle, http: httpx.Client) -> None:
    namespace, device = unique("ns"), unique("dev")
    sync = key(cluster, namespace, agent="robot,planner", device=device, scopes=["sync"])
    bob = key(cluster, namespace, agent="bob")
    bobs = save(http, bob, "Bob's deploy window is Tuesday 10:00")
    carol = key(cluster, namespace, agent="carol")
    for_bob = handoff(http, carol, "bob", "Rotate the certs")
    for_robot = handoff(http, carol, "robot", "Dock and charge")
    accepted = {"status": "accepted", "updated_at": None, "expires_at": None}

    answers = push(http, sync, device, [
        change(bobs, device, 1, "memory_updated", "bob", content="hijacked", version=2),  # not on its key
        change(bobs, device, 2, "memory_updated", "robot", content="hijacked", version=2),  # bob's memory
        change(for_bob["memory"], device, 3, "handoff_accepted", "robot", version=2,
               handoff={**for_bob["memory"]["handoff"], **accepted}),  # addressed to bob
        change(new_memory(namespace, "owned by bob", "bob"), device, 4, "memory_saved", "robot"),
        change(for_robot["memory"], device, 5, "handoff_accepted", "robot", version=2,
               handoff={**for_robot["memory"]["handoff"], **accepted}),  # its own agent's handoff: fine
        change(new_memory(namespace, "The dock is in bay 2", "planner"), device, 6, "memory_saved", "planner"),
    ])  # fmt: skip

    assert [a["accepted"] for a in answers] == [False, False, False, False, True, True], answers
    assert "'bob' does not work on it" in answers[0]["reason"] and "--agent bob,planner,robot" in answers[0]["reason"]
    # The same words as REST's write-own answer.
    rest = http.patch(f"/v1/memories/{bobs['id']}", json={"content": "x"},
                      headers=bearer(key(cluster, namespace, agent="robot")))  # fmt: skip
    assert rest.status_code == 403 and answers[1]["reason"] == rest.json()["detail"]
    assert "addressed to 'bob'" in answers[2]["reason"]
    assert "cannot save one owned by 'bob'" in answers[3]["reason"]
    assert get(http, bob, bobs["id"], answers[-1]["seq"]).json()["content"] == bobs["content"]
    assert get(http, bob, for_bob["id"]).json()["handoff"]["status"] == "pending"
    assert get(http, bob, for_robot["id"]).json()["handoff"]["status"] == "accepted"


def test_a_key_naming_no_agent_changes_only_what_was_made_on_its_device(
    cluster: NodeHandle, http: httpx.Client
) -> None:
    namespace, device = unique("ns"), unique("dev")
    sync = key(cluster, namespace, device=device, scopes=["sync"])
    made_here = new_memory(namespace, "The gripper is recalibrated weekly", "robot")
    (created,) = push(http, sync, device, [change(made_here, device, 1, "memory_saved", "robot")])
    clusters = save(http, key(cluster, namespace, agent="robot"), "Robot firmware is 4.2")

    answers = push(http, sync, device, [
        change({**made_here, "version": 1}, device, 2, "memory_updated", "robot", content="weekly, on Mondays",
               version=2),
        change(clusters, device, 3, "memory_updated", "robot", content="Robot firmware is 9.9", version=2),
    ])  # fmt: skip

    assert created["accepted"] and [a["accepted"] for a in answers] == [True, False], answers
    assert "not on device" in answers[1]["reason"] and f"--device {device} --agent robot" in answers[1]["reason"]


def test_a_restore_fills_only_what_the_cluster_lacks_and_keeps_its_answers(
    cluster: NodeHandle, http: httpx.Client
) -> None:
    namespace, device = unique("ns"), unique("dev")
    sync = key(cluster, namespace, agent="alice", device=device, scopes=["sync"])
    bob = key(cluster, namespace, agent="bob")
    bobs = save(http, bob, "Bob's staging cluster runs k3s")
    takeover = change(bobs, device, 1, "memory_updated", "alice", content="mine now", version=5, owner_agent="alice")
    lost = new_memory(namespace, "Alice's notes on the lidar driver", "alice")

    answers = push(http, sync, device, [takeover, change(lost, device, 2, "memory_saved", "alice")], restore=True)

    assert [a["accepted"] for a in answers] == [False, True], answers
    assert "Memory owned by 'bob', you are 'alice'" in answers[0]["reason"]
    after = get(http, bob, bobs["id"], answers[1]["seq"]).json()
    assert (after["owner_agent"], after["content"], after["version"]) == ("bob", bobs["content"], 1)
    assert http.patch(f"/v1/memories/{bobs['id']}", json={"content": "x"},
                      headers=bearer(key(cluster, namespace, agent="alice"))).status_code == 403  # fmt: skip
    # Answers are kept: the same restore again writes nothing and answers as before.
    again = push(http, sync, device, [takeover, change(lost, device, 2, "memory_saved", "alice")], restore=True)
    assert [(a["accepted"], a["reason"]) for a in again] == [(a["accepted"], a["reason"]) for a in answers]
    assert again[1]["duplicate"] and again[1]["seq"] == answers[1]["seq"]


def test_a_device_undoes_a_supersession_of_its_agents_memory_as_rest_would(
    cluster: NodeHandle, http: httpx.Client
) -> None:
    """Newest wins (issue 24) through sync: bob supersedes alice's memory on the cluster; alice's device undoes it
    (the replacement first drops its supersedes relation, then her memory is active again), and the cluster takes
    from bob's replacement only the relation dropped, as REST's unsupersede writes it."""
    namespace, device = unique("ns"), unique("dev")
    sync = key(cluster, namespace, agent="alice", device=device, scopes=["sync"])
    alice, bob = key(cluster, namespace, agent="alice"), key(cluster, namespace, agent="bob")
    old = save(http, alice, "The robot's home position is bay 3")
    replaced = http.post(f"/v1/memories/{old['id']}:supersede", json={"content": "Home is bay 4"}, headers=bearer(bob))
    assert replaced.status_code == 200, replaced.text
    old_now, new_now = replaced.json()["superseded"], replaced.json()["memory"]

    answers = push(http, sync, device, [
        change(new_now, device, 1, "memory_unsuperseded", "alice", relations=[], content="bob's words, changed",
               version=new_now["version"] + 1),
        change(old_now, device, 2, "memory_unsuperseded", "alice", status="active", superseded_by="",
               invalid_at=None, version=old_now["version"] + 1),
    ])  # fmt: skip

    assert [a["accepted"] for a in answers] == [True, True], answers
    new_after = get(http, bob, new_now["id"], answers[-1]["seq"]).json()
    assert (new_after["relations"], new_after["content"], new_after["owner_agent"]) == ([], "Home is bay 4", "bob")
    old_after = get(http, bob, old["id"], answers[-1]["seq"]).json()
    assert (old_after["status"], old_after["superseded_by"], old_after["owner_agent"]) == ("active", "", "alice")
