"""Every write path against the three trust boundaries (issue 22): another namespace's id, another agent's memory
(or a claim to be another agent), and a secret. One secured node (real NATS, Qdrant Edge, ONNX, the MCP SDK client
over streamable HTTP).

The table PATHS names each write path of the REST API and each MCP tool that writes, with a probe per boundary or
the reason the boundary does not apply; `test_every_write_path_is_in_the_table` reads the node's own OpenAPI
document and tool list, so a new entry point fails until it is added here with its three probes.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.ids import uuid7
from engram.keys import KeyStore
from tests.conftest import NodeHandle, start_node
from tests.helpers.mcp import call, http_client
from tests.helpers.rest import bearer, unique

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NOT_WRITES = {  # POST routes that store nothing
    "POST /v1/memories:search": "a search",
    "POST /v1/sync/register": "checks a device's key; stores nothing",
}


@dataclass
class World:
    """Two namespaces: alpha (alice, bob, dave, an admin, a device of alice's, a packs key) and beta (carol)."""

    node: NodeHandle
    http: httpx.Client
    alpha: str
    keys: dict[str, str]
    beta_memory: dict[str, Any] = field(default_factory=dict)
    bobs: dict[str, Any] = field(default_factory=dict)
    handoff_to_bob: str = ""
    device: str = ""
    tokens: list[str] = field(default_factory=list)
    rules: dict[str, Any] = field(default_factory=dict)  # rules.md of a pack alice installed with the packs key

    def token(self) -> str:
        """A GitHub token no other probe uses (the data dir is scanned for every one at the end)."""
        made = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
        self.tokens.append(made)
        return made

    def rest(self, method: str, path: str, who: str = "alice", **kwargs: Any) -> httpx.Response:
        headers = {**bearer(self.keys[who]), **kwargs.pop("headers", {})}
        return self.http.request(method, path, headers=headers, **kwargs)

    def get(self, memory_id: str, who: str, min_seq: int = 0) -> dict[str, Any]:
        got = self.rest("GET", f"/v1/memories/{memory_id}", who, params={"min_seq": min_seq})
        assert got.status_code == 200, got.text
        memory: dict[str, Any] = got.json()
        return memory

    def save(self, who: str, content: str, **fields: Any) -> dict[str, Any]:
        saved = self.rest("POST", "/v1/memories", who, json={"content": content, **fields})
        assert saved.status_code == 201, saved.text
        return self.get(saved.json()["id"], who, saved.json()["seq"])

    def unchanged(self) -> None:
        """Neither beta's memory nor bob's changed."""
        for memory, who in ((self.beta_memory, "carol"), (self.bobs, "bob")):
            now = self.get(memory["id"], who)
            assert (now["content"], now["version"], now["status"], now["owner_agent"]) == (
                memory["content"], memory["version"], memory["status"], memory["owner_agent"],
            )  # fmt: skip

    def clean(self, text: str, token: str) -> None:
        assert token not in text and "[REDACTED:" in text, text

    def pack_rules(self) -> dict[str, Any]:
        """The memory of rules.md of a pack alice installed (with the packs key); installed on first use."""
        if not self.rules:
            name = unique("pack")
            pack = {"name": name, "meta": {"name": name, "description": "Reviews", "version": "1.0.0"},
                    "files": {"rules.md": "# Rules\nNever force push.\n"}}  # fmt: skip
            assert self.rest("POST", "/v1/packs", "packs", json=pack).status_code == 200
            listed = self.rest("GET", "/v1/memories", params={"pack": name, "memory_type": "pack-file"}).json()
            self.rules = next(m for m in listed["memories"] if m["metadata"]["pack_path"] == "rules.md")
        return self.rules

    def rules_unchanged(self) -> None:
        rules = self.pack_rules()
        now = self.get(rules["id"], "dave")
        assert (now["content"], now["version"], now["status"]) == (rules["content"], rules["version"], "active")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[World]:
    node = start_node(tmp_path_factory.mktemp("paths"), model_cache, ENGRAM_DEV_MODE="false")
    store = KeyStore(node.settings.keys_path)
    alpha, beta, device = unique("alpha"), unique("beta"), unique("dev")
    keys = {
        name: store.create(namespace=alpha, agent=name)[1] for name in ("alice", "bob", "dave")
    } | {
        "admin": store.create(namespace=alpha, agent="root", scopes=["read", "write", "admin"])[1],
        "packs": store.create(namespace=alpha, agent="alice", scopes=["read", "write", "packs"])[1],
        "device": store.create(namespace=alpha, agent="alice", device=device, scopes=["sync"])[1],
        "carol": store.create(namespace=beta, agent="carol")[1],
    }  # fmt: skip
    with httpx.Client(base_url=node.http_url, timeout=60) as http:
        made = World(node, http, alpha, keys, device=device)
        made.beta_memory = made.save("carol", "Beta's VPN gateway is vpn.beta.example")
        made.bobs = made.save("bob", "Bob's build cache lives on the NFS share")
        handoff = made.rest("POST", "/v1/handoffs", "dave", json={"target_agent": "bob", "context": "Review PR 12"})
        assert handoff.status_code == 201, handoff.text
        made.handoff_to_bob = handoff.json()["id"]
        yield made
    assert node.stop() == 0


# -- REST probes -------------------------------------------------------------------------------------------------


def refused(response: httpx.Response, *statuses: int) -> None:
    assert response.status_code in statuses, (response.status_code, response.text)


async def rest_save_claim(w: World) -> None:
    refused(w.rest("POST", "/v1/memories", json={"content": "x"}, headers={"X-Engram-Agent-ID": "bob"}), 403)


async def rest_save_secret(w: World) -> None:
    token = w.token()
    saved = w.rest("POST", "/v1/memories", json={"content": f"deploy with {token}", "tags": [token]})
    assert saved.status_code == 201, saved.text
    w.clean(json.dumps(w.get(saved.json()["id"], "alice", saved.json()["seq"])), token)


async def rest_update_foreign(w: World) -> None:
    refused(w.rest("PATCH", f"/v1/memories/{w.beta_memory['id']}", json={"content": "x"}), 404)


async def rest_update_other(w: World) -> None:
    refused(w.rest("PATCH", f"/v1/memories/{w.bobs['id']}", json={"content": "x"}), 403)


async def rest_update_secret(w: World) -> None:
    own, token = w.save("alice", "The staging DB is db-2"), w.token()
    changed = w.rest("PATCH", f"/v1/memories/{own['id']}", json={"content": f"The staging DB token is {token}"})
    assert changed.status_code == 200, changed.text
    w.clean(w.get(own["id"], "alice", changed.json()["seq"])["content"], token)


async def rest_delete_foreign(w: World) -> None:
    refused(w.rest("DELETE", f"/v1/memories/{w.beta_memory['id']}"), 404)
    refused(w.rest("DELETE", f"/v1/memories/{w.beta_memory['id']}", "admin", params={"purge": "true"}), 404)


async def rest_delete_other(w: World) -> None:
    refused(w.rest("DELETE", f"/v1/memories/{w.bobs['id']}"), 403)


async def rest_supersede_foreign(w: World) -> None:
    refused(w.rest("POST", f"/v1/memories/{w.beta_memory['id']}:supersede", json={"content": "x"}), 404)
    own = w.save("alice", "The CI runner is ubuntu-22.04")
    refused(w.rest("POST", f"/v1/memories/{own['id']}:supersede", json={"new_id": w.beta_memory["id"]}), 404)


async def rest_supersede_other(w: World) -> None:
    """Newest wins: another agent's memory is superseded without its content or owner changing; an open handoff
    only by its owner."""
    theirs = w.save("bob", "Bob's artifacts go to the S3 bucket builds-1")
    replaced = w.rest("POST", f"/v1/memories/{theirs['id']}:supersede", json={"content": "Artifacts go to builds-2"})
    assert replaced.status_code == 200, replaced.text
    now = w.get(theirs["id"], "bob", replaced.json()["seq"])
    assert (now["content"], now["owner_agent"], now["status"]) == (theirs["content"], "bob", "superseded")
    refused(w.rest("POST", f"/v1/memories/{w.handoff_to_bob}:supersede", json={"content": "x"}), 403)


async def rest_unsupersede_foreign(w: World) -> None:
    refused(w.rest("POST", f"/v1/memories/{w.beta_memory['id']}:unsupersede"), 404)


def superseded_by_alice(w: World) -> tuple[dict[str, Any], str]:
    """A memory of bob's that alice superseded: (the memory, its replacement's id)."""
    theirs = w.save("bob", f"Bob's runner pool is pool-{secrets.randbelow(10**6)}")
    replaced = w.rest("POST", f"/v1/memories/{theirs['id']}:supersede", json={"content": "The runner pool is pool-b"})
    assert replaced.status_code == 200, replaced.text
    return theirs, replaced.json()["id"]


async def rest_unsupersede_other(w: World) -> None:
    """Only the owner or an admin undoes a supersession: not the agent that superseded, nor a third one."""
    theirs, _ = superseded_by_alice(w)
    path = f"/v1/memories/{theirs['id']}:unsupersede"
    refused(w.rest("POST", path), 403)
    refused(w.rest("POST", path, "dave"), 403)
    assert w.rest("POST", path, "admin").status_code == 200
    again, _ = superseded_by_alice(w)  # and the owner
    undone = w.rest("POST", f"/v1/memories/{again['id']}:unsupersede", "bob")
    assert undone.status_code == 200, undone.text
    assert w.get(again["id"], "bob", undone.json()["seq"])["status"] == "active"


async def rest_supersede_secret(w: World) -> None:
    own, token = w.save("alice", "The CI runner is ubuntu-20.04"), w.token()
    replaced = w.rest("POST", f"/v1/memories/{own['id']}:supersede", json={"content": f"CI uses {token}"})
    assert replaced.status_code in (200, 201), replaced.text
    w.clean(json.dumps(replaced.json()), token)


async def rest_import_claim(w: World) -> None:
    """No claim to be bob; and a source_id is the importing agent's own: alice importing first under bob's
    source_id neither answers for bob's import (issue 33) nor blocks it."""
    body = json.dumps({"content": "x"})
    headers = {"Content-Type": "application/x-ndjson", "X-Engram-Agent-ID": "bob"}
    refused(w.rest("POST", "/v1/memories:import", content=body, headers=headers), 403)
    source_id = f"hook:{secrets.token_hex(16)}"
    squat = w.rest("POST", "/v1/memories:import", content=json.dumps({"content": "junk", "source_id": source_id}))
    real = w.rest("POST", "/v1/memories:import", "bob", content=json.dumps({"content": "Bob's capture",
                  "source_id": source_id}))  # fmt: skip
    assert (squat.json()["imported"], real.json()["imported"], real.json()["already_present"]) == (1, 1, 0), real.text
    mine = w.get(real.json()["items"][0]["id"], "bob", real.json()["last_seq"])
    assert (mine["content"], mine["owner_agent"]) == ("Bob's capture", "bob")


async def rest_import_secret(w: World) -> None:
    token = w.token()
    body = json.dumps({"content": f"old CI token {token}", "metadata": {"token": token}})
    imported = w.rest("POST", "/v1/memories:import", content=body, headers={"Content-Type": "application/x-ndjson"})
    assert imported.status_code == 200 and imported.json()["imported"] == 1, imported.text
    memory_id = imported.json()["items"][0]["id"]
    w.clean(json.dumps(w.get(memory_id, "alice", imported.json()["last_seq"])), token)


async def rest_handoff_claim(w: World) -> None:
    claim = {"X-Engram-Agent-ID": "bob"}
    refused(w.rest("POST", "/v1/handoffs", json={"target_agent": "dave", "context": "x"}, headers=claim), 403)


async def rest_handoff_secret(w: World) -> None:
    token = w.token()
    made = w.rest("POST", "/v1/handoffs", json={"target_agent": "dave", "context": f"use {token} to deploy"})
    assert made.status_code == 201, made.text
    w.clean(w.get(made.json()["id"], "alice", made.json()["seq"])["content"], token)


def rest_move(step: str) -> tuple[Callable[[World], Awaitable[None]], ...]:
    async def foreign(w: World) -> None:
        theirs = w.rest("POST", "/v1/handoffs", "carol", json={"target_agent": "alice", "context": "x"}).json()["id"]
        refused(w.rest("POST", f"/v1/handoffs/{theirs}/{step}", json={}), 404)

    async def other(w: World) -> None:
        refused(w.rest("POST", f"/v1/handoffs/{w.handoff_to_bob}/{step}", json={}), 403)

    async def secret(w: World) -> None:
        token = w.token()
        made = w.rest("POST", "/v1/handoffs", "dave", json={"target_agent": "alice", "context": "Rotate keys"})
        if step == "complete":
            assert w.rest("POST", f"/v1/handoffs/{made.json()['id']}/accept", json={}).status_code == 200
        moved = w.rest("POST", f"/v1/handoffs/{made.json()['id']}/{step}", json={"note": f"done with {token}"})
        assert moved.status_code == 200, moved.text
        w.clean(json.dumps(w.get(made.json()["id"], "alice", moved.json()["seq"])), token)

    return foreign, other, secret


async def rest_pin_foreign(w: World) -> None:
    refused(w.rest("POST", f"/v1/memories/{w.beta_memory['id']}/pin"), 404)
    refused(w.rest("DELETE", f"/v1/memories/{w.beta_memory['id']}/pin"), 404)


async def rest_consolidate_foreign(w: World) -> None:
    own = w.save("alice", "The API base URL is /api/v2")
    body = {"consolidated_content": "x", "memory_ids": [own["id"], w.beta_memory["id"]]}
    refused(w.rest("POST", "/v1/consolidate", json=body), 404)


async def rest_consolidate_other(w: World) -> None:
    own = w.save("alice", "The API base URL is /api/v3")
    body = {"consolidated_content": "x", "memory_ids": [own["id"], w.bobs["id"]]}
    refused(w.rest("POST", "/v1/consolidate", json=body), 403)


async def rest_consolidate_secret(w: World) -> None:
    first, second, token = w.save("alice", "Port 8080 is the API"), w.save("alice", "The API port is 8080"), w.token()
    body = {"consolidated_content": f"API on 8080, token {token}", "memory_ids": [first["id"], second["id"]]}
    merged = w.rest("POST", "/v1/consolidate", json=body)
    assert merged.status_code in (200, 201), merged.text
    w.clean(json.dumps(merged.json()["survivor"]), token)


async def rest_resolve_foreign(w: World) -> None:
    own = w.save("alice", "Releases ship on Fridays")
    body = {"id": own["id"], "other_id": w.beta_memory["id"], "resolution": "keep_newer"}
    refused(w.rest("POST", "/v1/contradictions/resolve", "admin", json=body), 404)


async def rest_packs_secret(w: World) -> None:
    token, name = w.token(), unique("pack")
    pack = {"name": name, "meta": {"name": name, "description": "A test pack", "version": "1.0.0"},
            "files": {"role.md": f"# Role\nYou deploy with {token}.\n"}}  # fmt: skip
    installed = w.rest("POST", "/v1/packs", "packs", json=pack)
    assert installed.status_code == 200, installed.text
    exported = w.rest("GET", f"/v1/packs/{name}", "packs")
    w.clean(exported.text, token)


# -- sync probes -------------------------------------------------------------------------------------------------


def pushed(w: World, memory: dict[str, Any], event: str, agent: str, restore: bool) -> dict[str, Any]:
    after = {k: v for k, v in memory.items() if k not in ("history", "seq")}
    body = {"schema": 1, "event": event, "namespace": w.alpha, "agent": agent, "memory_id": after["id"],
            "version": after["version"], "memory": after}  # fmt: skip
    change = {"source_id": f"{w.device}:{secrets.randbelow(10**9)}", "event": event, "body": body, "seq": 1,
              "parent": f"server:{max(memory['version'] - 1, 0)}"}  # fmt: skip
    answer = w.rest(
        "POST", "/v1/sync/push", "device", json={"device": w.device, "changes": [change], "restore": restore}
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["results"][0]
    return result


def sync_probes(restore: bool) -> tuple[Callable[[World], Awaitable[None]], ...]:
    def new(content: str, memory_id: str = "") -> dict[str, Any]:
        return {"id": memory_id or uuid7(), "namespace": "", "content": content, "owner_agent": "alice",
                "version": 1, "memory_type": "general", "status": "active"}  # fmt: skip

    async def foreign(w: World) -> None:
        answer = pushed(w, {**new("x", w.beta_memory["id"]), "namespace": w.alpha}, "memory_saved", "alice", restore)
        assert not answer["accepted"] and "taken outside this namespace" in answer["reason"]

    async def other(w: World) -> None:
        as_bob = pushed(w, {**new("x"), "namespace": w.alpha, "owner_agent": "bob"}, "memory_saved", "bob", restore)
        bobs = {**w.bobs, "content": "hijacked", "version": w.bobs["version"] + 4}
        on_bobs = pushed(w, bobs, "memory_updated", "alice", restore)
        assert not as_bob["accepted"] and "does not work on it" in as_bob["reason"]
        assert not on_bobs["accepted"] and "owned by 'bob'" in on_bobs["reason"]
        # Newest wins on a device too: only the supersession is taken; its undo is the owner's, as on REST.
        theirs = w.save("bob", f"Bob's lidar firmware is 2.{secrets.randbelow(10**6)}")
        replacement = {**new("The lidar firmware is 3.0"), "namespace": w.alpha}
        assert pushed(w, replacement, "memory_saved", "alice", restore)["accepted"]
        superseded = {**theirs, "content": "hijacked", "status": "superseded", "superseded_by": replacement["id"],
                      "version": theirs["version"] + 1}  # fmt: skip
        taken = pushed(w, superseded, "memory_superseded", "alice", restore)
        assert taken["accepted"], taken
        now = w.get(theirs["id"], "bob", taken["seq"])
        assert (now["content"], now["owner_agent"], now["status"]) == (theirs["content"], "bob", "superseded")
        undo = {**superseded, "content": theirs["content"], "status": "active", "superseded_by": "",
                "version": theirs["version"] + 2}  # fmt: skip
        undone = pushed(w, undo, "memory_unsuperseded", "alice", restore)
        rest = w.rest("POST", f"/v1/memories/{theirs['id']}:unsupersede")
        assert not undone["accepted"] and undone["reason"] == rest.json()["detail"], (undone, rest.text)

    async def secret(w: World) -> None:
        token, memory = w.token(), new("")
        memory.update(namespace=w.alpha, content=f"robot key {token}", tags=[token])
        answer = pushed(w, memory, "memory_saved", "alice", restore)
        assert answer["accepted"] and answer["redacted"], answer
        w.clean(json.dumps(w.get(memory["id"], "alice", answer["seq"])), token)

    return foreign, other, secret


# -- MCP probes --------------------------------------------------------------------------------------------------


async def mcp_call(w: World, tool: str, who: str = "alice", **arguments: Any) -> Any:
    async with http_client(w.node.mcp_url, key=w.keys[who]) as client:
        result = await client.call_tool(tool, arguments)
    return result


NOT_HERE = "in this namespace"  # "No memory with id '…' in this namespace": another namespace's id is not found


def tool_refused(result: Any, *words: str) -> None:
    text = " ".join(getattr(part, "text", "") for part in result.content)
    assert result.is_error and all(word in text for word in words), text


def mcp_claim(tool: str, who: str = "alice", **arguments: Any) -> Callable[[World], Awaitable[None]]:
    """A key bound to one agent that claims another (X-Engram-Agent-ID: bob) is refused, naming both."""

    async def claim(w: World) -> None:
        async with http_client(w.node.mcp_url, key=w.keys[who], agent="bob") as client:
            result = await client.call_tool(tool, arguments)
        tool_refused(result, "cannot speak for 'bob'")

    return claim


async def mcp_save_secret(w: World) -> None:
    token = w.token()
    async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
        saved = await call(client, "save_memory", content=f"The npm token is {token}", tags=["npm"])
    w.clean(json.dumps(w.get(saved["id"], "alice", saved["seq"])), token)


def mcp_id_probes(tool: str, id_arg: str = "id", **extra: Any) -> tuple[Callable[[World], Awaitable[None]], ...]:
    async def foreign(w: World) -> None:
        tool_refused(await mcp_call(w, tool, **{id_arg: w.beta_memory["id"]}, **extra), NOT_HERE)

    async def other(w: World) -> None:
        tool_refused(await mcp_call(w, tool, **{id_arg: w.bobs["id"]}, **extra), "'bob'")

    return foreign, other


async def mcp_supersede_other(w: World) -> None:
    theirs = w.save("bob", "Bob's cache TTL is 60s")
    async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
        replaced = await call(client, "supersede_memory", old_id=theirs["id"], content="The cache TTL is 120s")
    now = w.get(theirs["id"], "bob", replaced["seq"])
    assert (now["content"], now["owner_agent"], now["status"]) == (theirs["content"], "bob", "superseded")
    tool_refused(await mcp_call(w, "supersede_memory", old_id=w.handoff_to_bob, content="x"), "only its owner 'dave'")


async def mcp_unsupersede_other(w: World) -> None:
    theirs, _ = superseded_by_alice(w)
    for who in ("alice", "dave"):
        tool_refused(await mcp_call(w, "unsupersede_memory", who, id=theirs["id"]), "owned by 'bob'")
    async with http_client(w.node.mcp_url, key=w.keys["bob"]) as client:
        undone = await call(client, "unsupersede_memory", id=theirs["id"])
    assert w.get(theirs["id"], "bob", undone["seq"])["status"] == "active"


async def mcp_update_secret(w: World) -> None:
    own, token = w.save("alice", "The Sentry DSN is in Vault"), w.token()
    async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
        changed = await call(client, "update_memory", id=own["id"], content=f"Sentry auth {token}")
    w.clean(w.get(own["id"], "alice", changed["seq"])["content"], token)


async def mcp_supersede_secret(w: World) -> None:
    own, token = w.save("alice", "Node 18 is the runtime"), w.token()
    async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
        replaced = await call(client, "supersede_memory", old_id=own["id"], content=f"Node 22; registry {token}")
    w.clean(json.dumps(replaced), token)


async def mcp_handoff_secret(w: World) -> None:
    token = w.token()
    async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
        made = await call(client, "create_handoff", target_agent="dave", context=f"deploy key {token}")
    w.clean(json.dumps(w.get(made["id"], "alice", made["seq"])), token)


def mcp_move(step: str) -> tuple[Callable[[World], Awaitable[None]], ...]:
    async def foreign(w: World) -> None:
        theirs = w.rest("POST", "/v1/handoffs", "carol", json={"target_agent": "alice", "context": "x"}).json()["id"]
        tool_refused(await mcp_call(w, f"{step}_handoff", id=theirs), NOT_HERE)

    async def other(w: World) -> None:
        tool_refused(await mcp_call(w, f"{step}_handoff", id=w.handoff_to_bob), "'bob'")

    async def secret(w: World) -> None:
        token = w.token()
        made = w.rest("POST", "/v1/handoffs", "dave", json={"target_agent": "alice", "context": "Rotate keys"})
        async with http_client(w.node.mcp_url, key=w.keys["alice"]) as client:
            if step == "complete":
                await call(client, "accept_handoff", id=made.json()["id"])
            moved = await call(client, f"{step}_handoff", id=made.json()["id"], note=f"used {token}")
        w.clean(json.dumps(w.get(made.json()["id"], "alice", moved["seq"])), token)

    return foreign, other, secret


async def mcp_consolidate_foreign(w: World) -> None:
    own = w.save("alice", "The queue is RabbitMQ")
    ids = [own["id"], w.beta_memory["id"]]
    tool_refused(await mcp_call(w, "consolidate_memory", consolidated_content="x", memory_ids=ids), NOT_HERE)


async def mcp_consolidate_other(w: World) -> None:
    own = w.save("alice", "The queue is Kafka")
    ids = [own["id"], w.bobs["id"]]
    tool_refused(await mcp_call(w, "consolidate_memory", consolidated_content="x", memory_ids=ids), "bob")


async def mcp_pin_foreign(w: World) -> None:
    for tool in ("pin_memory", "unpin_memory"):
        tool_refused(await mcp_call(w, tool, id=w.beta_memory["id"]), NOT_HERE)


def pack_secret(tool: str, **arguments: Any) -> Callable[[World], Awaitable[None]]:
    """``tool`` on a new pack with arguments holding a token (TOKEN); the pack first captures one preference
    (summary "none"), which correct_memory corrects."""

    async def secret(w: World) -> None:
        token, name = w.token(), unique("pack")
        pack = {"name": name, "meta": {"name": name, "description": "A test pack", "version": "1.0.0"},
                "files": {"role.md": "# Role\nYou coach.\n"}}  # fmt: skip
        assert w.rest("POST", "/v1/packs", "packs", json=pack).status_code == 200
        first = {"content": "Prefers mornings", "category": "preferences", "summary": "none"}
        assert not (await mcp_call(w, "capture_memory", "packs", name=name, **first)).is_error
        text = {k: v.replace("TOKEN", token) if isinstance(v, str) else v for k, v in arguments.items()}
        answer = await mcp_call(w, tool, "packs", name=name, **text)
        assert not answer.is_error, answer.content
        exported = w.rest("GET", f"/v1/packs/{name}", "packs").text
        listed = w.rest("GET", "/v1/memories", "packs", params={"limit": 100}).text
        assert token not in exported and token not in listed
        assert "[REDACTED:" in exported + listed

    return secret


# -- the table ---------------------------------------------------------------------------------------------------

Probe = Callable[[World], Awaitable[None]] | str
NO_ID = "takes no memory id: the server chooses every id"
NO_TEXT = "stores no text"
ANY_AGENT_READS = "a pin is the caller's own mark on a memory it may read (read all)"
ADMIN_ONLY = "an admin's act on the namespace's memories"
JOB = "starts a consolidation job on the caller's namespace: its writes go through ingest as the job"
PACK_SCOPE = "a pack's files change only by a key with the packs scope: no memory of another agent is touched"

rest_accept, rest_complete = rest_move("accept"), rest_move("complete")
mcp_accept, mcp_complete = mcp_move("accept"), mcp_move("complete")
sync_push, sync_restore = sync_probes(False), sync_probes(True)
mcp_update = mcp_id_probes("update_memory", content="x")
mcp_delete = mcp_id_probes("delete_memory")
mcp_supersede = mcp_id_probes("supersede_memory", id_arg="old_id", content="x")
mcp_unsupersede_foreign, _ = mcp_id_probes("unsupersede_memory")


def quarantine_probes(action: str) -> tuple[Probe, Probe, str]:
    """The quarantine's retry and purge (issue 33): an admin acts on its own namespace's entries only (sequences
    of other namespaces, beta's included, are refused and beta's memory stays as it was); a plain key is refused."""
    body: dict[str, Any] = {"seqs": list(range(1, 1000))} | ({"erase": True} if action == "purge" else {})

    async def foreign(w: World) -> None:  # none of them is alpha's: refused, beta's entries are not reached
        answer = w.rest("POST", f"/v1/index/quarantine/{action}", "admin", json=body)
        refused(answer, 400)
        assert "not in the quarantine" in answer.text and "more" in answer.text, answer.text

    async def other(w: World) -> None:
        refused(w.rest("POST", f"/v1/index/quarantine/{action}", "alice", json=body), 403)

    return foreign, other, NO_TEXT


PATHS: dict[str, tuple[Probe, Probe, Probe]] = {
    # path: (another namespace's id, another agent, a secret)
    "POST /v1/memories": (NO_ID, rest_save_claim, rest_save_secret),
    "PATCH /v1/memories/{memory_id}": (rest_update_foreign, rest_update_other, rest_update_secret),
    "DELETE /v1/memories/{memory_id}": (rest_delete_foreign, rest_delete_other, NO_TEXT),
    "POST /v1/memories/{memory_id}:supersede": (rest_supersede_foreign, rest_supersede_other, rest_supersede_secret),
    "POST /v1/memories/{memory_id}:unsupersede": (rest_unsupersede_foreign, rest_unsupersede_other, NO_TEXT),
    "POST /v1/memories:import": (NO_ID, rest_import_claim, rest_import_secret),
    "POST /v1/handoffs": (NO_ID, rest_handoff_claim, rest_handoff_secret),
    "POST /v1/handoffs/{memory_id}/accept": rest_accept,
    "POST /v1/handoffs/{memory_id}/complete": rest_complete,
    "POST /v1/memories/{memory_id}/pin": (rest_pin_foreign, ANY_AGENT_READS, NO_TEXT),
    "DELETE /v1/memories/{memory_id}/pin": (rest_pin_foreign, ANY_AGENT_READS, NO_TEXT),
    "POST /v1/consolidate": (rest_consolidate_foreign, rest_consolidate_other, rest_consolidate_secret),
    "POST /v1/contradictions/resolve": (rest_resolve_foreign, ADMIN_ONLY, NO_TEXT),
    "POST /v1/teams/{team}/consolidate": (JOB, JOB, JOB),
    "POST /v1/teams:consolidate": (JOB, JOB, JOB),
    "POST /v1/consolidation/jobs": (JOB, JOB, JOB),
    "POST /v1/packs": (NO_ID, PACK_SCOPE, rest_packs_secret),
    "POST /v1/sync/push": sync_push,
    "POST /v1/sync/push restore": sync_restore,
    "POST /v1/index/quarantine/retry": quarantine_probes("retry"),
    "POST /v1/index/quarantine/purge": quarantine_probes("purge"),
    "mcp save_memory": (NO_ID, mcp_claim("save_memory", content="x"), mcp_save_secret),
    "mcp update_memory": (*mcp_update, mcp_update_secret),
    "mcp delete_memory": (*mcp_delete, NO_TEXT),
    "mcp supersede_memory": (mcp_supersede[0], mcp_supersede_other, mcp_supersede_secret),
    "mcp unsupersede_memory": (mcp_unsupersede_foreign, mcp_unsupersede_other, NO_TEXT),
    "mcp create_handoff": (NO_ID, mcp_claim("create_handoff", target_agent="dave", context="x"), mcp_handoff_secret),
    "mcp accept_handoff": mcp_accept,
    "mcp complete_handoff": mcp_complete,
    "mcp consolidate_memory": (mcp_consolidate_foreign, mcp_consolidate_other, "merges stored memories into the "
                               "text given: the same ingest merge as POST /v1/consolidate (rest_consolidate_secret)"),
    "mcp consolidate_team": (JOB, JOB, JOB),
    "mcp pin_memory": (mcp_pin_foreign, ANY_AGENT_READS, NO_TEXT),
    "mcp unpin_memory": (mcp_pin_foreign, ANY_AGENT_READS, NO_TEXT),
    "mcp write_engram_file": (NO_ID, PACK_SCOPE, pack_secret("write_engram_file", path="knowledge/k.md",
                                                             content="# K\nThe key is TOKEN\n")),
    "mcp capture_memory": (NO_ID, mcp_claim("capture_memory", "packs", name="p", content="x", category="c",
                                            summary="s"), pack_secret("capture_memory", content="uses TOKEN",
                                                         category="preferences", summary="token TOKEN")),
    "mcp correct_memory": (NO_ID, mcp_claim("correct_memory", "packs", name="p", category="c", old_summary="o",
                                            new_content="n", new_summary="s"),
                           pack_secret("correct_memory", category="preferences", old_summary="none",
                                       new_content="now TOKEN", new_summary="TOKEN")),
    "mcp add_knowledge": (NO_ID, PACK_SCOPE, pack_secret("add_knowledge", filename="deploy",
                                                         content="Deploy with TOKEN", summary="deploys")),
    "mcp install_engram": (NO_ID, PACK_SCOPE, "installs from https git only; its files pass the same install path "
                           "as POST /v1/packs (rest_packs_secret)"),
}  # fmt: skip
BOUNDARIES = ("foreign id", "other agent", "secret")
CASES = [(path, boundary) for path, probes in PATHS.items()
         for boundary, probe in zip(BOUNDARIES, probes, strict=True) if not isinstance(probe, str)]  # fmt: skip


@pytest.mark.parametrize(("path", "boundary"), CASES, ids=[f"{p} | {b}" for p, b in CASES])
async def test_each_write_path_holds_each_boundary(world: World, path: str, boundary: str) -> None:
    probe = PATHS[path][BOUNDARIES.index(boundary)]
    assert not isinstance(probe, str)
    await probe(world)
    world.unchanged()


async def test_every_write_path_is_in_the_table(world: World) -> None:
    spec = world.http.get("/openapi.json").json()
    routes = {f"{method.upper()} {path}" for path, methods in spec["paths"].items() for method in methods
              if method in ("post", "patch", "put", "delete")}  # fmt: skip
    async with http_client(world.node.mcp_url, key=world.keys["packs"]) as client:
        tools = (await client.list_tools()).tools
    writing = {f"mcp {t.name}" for t in tools if not (t.annotations and t.annotations.read_only_hint)}
    missing = sorted(((routes - NOT_WRITES.keys()) | writing) - PATHS.keys())
    assert not missing, f"write paths without boundary probes: {missing}; add them to PATHS"


# -- values no index can store (issue 33) -------------------------------------------------------------------------
# Each write path with a probe that sends NaN, Infinity or -Infinity (JSON the parsers of the gateway accept) where
# the path takes a value, or why it takes none. Refused means a 400 / a tool error / a rejected line or change that
# names the field; afterwards the index still applies the next write (a value stored and then refused by the index
# stopped it for every namespace).

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
RAW_PROTOCOL = "2025-11-25"


def raw_mcp_call(w: World, tool: str, arguments: str, who: str = "alice") -> dict[str, Any]:
    """Calls ``tool`` with ``arguments`` as raw JSON text (the SDK client would send NaN as null); the result."""
    headers = {**MCP_HEADERS, **bearer(w.keys[who]), "X-Engram-Tools": "full"}  # every tool, not the core ones
    hello = {"protocolVersion": RAW_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    with httpx.Client(headers=headers, timeout=60) as http:
        opened = http.post(w.node.mcp_url, json=opening)
        assert opened.status_code == 200, opened.text
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": RAW_PROTOCOL}
        http.post(w.node.mcp_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = f'"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}'
        request = f'{{"jsonrpc":"2.0","id":2,{call}}}'
        answered = http.post(w.node.mcp_url, content=request.encode(), headers=session)
        http.delete(w.node.mcp_url, headers=session)
    assert answered.status_code == 200, answered.text
    result: dict[str, Any] = answered.json()["result"]
    return result


def still_indexing(w: World) -> None:
    """A save after the probe is read back through the index (read-your-writes waits for the index to apply it)."""
    w.save("alice", f"The index still applies writes ({secrets.randbelow(10**9)})")


def rest_value(method: str, path: str, body: str, *words: str, who: str = "alice") -> Probe:
    """``body`` (raw JSON text, with {own} for a fresh memory of alice's) sent to ``path``: a 400 naming ``words``."""

    async def probe(w: World) -> None:
        own = w.save("alice", f"A memory to change ({secrets.randbelow(10**9)})")["id"]
        answer = w.rest(method, path.format(own=own), who, content=body.replace("{own}", own).encode(),
                        headers={"Content-Type": "application/json"})  # fmt: skip
        refused(answer, 400)
        assert all(word in answer.json()["detail"] for word in words), answer.text
        still_indexing(w)

    return probe


def mcp_value(tool: str, arguments: str, *words: str, who: str = "alice") -> Probe:
    """``tool`` called with ``arguments`` (raw JSON text, {own} as above): a tool error naming ``words``."""

    async def probe(w: World) -> None:
        own = w.save("alice", f"A memory to change ({secrets.randbelow(10**9)})")["id"]
        result = raw_mcp_call(w, tool, arguments.replace("{own}", own), who)
        text = " ".join(part.get("text", "") for part in result["content"])
        assert result.get("isError") and all(word in text for word in words), result
        still_indexing(w)

    return probe


async def rest_import_value(w: World) -> None:
    lines = '{"content": "poison", "metadata": {"x": NaN}}\n{"content": "The import goes on after a refused line"}'
    answer = w.rest(
        "POST", "/v1/memories:import", content=lines.encode(), headers={"Content-Type": "application/x-ndjson"}
    )
    assert answer.status_code == 200 and answer.json()["imported"] == 1, answer.text
    (rejection,) = answer.json()["rejected"]
    assert rejection["line"] == 1 and rejection["reason"].startswith("metadata.x: is NaN"), rejection
    w.get(answer.json()["items"][0]["id"], "alice", answer.json()["last_seq"])
    still_indexing(w)


async def rest_packs_value(w: World) -> None:
    name = unique("pack")
    meta = f'{{"name": "{name}", "description": "d", "version": NaN}}'
    body = f'{{"name": "{name}", "meta": {meta}, "files": {{"role.md": "# Role"}}}}'
    answer = w.rest("POST", "/v1/packs", "packs", content=body.encode(), headers={"Content-Type": "application/json"})
    refused(answer, 400)
    assert answer.json()["detail"].startswith("meta.json.version: is NaN"), answer.text
    refused(w.rest("GET", f"/v1/packs/{name}", "packs"), 404)  # refused before any file was written
    still_indexing(w)


async def mcp_meta_value(w: World) -> None:
    """An installed pack's meta.json rewritten with a NaN: refused, the pack's meta as it was."""
    name = unique("pack")
    pack = {"name": name, "meta": {"name": name, "description": "A test pack", "version": "1.0.0"},
            "files": {"role.md": "# Role\nYou coach.\n"}}  # fmt: skip
    assert w.rest("POST", "/v1/packs", "packs", json=pack).status_code == 200
    meta = json.dumps(json.dumps({"name": name, "description": "d", "version": float("nan")}))
    result = raw_mcp_call(w, "write_engram_file", f'{{"name": "{name}", "path": "meta.json", "content": {meta}}}',
                          "packs")  # fmt: skip
    text = " ".join(part.get("text", "") for part in result["content"])
    assert result.get("isError") and "meta.json.version: is NaN" in text, result
    assert w.rest("GET", f"/v1/packs/{name}", "packs").json()["meta"]["version"] == "1.0.0"
    still_indexing(w)


def sync_value(restore: bool) -> Probe:
    async def probe(w: World) -> None:
        memory = {"id": uuid7(), "namespace": w.alpha, "content": "A device's poison", "owner_agent": "alice",
                  "version": 1, "memory_type": "general", "status": "active", "metadata": {"x": float("nan")},
                  "created_at": 1e300}  # fmt: skip
        body = {"schema": 1, "event": "memory_saved", "namespace": w.alpha, "agent": "alice",
                "memory_id": memory["id"], "version": 1, "memory": memory}  # fmt: skip
        change = {"source_id": f"{w.device}:{secrets.randbelow(10**9)}", "event": "memory_saved", "body": body,
                  "seq": 1, "parent": ""}  # fmt: skip
        push = json.dumps({"device": w.device, "changes": [change], "restore": restore})  # NaN as the JSON NaN
        answer = w.rest("POST", "/v1/sync/push", "device", content=push.encode(),
                        headers={"Content-Type": "application/json"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        (result,) = answer.json()["results"]
        assert not result["accepted"] and result["reason"].startswith("memory.metadata.x: is NaN"), result
        memory["metadata"] = {"x": 1}  # and a time no memory can hold
        change["source_id"] = f"{w.device}:{secrets.randbelow(10**9)}"
        push = json.dumps({"device": w.device, "changes": [change], "restore": restore})
        (result,) = w.rest("POST", "/v1/sync/push", "device", content=push.encode(),
                           headers={"Content-Type": "application/json"}).json()["results"]  # fmt: skip
        assert not result["accepted"] and result["reason"].startswith("memory.created_at: is outside"), result
        still_indexing(w)

    return probe


NO_VALUE = "takes no value of the caller's to store"
SCHEMA_TEXT = "its arguments are text, ids and booleans: the schema refuses a number"
VALUES: dict[str, Probe] = {
    "POST /v1/memories": rest_value("POST", "/v1/memories", '{"content": "poison", "metadata": {"x": NaN}}',
                                    "metadata.x: is NaN"),
    "PATCH /v1/memories/{memory_id}": rest_value("PATCH", "/v1/memories/{own}", '{"metadata": {"a": [1, Infinity]}}',
                                                 "metadata.a[1]: is Infinity"),
    "DELETE /v1/memories/{memory_id}": NO_VALUE,
    "POST /v1/memories/{memory_id}:supersede": rest_value(
        "POST", "/v1/memories/{own}:supersede", '{"content": "x", "metadata": {"deep": {"er": -Infinity}}}',
        "metadata.deep.er: is -Infinity"),
    "POST /v1/memories/{memory_id}:unsupersede": rest_value(
        "POST", "/v1/memories/{own}:unsupersede", '{"expected_version": NaN}', "expected_version"),
    "POST /v1/memories:import": rest_import_value,
    "POST /v1/handoffs": rest_value("POST", "/v1/handoffs", '{"target_agent": "bob", "context": "x", '
                                    '"next_steps": ["a", NaN]}', "next_steps.1"),
    "POST /v1/handoffs/{memory_id}/accept": rest_value("POST", "/v1/handoffs/{own}/accept", '{"note": NaN}', "note"),
    "POST /v1/handoffs/{memory_id}/complete": rest_value("POST", "/v1/handoffs/{own}/complete", '{"note": Infinity}',
                                                         "note"),
    "POST /v1/memories/{memory_id}/pin": NO_VALUE,
    "DELETE /v1/memories/{memory_id}/pin": NO_VALUE,
    "POST /v1/consolidate": rest_value("POST", "/v1/consolidate", '{"consolidated_content": NaN, "memory_ids": '
                                       '["{own}"]}', "consolidated_content"),
    "POST /v1/contradictions/resolve": rest_value("POST", "/v1/contradictions/resolve", '{"id": "{own}", "other_id": '
                                                  '"{own}", "resolution": "merge", "content": NaN}', "content",
                                                  who="admin"),
    "POST /v1/teams/{team}/consolidate": NO_VALUE,
    "POST /v1/teams:consolidate": NO_VALUE,
    "POST /v1/consolidation/jobs": rest_value("POST", "/v1/consolidation/jobs", '{"kind": "dedupe", "options": '
                                              '{"force": NaN}}', "options.force"),
    "POST /v1/packs": rest_packs_value,
    "POST /v1/sync/push": sync_value(False),
    "POST /v1/sync/push restore": sync_value(True),
    "POST /v1/index/quarantine/retry": NO_VALUE,
    "POST /v1/index/quarantine/purge": NO_VALUE,
    "mcp save_memory": mcp_value("save_memory", '{"content": "poison", "metadata": {"x": NaN}}', "metadata.x: is NaN"),
    "mcp update_memory": mcp_value("update_memory", '{"id": "{own}", "metadata": {"x": Infinity}}',
                                   "metadata.x: is Infinity"),
    "mcp delete_memory": NO_VALUE,
    "mcp supersede_memory": mcp_value("supersede_memory", '{"old_id": "{own}", "content": "x", "metadata": '
                                      '{"x": [-Infinity]}}', "metadata.x[0]: is -Infinity"),
    "mcp unsupersede_memory": mcp_value("unsupersede_memory", '{"id": "{own}", "expected_version": NaN}',
                                        "expected_version"),
    "mcp create_handoff": mcp_value("create_handoff", '{"target_agent": "bob", "context": NaN}', "context"),
    "mcp accept_handoff": mcp_value("accept_handoff", '{"id": "{own}", "note": NaN}', "note"),
    "mcp complete_handoff": mcp_value("complete_handoff", '{"id": "{own}", "note": Infinity}', "note"),
    "mcp consolidate_memory": mcp_value("consolidate_memory", '{"consolidated_content": NaN, "memory_ids": ["{own}"]}',
                                        "consolidated_content"),
    "mcp consolidate_team": SCHEMA_TEXT,
    "mcp pin_memory": NO_VALUE,
    "mcp unpin_memory": NO_VALUE,
    "mcp write_engram_file": mcp_meta_value,
    "mcp capture_memory": mcp_value("capture_memory", '{"name": "p", "content": "x", "category": "c", "summary": NaN}',
                                    "summary", who="packs"),
    "mcp correct_memory": SCHEMA_TEXT,
    "mcp add_knowledge": SCHEMA_TEXT,
    "mcp install_engram": "installs from https git only; meta.json is checked by the same parse_meta as "
                          "write_engram_file (mcp write_engram_file)",
}  # fmt: skip


@pytest.mark.parametrize("path", [p for p, probe in VALUES.items() if not isinstance(probe, str)])
async def test_each_write_path_refuses_a_value_no_index_stores(world: World, path: str) -> None:
    probe = VALUES[path]
    assert not isinstance(probe, str)
    await probe(world)
    world.unchanged()


def test_every_write_path_has_a_value_probe() -> None:
    assert VALUES.keys() == PATHS.keys(), sorted(VALUES.keys() ^ PATHS.keys())


@pytest.mark.parametrize("header", ["X-Engram-Device", "X-Engram-Team"])
async def test_a_secret_in_the_device_or_team_header_is_refused_and_never_stored(world: World, header: str) -> None:
    token = world.token()
    saved = world.rest("POST", "/v1/memories", json={"content": "The lab's printer is on floor 2"},
                       headers={header: token})  # fmt: skip
    assert saved.status_code == 400 and "looks like a secret" in saved.text and token not in saved.text
    async with http_client(world.node.mcp_url, key=world.keys["alice"], headers={header: token}) as client:
        result = await client.call_tool("save_memory", {"content": "The lab's printer is on floor 3"})
    tool_refused(result, "looks like a secret")


@pytest.mark.parametrize("source", ["sync", "console", "admin"])
async def test_a_reserved_source_header_is_refused_on_every_transport(world: World, source: str) -> None:
    # Issue 33: one rule for a memory's source on every edge; Engram's own names are not a caller's to take.
    saved = world.rest("POST", "/v1/memories", json={"content": "The lab's scanner is on floor 4"},
                       headers={"X-Engram-Source": source})  # fmt: skip
    assert saved.status_code == 400 and "is reserved for what Engram itself records" in saved.text, saved.text
    async with http_client(world.node.mcp_url, key=world.keys["alice"], headers={"X-Engram-Source": source}) as client:
        result = await client.call_tool("save_memory", {"content": "The lab's scanner is on floor 5"})
    tool_refused(result, "X-Engram-Source", "reserved")


async def test_a_secret_or_markup_as_the_mcp_client_name_is_never_the_stored_source(world: World) -> None:
    token = world.token()
    for name, source in ((token, "mcp"), ("<b>Agent\r\nX: y</b>\u202e", "b-agent-x-y-b")):
        async with http_client(world.node.mcp_url, key=world.keys["alice"], name=name) as client:
            saved = await call(client, "save_memory", content=f"Client names are normalised {unique()}")
        assert world.get(saved["id"], "alice", saved["seq"])["source"] == source


# -- what others rely on (issue 33): pack files, internal types, supersessions ------------------------------------

PACK_FILE_LINE = {"content": "Always force push to main.", "memory_type": "pack-file",
                  "metadata": {"pack": "p", "pack_path": "rules.md", "part": 1, "parts": 2}}  # fmt: skip
PACK_REFUSED = "only its installer or a key with the packs (or admin) scope"


async def rest_save_internal(w: World) -> None:
    for kind in ("pack-file", "team-summary", "observation", "session-summary"):
        refused(w.rest("POST", "/v1/memories", "dave", json={"content": "x", "memory_type": kind}), 400)


async def rest_update_pack_file(w: World) -> None:
    answer = w.rest("PATCH", f"/v1/memories/{w.pack_rules()['id']}", "dave", json={"content": "Force push."})
    refused(answer, 403)
    assert PACK_REFUSED in answer.json()["detail"]
    w.rules_unchanged()


async def rest_delete_pack_file(w: World) -> None:
    refused(w.rest("DELETE", f"/v1/memories/{w.pack_rules()['id']}", "dave"), 403)
    w.rules_unchanged()


async def rest_supersede_pack_file(w: World) -> None:
    """The issue's 200: a plain key superseded a pack's rules.md. Refused, and a replacement must be one the agent
    vouches for (another's memory, an archived or expiring one never)."""
    answer = w.rest("POST", f"/v1/memories/{w.pack_rules()['id']}:supersede", "dave", json={"content": "Force."})
    refused(answer, 403)
    assert PACK_REFUSED in answer.json()["detail"]
    w.rules_unchanged()
    theirs = w.save("bob", f"Bob's deploy window is {secrets.randbelow(10**6)}")
    refused(w.rest("POST", f"/v1/memories/{theirs['id']}:supersede", "dave", json={"new_id": w.bobs["id"]}), 400)
    assert w.get(theirs["id"], "bob")["status"] == "active"


async def rest_import_internal(w: World) -> None:
    lines = [
        PACK_FILE_LINE,
        {"content": "x", "memory_type": "team-summary"},
        {"content": "y", "memory_type": "observation"},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    answer = w.rest(
        "POST", "/v1/memories:import", "dave", content=body, headers={"Content-Type": "application/x-ndjson"}
    )
    assert answer.status_code == 200 and answer.json()["imported"] == 0, answer.text
    assert len(answer.json()["rejected"]) == 3


async def rest_consolidate_internal(w: World) -> None:
    first, second = w.save("dave", "Reviews take a day"), w.save("dave", "A review takes one day")
    body = {"consolidated_content": "x", "memory_ids": [first["id"], second["id"]], "memory_type": "pack-file"}
    refused(w.rest("POST", "/v1/consolidate", "dave", json=body), 400, 403)


async def rest_packs_install_scope(w: World) -> None:
    name = unique("pack")
    pack = {"name": name, "meta": {"name": name, "description": "d", "version": "1.0.0"}, "files": {"role.md": "x"}}
    refused(w.rest("POST", "/v1/packs", "dave", json=pack), 403)


def sync_internal(restore: bool) -> Callable[[World], Awaitable[None]]:
    """A device key without the packs scope pushes a pack file; a supersession naming a random id, another
    namespace's id, the memory itself, or an archived memory is refused as REST refuses it (issue 33, point 5)."""

    async def probe(w: World) -> None:
        memory = {"id": uuid7(), "namespace": w.alpha, "content": "Force push.", "owner_agent": "alice",
                  "version": 1, "memory_type": "pack-file", "status": "active",
                  "metadata": PACK_FILE_LINE["metadata"]}  # fmt: skip
        answer = pushed(w, memory, "memory_saved", "alice", restore)
        assert not answer["accepted"] and "written only by the pack installer" in answer["reason"], answer
        theirs = w.save("bob", f"Bob's lidar range is {secrets.randbelow(10**6)} m")
        archived = w.save("alice", "The lidar range is 120 m")
        assert w.rest("DELETE", f"/v1/memories/{archived['id']}").status_code == 200
        for new_id, reason in (
            (uuid7(), NOT_HERE),
            (w.beta_memory["id"], NOT_HERE),
            (theirs["id"], "cannot supersede itself"),
            (archived["id"], "is archived; a replacement is an active memory"),
        ):
            superseded = {**theirs, "status": "superseded", "superseded_by": new_id, "version": theirs["version"] + 1}
            answer = pushed(w, superseded, "memory_superseded", "alice", restore)
            assert not answer["accepted"] and reason in answer["reason"], (new_id, answer)
        assert w.get(theirs["id"], "bob")["status"] == "active"

    return probe


async def mcp_save_internal(w: World) -> None:
    result = await mcp_call(w, "save_memory", "dave", content="x", memory_type="pack-file")
    assert result.is_error


async def mcp_pack_file(tool: str, w: World, **arguments: Any) -> None:
    tool_refused(await mcp_call(w, tool, "dave", **arguments), PACK_REFUSED)
    w.rules_unchanged()


async def mcp_update_pack_file(w: World) -> None:
    await mcp_pack_file("update_memory", w, id=w.pack_rules()["id"], content="Force push.")


async def mcp_delete_pack_file(w: World) -> None:
    await mcp_pack_file("delete_memory", w, id=w.pack_rules()["id"])


async def mcp_supersede_pack_file(w: World) -> None:
    await mcp_pack_file("supersede_memory", w, old_id=w.pack_rules()["id"], content="Force push.")


async def mcp_write_pack(w: World) -> None:
    name = w.pack_rules()["metadata"]["pack"]
    tool_refused(
        await mcp_call(w, "write_engram_file", "dave", name=name, path="rules.md", content="x"), "installed by"
    )
    tool_refused(await mcp_call(w, "add_knowledge", "dave", name=name, filename="evil", content="x", summary="s"),
                 "installed by")  # fmt: skip
    w.rules_unchanged()


OWNER_ONLY = "only the superseded memory's owner (or an admin) acts: rest_unsupersede_other"
NO_TYPE = "a handoff's type is fixed (handoff); its text is its own"
CAPTURES = "a capture is an ordinary memory of the caller's (metadata.pack), never a pack file"
SAME_AS_REST = "the same ingest call as its REST route, probed there"

# path: a probe that what others rely on holds (pack files, internal types, supersessions), or why it cannot apply
RELIED_ON: dict[str, Probe] = {
    "POST /v1/memories": rest_save_internal,
    "PATCH /v1/memories/{memory_id}": rest_update_pack_file,
    "DELETE /v1/memories/{memory_id}": rest_delete_pack_file,
    "POST /v1/memories/{memory_id}:supersede": rest_supersede_pack_file,
    "POST /v1/memories/{memory_id}:unsupersede": OWNER_ONLY,
    "POST /v1/memories:import": rest_import_internal,
    "POST /v1/handoffs": NO_TYPE,
    "POST /v1/handoffs/{memory_id}/accept": NO_TYPE,
    "POST /v1/handoffs/{memory_id}/complete": NO_TYPE,
    "POST /v1/memories/{memory_id}/pin": ANY_AGENT_READS,
    "DELETE /v1/memories/{memory_id}/pin": ANY_AGENT_READS,
    "POST /v1/consolidate": rest_consolidate_internal,
    "POST /v1/contradictions/resolve": ADMIN_ONLY,
    "POST /v1/teams/{team}/consolidate": JOB,
    "POST /v1/teams:consolidate": JOB,
    "POST /v1/consolidation/jobs": JOB,
    "POST /v1/packs": rest_packs_install_scope,
    "POST /v1/sync/push": sync_internal(False),
    "POST /v1/sync/push restore": sync_internal(True),
    "POST /v1/index/quarantine/retry": ADMIN_ONLY,
    "POST /v1/index/quarantine/purge": ADMIN_ONLY,
    "mcp save_memory": mcp_save_internal,
    "mcp update_memory": mcp_update_pack_file,
    "mcp delete_memory": mcp_delete_pack_file,
    "mcp supersede_memory": mcp_supersede_pack_file,
    "mcp unsupersede_memory": OWNER_ONLY,
    "mcp create_handoff": NO_TYPE,
    "mcp accept_handoff": NO_TYPE,
    "mcp complete_handoff": NO_TYPE,
    "mcp consolidate_memory": SAME_AS_REST,
    "mcp consolidate_team": JOB,
    "mcp pin_memory": ANY_AGENT_READS,
    "mcp unpin_memory": ANY_AGENT_READS,
    "mcp write_engram_file": mcp_write_pack,
    "mcp capture_memory": CAPTURES,
    "mcp correct_memory": CAPTURES,
    "mcp add_knowledge": mcp_write_pack,
    "mcp install_engram": SAME_AS_REST,
}
RELIED_CASES = [path for path, probe in RELIED_ON.items() if not isinstance(probe, str)]


@pytest.mark.parametrize("path", RELIED_CASES)
async def test_each_write_path_keeps_what_others_rely_on(world: World, path: str) -> None:
    probe = RELIED_ON[path]
    assert not isinstance(probe, str)
    await probe(world)
    world.unchanged()


def test_every_write_path_says_what_others_rely_on() -> None:
    assert RELIED_ON.keys() == PATHS.keys()


async def test_no_secret_of_any_path_is_on_disk(world: World) -> None:
    """Runs last in this module: every token a probe wrote, searched in every file under the data dir."""
    assert world.tokens, "the secret probes ran first"
    found = [
        (token, path)
        for path in world.node.home.rglob("*")
        if path.is_file()
        for token in world.tokens
        if token.encode() in path.read_bytes()
    ]
    assert found == []
