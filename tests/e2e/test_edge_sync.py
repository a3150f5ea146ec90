"""Edge devices and their cluster (issue 10): real `engram edge` and `engram serve` processes on loopback, a TCP
proxy between them that records the traffic and cuts the link (a partition), SIGKILLs mid-push, mid-pull and
mid-batch, a cluster restored from nothing by `engram sync --full`, a revoked device key and skewed device clocks.

Convergence means: every acknowledged change present exactly once on both sides, with equal statuses, contents
and supersession chains; secrets never on the wire nor in the cluster's log.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.keys import KeyStore
from tests.conftest import NodeHandle, engram_env, start_node
from tests.helpers.proxy import LinkProxy

pytestmark = pytest.mark.integration

FAST = {
    "ENGRAM_SYNC_INTERVAL_SECONDS": "0.2",
    "ENGRAM_SYNC_RETRY_FIRST_SECONDS": "0.05",
    "ENGRAM_SYNC_RETRY_MAX_SECONDS": "0.4",
}
CONVERGE_SECONDS = 90.0
ROBOT = {"X-Engram-Agent-ID": "robot"}


# -- helpers ---------------------------------------------------------------------------------------------------


def start_edge(home: Path, model_cache: Path, upstream: str, device: str, key: str = "", **env: str) -> NodeHandle:
    args = ("edge", "--upstream", upstream, "--device", device, *(("--key", key) if key else ()))
    return start_node(home, model_cache, args=args, **{**FAST, **env})


def wait_until(predicate: Callable[[], Any], *, timeout: float = CONVERGE_SECONDS, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := predicate():
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def state(node: NodeHandle) -> dict[str, Any]:
    try:
        return json.loads((node.home / "sync" / "state.json").read_text())
    except (OSError, ValueError):
        return {}


_CLIENTS: list[httpx.Client] = []


def client(node: NodeHandle, key: str = "", **headers: str) -> httpx.Client:
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    made = httpx.Client(base_url=node.http_url, headers={**auth, **headers}, timeout=30)
    _CLIENTS.append(made)
    return made


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def everything(http: httpx.Client) -> dict[str, dict[str, Any]]:
    """Every memory of the namespace, archived and superseded ones too, by id (checks that none is listed twice)."""
    found: dict[str, dict[str, Any]] = {}
    token = None
    while True:
        params: dict[str, Any] = {"limit": 100, "include_archived": True}
        params["status"] = ["active", "archived", "superseded", "expired"]
        if token:
            params["page_token"] = token
        page = http.get("/v1/memories", params=params)
        assert page.status_code == 200, page.text
        for memory in page.json()["memories"]:
            assert memory["id"] not in found, f"{memory['id']} listed twice"
            found[memory["id"]] = memory
        token = page.json()["next_page_token"]
        if not token:
            return found


def shape(memories: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """What must be equal on both sides, for the memories that may travel (each side's secrets stay home)."""
    return {
        i: (m["content"], m["status"], m.get("superseded_by") or "")
        for i, m in memories.items()
        if m.get("sensitivity") != "secret"
    }


def converged(edge: NodeHandle, edge_http: httpx.Client, cluster_http: httpx.Client) -> bool:
    """The device has pushed everything and pulled to the cluster's end, and both sides hold the same memories."""
    s = state(edge)
    if s.get("outbox") or not s.get("last_pull") or s.get("last_error"):
        return False
    return shape(everything(edge_http)) == shape(everything(cluster_http))


def cluster_log(node: NodeHandle) -> bytes:
    """Every entry of the cluster's log, as stored (read straight from its NATS JetStream)."""
    code = (
        "import asyncio, json, sys\n"
        "from engram.log.nats import NatsLog\n"
        "async def main():\n"
        f"    log = await NatsLog.connect({node.nats_url!r})\n"
        "    out, after = [], 0\n"
        "    while True:\n"
        "        entries, more = await log.read_after(after, subjects='engram.events.>', limit=1000)\n"
        "        out += [e.body for e in entries]\n"
        "        if not more or not entries: break\n"
        "        after = entries[-1].seq\n"
        "    await log.close()\n"
        "    sys.stdout.write(json.dumps(out))\n"
        "asyncio.run(main())\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60).stdout


def import_lines(http: httpx.Client, texts: list[str]) -> None:
    body = "\n".join(json.dumps({"content": t}) for t in texts)
    answer = http.post("/v1/memories:import", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["imported"] == len(texts), answer.text


@pytest.fixture
def proxies() -> Iterator[list[LinkProxy]]:
    made: list[LinkProxy] = []
    yield made
    for proxy in made:
        proxy.close()


@pytest.fixture
def nodes() -> Iterator[list[NodeHandle]]:
    started: list[NodeHandle] = []
    yield started
    for node in started:
        if node.process.poll() is None:
            node.stop(signal.SIGKILL)


# -- scenarios -------------------------------------------------------------------------------------------------


def test_offline_changes_converge_and_secrets_never_leave(
    tmp_path: Path, model_cache: Path, proxies: list[LinkProxy], nodes: list[NodeHandle]
) -> None:
    cluster = start_node(tmp_path / "cluster", model_cache, ENGRAM_DEV_MODE="false")
    nodes.append(cluster)
    keys = KeyStore(cluster.settings.keys_path)
    _, sync_key = keys.create(namespace="robots", agent="robot", device="jetson-1", scopes=["sync"])
    _, agent_key = keys.create(namespace="robots", agent="claude-code", scopes=["read", "write"])
    link = LinkProxy(int(cluster.http_url.rsplit(":", 1)[1]))
    proxies.append(link)
    edge = start_edge(tmp_path / "edge", model_cache, link.url, "jetson-1", sync_key)
    nodes.append(edge)
    device, team = client(edge, **ROBOT), client(cluster, agent_key)
    # Online first: the cluster's agent hands work over to the robot, which the device pulls.
    handoff = team.post("/v1/handoffs", json={"target_agent": "robot", "context": "Recalibrate the gripper"})
    assert handoff.status_code == 201, handoff.text
    handoff_id = handoff.json()["id"]
    wait_until(lambda: device.get(f"/v1/memories/{handoff_id}").is_success, what="the handoff to reach the device")
    link.down()  # then the device goes offline

    # Apart: the device saves, changes, deletes and supersedes; the cluster's agent saves.
    ids = [device.post("/v1/memories", json={"content": f"Calibration step {n}"}).json()["id"] for n in range(4)]
    secret = device.post(
        "/v1/memories", json={"content": "The service door code is zebra-4471-kiwi", "sensitivity": "secret"}
    ).json()["id"]
    assert device.patch(f"/v1/memories/{ids[0]}", json={"content": "Calibration step 0, redone"}).is_success
    assert device.post(f"/v1/handoffs/{handoff_id}/accept").is_success  # its target accepts it, offline
    assert device.delete(f"/v1/memories/{ids[1]}").is_success
    replaced = device.post(f"/v1/memories/{ids[2]}:supersede", json={"content": "Step 2 is now done by hand"})
    assert replaced.is_success, replaced.text
    for n in range(3):
        assert team.post("/v1/memories", json={"content": f"Team decision {n}: use ROS 2 Jazzy"}).is_success
    cluster_secret = team.post(
        "/v1/memories", json={"content": "The lab alarm code is otter-9911-plum", "sensitivity": "secret"}
    ).json()["id"]
    wait_until(lambda: state(edge).get("last_error"), what="the device to fail to reach the cluster")
    assert team.get(f"/v1/memories/{handoff_id}").json()["handoff"]["status"] == "pending"
    assert device.get("/v1/memories").is_success  # everything local works offline

    link.up()  # heal
    wait_until(lambda: converged(edge, device, client(cluster, agent_key)) or None, what="convergence")

    on_cluster = everything(team)
    on_device = everything(device)
    assert secret not in on_cluster and cluster_secret not in on_device
    assert on_cluster[ids[0]]["content"] == "Calibration step 0, redone"
    assert on_cluster[ids[1]]["status"] == "archived"
    assert on_cluster[ids[2]]["status"] == "superseded"
    assert on_cluster[ids[2]]["superseded_by"] == replaced.json()["id"]
    assert sum("Team decision" in m["content"] for m in on_device.values()) == 3
    assert on_cluster[handoff_id]["handoff"]["status"] == "accepted"  # the one exception to write-own travels too
    # Secrets: never on the wire (either way), never in the cluster's log.
    assert b"zebra-4471-kiwi" not in bytes(link.sent) and b"otter-9911-plum" not in bytes(link.received)
    assert b"zebra-4471-kiwi" not in cluster_log(cluster)
    # The status command shows it all.
    shown = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "sync", "--status", "--home", str(edge.home)],
        capture_output=True, text=True, env=engram_env(model_cache), timeout=30,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "outbox:     0" in shown.stdout and "jetson-1" in shown.stdout, shown.stdout


def test_two_devices_editing_apart_keep_both_versions(
    tmp_path: Path, model_cache: Path, proxies: list[LinkProxy], nodes: list[NodeHandle]
) -> None:
    cluster = start_node(tmp_path / "cluster", model_cache)
    nodes.append(cluster)
    port = int(cluster.http_url.rsplit(":", 1)[1])
    link_a, link_b = LinkProxy(port), LinkProxy(port)
    proxies += [link_a, link_b]
    edge_a = start_edge(tmp_path / "a", model_cache, link_a.url, "robot-a")
    edge_b = start_edge(tmp_path / "b", model_cache, link_b.url, "robot-b")
    nodes += [edge_a, edge_b]
    a, b, hub = client(edge_a, **ROBOT), client(edge_b, **ROBOT), client(cluster, **ROBOT)
    edited = a.post("/v1/memories", json={"content": "The arm's home pose is joint angles 0,0,0"}).json()["id"]
    dropped = a.post("/v1/memories", json={"content": "The charger is in bay 3"}).json()["id"]
    wait_until(lambda: {edited, dropped} <= set(everything(b)), what="device B to pull the memories")

    link_a.down()
    link_b.down()
    assert a.patch(f"/v1/memories/{edited}", json={"content": "The arm's home pose is 0,90,0 (A)"}).is_success
    assert b.patch(f"/v1/memories/{edited}", json={"content": "The arm's home pose is 0,45,0 (B)"}).is_success
    assert b.patch(f"/v1/memories/{dropped}", json={"content": "The charger is in bay 4"}).is_success
    assert a.delete(f"/v1/memories/{dropped}").is_success

    link_a.up()  # A reaches the cluster first: its versions get the earlier server sequences
    wait_until(lambda: state(edge_a).get("pushed_total", 0) >= 4 and not state(edge_a).get("outbox"), what="A's push")
    link_b.up()
    # Both at once: A can agree with the cluster before B's change has reached it.
    wait_until(lambda: converged(edge_a, a, hub) and converged(edge_b, b, hub), what="both devices to converge")

    head = hub.get(f"/v1/memories/{edited}").json()
    assert head["content"] == "The arm's home pose is 0,45,0 (B)"  # the later server sequence is head
    overridden = [v for v in head["history"] if v["content"] == "The arm's home pose is 0,90,0 (A)"]
    assert len(overridden) == 1 and overridden[0]["conflict"] is True
    # The charger: A archived it, then B's change arrived later and is head; A's archive stays in history.
    charger = hub.get(f"/v1/memories/{dropped}").json()
    assert charger["content"] == "The charger is in bay 4" and charger["status"] == "active"
    assert any(v["status"] == "archived" and v["conflict"] for v in charger["history"])
    events = [body for body in json.loads(cluster_log(cluster)) if body.get("event") == "memory_conflict"]
    assert {e["memory_id"] for e in events} == {edited, dropped}
    assert all(e["device"] == "robot-b" for e in events)
    for http in (a, b):
        assert http.get(f"/v1/memories/{edited}").json()["content"] == head["content"]
        assert http.get(f"/v1/memories/{dropped}").json()["status"] == "active"
    assert state(edge_b)["conflicts"] == 2


def _push(http: httpx.Client, device: str, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    answer = http.post("/v1/sync/push", json={"device": device, "changes": changes})
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


def _change(memory: dict[str, Any], device: str, seq: int, event: str = "memory_updated", **fields: Any) -> dict:
    body_memory = {**{k: v for k, v in memory.items() if k != "history"}, **fields}
    body = {"schema": 1, "event": event, "namespace": memory["namespace"], "agent": fields.get("updated_by", "robot"),
            "memory_id": memory["id"], "version": body_memory["version"], "memory": body_memory}  # fmt: skip
    return {"source_id": f"{device}:{seq}", "event": event, "body": body, "seq": seq, "parent": "server:1"}


def test_device_clocks_never_order_changes(tmp_path: Path, model_cache: Path, nodes: list[NodeHandle]) -> None:
    """Two devices whose clocks are days off push changes to one memory: the cluster's sequence orders them,
    each version's time stays between its predecessor's and the cluster's now; re-pushes change nothing; a
    stranger's change and a secret are refused with reasons."""
    cluster = start_node(tmp_path / "cluster", model_cache)
    nodes.append(cluster)
    http = client(cluster, **ROBOT)
    memory = http.post("/v1/memories", json={"content": "Battery swap every 4 hours"}).json()["memory"]
    day = 86400.0
    ahead = _change(memory, "fast-clock", 7, content="Battery swap every 5 hours", version=2,
                    updated_at=_rfc3339(time.time() + 3 * day))  # fmt: skip
    behind = _change(memory, "slow-clock", 3, content="Battery swap every 6 hours", version=2,
                     updated_at=_rfc3339(time.time() - 5 * day))  # fmt: skip
    (first,) = _push(http, "fast-clock", [ahead])
    (second,) = _push(http, "slow-clock", [behind])
    assert first["accepted"] and second["accepted"] and second["seq"] > first["seq"]
    assert (first["version"], second["version"], second["conflict"]) == (2, 3, True)
    head = http.get(f"/v1/memories/{memory['id']}", params={"min_seq": second["seq"]}).json()
    assert head["content"] == "Battery swap every 6 hours"  # the later server sequence, despite its old clock
    times = [v["updated_at"] for v in head["history"]] + [head["updated_at"]]
    assert times == sorted(times) and _epoch(head["updated_at"]) <= time.time() + 1
    # A re-push (the device crashed before storing the answer) is answered the same and writes nothing.
    (again,) = _push(http, "slow-clock", [behind])
    assert again["accepted"] and again["duplicate"] and again["seq"] == second["seq"]
    assert http.get(f"/v1/memories/{memory['id']}").json()["version"] == 3
    # A change by an agent who does not own the memory, and a secret, are rejected (recorded, not retried).
    stranger = _change(head, "fast-clock", 8, content="hijacked", version=4, updated_by="mallory")
    stranger["body"]["agent"] = "mallory"
    secret = _change(head, "fast-clock", 9, content="the vault code is 1234", version=4, sensitivity="secret")
    refused = _push(http, "fast-clock", [stranger, secret])
    assert [r["accepted"] for r in refused] == [False, False]
    assert "owned by 'robot'" in refused[0]["reason"] and "secret" in refused[1]["reason"]
    assert _push(http, "fast-clock", [stranger])[0]["reason"] == refused[0]["reason"]
    # A device may only push as itself.
    other = _push(http, "fast-clock", [_change(head, "slow-clock", 10, content="x", version=4)])
    assert not other[0]["accepted"] and "source_id must be 'fast-clock:" in other[0]["reason"]


def _rfc3339(epoch: float) -> str:
    from engram.model import format_time

    return str(format_time(epoch))


def _epoch(text: str) -> float:
    from engram.model import parse_time

    return float(parse_time(text) or 0.0)


def test_kills_mid_push_mid_pull_and_mid_batch_lose_nothing_and_duplicate_nothing(
    tmp_path: Path, model_cache: Path, proxies: list[LinkProxy], nodes: list[NodeHandle]
) -> None:
    cluster = start_node(tmp_path / "cluster", model_cache)
    nodes.append(cluster)
    link = LinkProxy(int(cluster.http_url.rsplit(":", 1)[1]))
    proxies.append(link)
    link.down()
    edge = start_edge(tmp_path / "edge", model_cache, link.url, "jetson-1", ENGRAM_SYNC_BATCH="5")
    nodes.append(edge)
    texts = [f"Observation {n}: the floor sensor reads {n * 7 % 101} mm" for n in range(300)]
    import_lines(client(edge, **ROBOT), texts)

    # Mid-push: SIGKILL the device once a few batches are through, start it again.
    link.up()
    wait_until(lambda: state(edge).get("pushed_total", 0) >= 60, what="the first batches")
    edge.stop(signal.SIGKILL)
    assert state(edge)["pushed_total"] < len(texts), "killed after the push ended"
    edge = start_edge(tmp_path / "edge", model_cache, link.url, "jetson-1", ENGRAM_SYNC_BATCH="5")
    nodes.append(edge)
    # Mid-batch: SIGKILL the cluster while the push goes on, start it again (on another port).
    wait_until(lambda: state(edge).get("pushed_total", 0) >= 150, what="more batches")
    cluster.stop(signal.SIGKILL)
    assert state(edge)["pushed_total"] < len(texts), "the cluster was killed after the push ended"
    cluster = start_node(tmp_path / "cluster", model_cache)
    nodes.append(cluster)
    link.retarget(int(cluster.http_url.rsplit(":", 1)[1]))
    hub = client(cluster, **ROBOT)
    wait_until(lambda: converged(edge, client(edge, **ROBOT), hub) or None, what="convergence after the kills")
    assert sorted(m["content"] for m in everything(hub).values()) == sorted(texts)

    # Mid-pull: a new device backfills in pages of 20; SIGKILL it part-way, start it again.
    fresh = start_edge(tmp_path / "fresh", model_cache, link.url, "jetson-2", ENGRAM_SYNC_BATCH="20")
    nodes.append(fresh)
    wait_until(lambda: state(fresh).get("pulled_total", 0) >= 60, what="the first pages")
    fresh.stop(signal.SIGKILL)
    assert state(fresh)["pulled_total"] < len(texts), "killed after the backfill ended"
    fresh = start_edge(tmp_path / "fresh", model_cache, link.url, "jetson-2", ENGRAM_SYNC_BATCH="20")
    nodes.append(fresh)
    wait_until(lambda: converged(fresh, client(fresh, **ROBOT), hub) or None, what="the backfill")
    assert sorted(m["content"] for m in everything(client(fresh)).values()) == sorted(texts)

    # Disaster: the cluster is lost; a new, empty one is rebuilt from the device with `engram sync --full`.
    cluster.stop(signal.SIGKILL)
    rebuilt = start_node(tmp_path / "rebuilt", model_cache)
    nodes.append(rebuilt)
    link.retarget(int(rebuilt.http_url.rsplit(":", 1)[1]))
    full = subprocess.run(
        [sys.executable, "-m", "engram.services.node", "sync", "--full", "--home", str(edge.home)],
        capture_output=True, text=True, env=engram_env(model_cache), timeout=300,
    )  # fmt: skip
    assert full.returncode == 0, full.stdout + full.stderr
    assert "Done:" in full.stdout, full.stdout
    new_hub = client(rebuilt, **ROBOT)
    wait_until(lambda: converged(edge, client(edge, **ROBOT), new_hub) or None, what="the rebuilt cluster")
    assert sorted(m["content"] for m in everything(new_hub).values()) == sorted(texts)
    assert len(everything(client(edge))) == len(texts)  # the device pulled its own memories back: no copies


def test_a_revoked_device_key_stops_sync_not_the_device(
    tmp_path: Path, model_cache: Path, nodes: list[NodeHandle]
) -> None:
    cluster = start_node(tmp_path / "cluster", model_cache, ENGRAM_DEV_MODE="false")
    nodes.append(cluster)
    keys = KeyStore(cluster.settings.keys_path)
    record, sync_key = keys.create(namespace="robots", agent="", device="jetson-1", scopes=["sync"])
    _, reader = keys.create(namespace="robots", agent="ops", scopes=["read"])
    edge = start_edge(tmp_path / "edge", model_cache, cluster.http_url, "jetson-1", sync_key)
    nodes.append(edge)
    device = client(edge, **ROBOT)
    assert device.post("/v1/memories", json={"content": "Lidar firmware 2.3 drops frames"}).is_success
    wait_until(lambda: state(edge).get("pushed_total") == 1 and not state(edge).get("outbox"), what="the push")
    # A key for another device, or without the sync scope, is refused.
    assert client(cluster, sync_key).post("/v1/sync/register", json={"device": "jetson-9"}).status_code == 403
    assert client(cluster, reader).post("/v1/sync/register", json={"device": "jetson-1"}).status_code == 403

    keys.revoke(record.key_id)
    assert device.post("/v1/memories", json={"content": "Lidar firmware 2.4 fixes it"}).is_success  # still works
    wait_until(lambda: "401" in state(edge).get("last_error", ""), what="the refusal")
    assert state(edge)["outbox"] == 1
    hub = everything(client(cluster, reader))
    assert [m["content"] for m in hub.values()] == ["Lidar firmware 2.3 drops frames"]
