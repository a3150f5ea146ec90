"""A property of every write path (issue 33): a payload is refused at the edge or applied by both index adapters,
never accepted and then unindexable.

Seeded random payloads (numbers at their limits, unicode with lone surrogates, NUL, RTL marks and emoji, nesting to
and beyond the depth limit, in every field of a memory) go through REST save, MCP save_memory (raw JSON-RPC: the SDK
client would send NaN as null), REST import, sync push and update on a real node. Each answer is a refusal (4xx, a
tool error, a rejected line or change) or an acceptance whose memory the node's index (Qdrant Edge) serves back with
read-your-writes; never a 5xx. Then the node's log is replayed into a fresh Qdrant Edge index and the Qdrant server
adapter (qdrant-client's local mode, with a check that every payload is one a server's JSON API carries): both
apply every entry. ENGRAM_FUZZ_EXAMPLES sets the payloads per path; ENGRAM_FUZZ_RANDOM=1 draws a new seed.

Beside it: numbers at their limits served back as given by every answer (REST, MCP), and `engram import` of a
vault or of JSON lines rejecting the one entry that holds a NaN."""

from __future__ import annotations

import base64
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from qdrant_client import QdrantClient

from engram.embed.embedder import PACKAGE_MODEL_DIM
from engram.ids import uuid7
from engram.index import MemoryIndex
from engram.index.qdrant_edge import EdgeIndex
from engram.index.qdrant_server import QdrantServerIndex
from engram.log.nats import NatsLog
from engram.model import MAX_METADATA_DEPTH, parse_time
from engram.services.search.indexer import Indexer
from tests.conftest import NodeHandle, engram_env, start_node
from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "20"))
SEED = random.SystemRandom().randrange(2**32) if os.environ.get("ENGRAM_FUZZ_RANDOM", "") == "1" else 33
NAMESPACE = "default"  # the dev-mode node's namespace for anonymous callers
DEVICE = "fuzz-device"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PROTOCOL = "2025-11-25"
INT64 = (-(2**63), 2**63 - 1)

NUMBERS: tuple[Any, ...] = (
    math.nan, math.inf, -math.inf, 0, 0.0, -0.0, 1, -1, 1.5, 1e308, -1e308, 1.7976931348623157e308, 5e-324,
    -5e-324, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64, 10**40, -(10**40), True, False, None,
)  # fmt: skip
TEXTS: tuple[str, ...] = (
    "", "plain", "NUL \x00 inside", "\x00", "RTL \u202e mark \u202c", "\u200f", "emoji 😀🧪", "lone \ud800",
    "\udfff", "\ud83d\ude00", "e\u0301", "記憶", "tab\tline\nbreak", "x" * 300, "<b>markup</b>", "\ufeffBOM",
    "\u0085\u2028\u2029", "\U0010ffff",
)  # fmt: skip
TIMES: tuple[Any, ...] = (
    "2026-01-31T12:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-01-31t12:00:00.123456+05:30",
    "0000-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", "30d", "2w", "", "not a time", 0, 1e300, math.nan, -math.inf,
)  # fmt: skip
TYPES = ("fact", "preference", "decision", "finding", "general", "Action_Item", "nonsense", "pack-file", "")


def storable(item: Any) -> bool:
    if isinstance(item, float):
        return math.isfinite(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return INT64[0] <= item <= INT64[1]
    return not (isinstance(item, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in item))


@dataclass(frozen=True)
class Pools:
    """What values are drawn from: every edge case (wild), or only those a save may hold (tame: all at their
    limits, which must then be accepted and indexed)."""

    wild: bool
    numbers: tuple[Any, ...]
    texts: tuple[str, ...]
    times: tuple[Any, ...]
    types: tuple[str, ...]
    deepest: int  # metadata is nested up to this depth


WILD = Pools(True, NUMBERS, TEXTS, TIMES, TYPES, 40)
TAME = Pools(
    False,
    tuple(n for n in NUMBERS if storable(n)),
    tuple(t for t in TEXTS if storable(t)),
    (*TIMES[:4], "30d", "2w"),  # durations: only expires_at takes them (a device sends no durations)
    TYPES[:6],
    MAX_METADATA_DEPTH,
)


def value(rng: random.Random, pools: Pools, depth: int = 0) -> Any:
    """A JSON-like value: a number or a text at its limits, or a list or object of them."""
    roll = rng.random()
    if roll < 0.35 or depth > 3:
        return rng.choice(pools.numbers)
    if roll < 0.7:
        return rng.choice(pools.texts)
    if roll < 0.8:
        return [value(rng, pools, depth + 1) for _ in range(rng.randrange(4))]
    if roll < 0.9:
        return {key(rng, pools): value(rng, pools, depth + 1) for _ in range(rng.randrange(4))}
    nested: Any = rng.choice((*pools.numbers, *pools.texts))  # to (and, wild, beyond) the depth limit
    levels = (MAX_METADATA_DEPTH - 3, MAX_METADATA_DEPTH - 2, MAX_METADATA_DEPTH - 1, MAX_METADATA_DEPTH + 1, 40)
    for level in range(rng.choice([n for n in levels if n < pools.deepest])):
        nested = [nested] if level % 2 else {"k": nested}
    return nested


def key(rng: random.Random, pools: Pools) -> str:
    return rng.choice((f"k{rng.randrange(100)}", rng.choice(pools.texts), "a.b", "x" * 80))


def text_field(rng: random.Random, pools: Pools) -> Any:
    """Mostly text (an edge case inside a sentence, or alone); when wild, sometimes any value."""
    roll = rng.random()
    if roll < 0.6:
        return f"Fact {rng.randrange(10**9)} {rng.choice(pools.texts)}"
    return rng.choice(pools.texts) if roll < 0.85 or not pools.wild else value(rng, pools)


def label(rng: random.Random, pools: Pools) -> Any:
    return rng.choice(pools.texts)[:60] if not pools.wild or rng.random() < 0.8 else text_field(rng, pools)


def save_fields(rng: random.Random, pools: Pools, *, content: bool = True) -> dict[str, Any]:
    """The fields of a save (REST, MCP, an import line), each given or not; content always when ``content``."""
    fields: dict[str, Any] = {}
    if content:
        fields["content"] = f"Fuzzed memory {rng.randrange(10**12)}: {text_field(rng, pools)}"
    wild = pools.wild
    choices: dict[str, Callable[[], Any]] = {
        "metadata": lambda: {key(rng, pools): value(rng, pools) for _ in range(rng.randrange(1, 5))},
        "summary": lambda: text_field(rng, pools),
        "tags": lambda: [label(rng, pools) for _ in range(rng.randrange(3))],
        "topics": lambda: [label(rng, pools) for _ in range(rng.randrange(3))],
        "team": lambda: label(rng, pools),
        "project": lambda: text_field(rng, pools),
        "conversation_id": lambda: text_field(rng, pools),
        "memory_type": lambda: rng.choice(pools.types),
        "importance": lambda: rng.choice(("low", "normal", "high", "critical") + (("urgent", 3) if wild else ())),
        "confidence": lambda: rng.choice(("stated", "inferred") + ((math.nan,) if wild else ())),
        "sensitivity": lambda: rng.choice(("normal", "private") + (("nope",) if wild else ())),
        "valid_at": lambda: rng.choice(pools.times[:4] if not wild else pools.times),
        "invalid_at": lambda: rng.choice(pools.times[:4] if not wild else pools.times),
        "expires_at": lambda: rng.choice(pools.times),
        "context": lambda: text_field(rng, pools),
    }
    for name in rng.sample(sorted(choices), rng.randrange(1, 6)):
        fields[name] = choices[name]()
    if not wild and "valid_at" in fields and "invalid_at" in fields:
        fields["valid_at"], fields["invalid_at"] = sorted((fields["valid_at"], fields["invalid_at"]), key=_moment)
    if "metadata" not in fields and rng.random() < 0.7:
        fields["metadata"] = {key(rng, pools): value(rng, pools)}
    return fields


def _moment(text: str) -> float:
    return parse_time(text) or 0.0


def raw(body: Any) -> bytes:
    """JSON text as a careless client writes it: NaN and Infinity as literals, lone surrogates as \\u escapes."""
    return json.dumps(body, ensure_ascii=True, allow_nan=True).encode()


@dataclass
class Tally:
    """What the node answered, per path; the memories it accepted (id, seq)."""

    outcomes: Counter[str] = field(default_factory=Counter)
    accepted: list[tuple[str, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def refused(self, path: str, status: int, text: str, body: Any) -> None:
        self.outcomes[f"{path} refused"] += 1
        if status >= 500 or not text.strip():
            self.failures.append(f"{path}: {status} {text[:300]!r} for {body!r:.600}")

    def took(self, path: str, memory_id: str, seq: int) -> None:
        self.outcomes[f"{path} accepted"] += 1
        self.accepted.append((memory_id, seq))


@dataclass
class Fuzz:
    node: NodeHandle
    http: httpx.Client
    rng: random.Random
    tally: Tally
    vectors: dict[str, Any] = field(default_factory=dict)  # an entry's vectors, as a device pulls them
    vector_cases: int = 0  # the device vectors sent so far: each kind in turn

    def served(self, path: str, memory_id: str, seq: int, body: Any, sent: dict[str, Any] | None = None) -> None:
        """An accepted memory is read back through the index; its metadata as sent when nothing was redacted."""
        got = self.http.get(f"/v1/memories/{memory_id}", params={"min_seq": seq})
        if got.status_code != 200:
            self.tally.failures.append(f"{path}: accepted {memory_id} (seq {seq}) but {got.status_code} "
                                       f"{got.text[:300]} for {body!r:.600}")  # fmt: skip
            return
        if sent is not None and "metadata" in sent and got.json()["metadata"] != sent["metadata"]:
            self.tally.failures.append(f"{path}: metadata {sent['metadata']!r:.300} came back as "
                                       f"{got.json()['metadata']!r:.300}")  # fmt: skip
        self.tally.took(path, memory_id, seq)

    def rest_save(self) -> None:
        body = save_fields(self.rng, self.pools())
        answer = self.http.post("/v1/memories", content=raw(body), headers={"Content-Type": "application/json"})
        if answer.status_code >= 300:
            return self.tally.refused("rest save", answer.status_code, answer.text, body)
        saved = answer.json()
        as_sent = body if not saved["redactions"] and not saved.get("duplicate_of") else None
        self.served("rest save", saved["id"], saved["seq"], body, as_sent)

    def mcp_save(self) -> None:
        body = save_fields(self.rng, self.pools())
        result = self._mcp("save_memory", body)
        if result is None or result.get("isError"):
            text = json.dumps(result)
            return self.tally.refused("mcp save_memory", 400 if result else 500, text, body)
        saved = result["structuredContent"]
        self.served("mcp save_memory", saved["id"], saved["seq"], body)

    def rest_import(self) -> None:
        lines = [save_fields(self.rng, self.pools()) for _ in range(self.rng.randrange(1, 4))]
        data = b"\n".join(raw(line) for line in lines)
        answer = self.http.post("/v1/memories:import", content=data, headers={"Content-Type": "application/x-ndjson"})
        if answer.status_code >= 300:
            return self.tally.refused("rest import", answer.status_code, answer.text, lines)
        result = answer.json()
        for rejection in result["rejected"]:
            self.tally.refused("rest import line", 400, rejection["reason"], lines[rejection["line"] - 1])
        for item in result["items"]:
            self.served("rest import line", item["id"], result["last_seq"], lines[item["line"] - 1])

    def sync_push(self) -> None:
        with_vectors = self.rng.random() < 0.5  # of a memory the cluster takes, so that they are looked at
        memory = self._device_memory(TAME if with_vectors else self.pools())
        body = {"schema": 1, "event": "memory_saved", "namespace": NAMESPACE, "agent": "anonymous",
                "memory_id": memory["id"], "version": memory.get("version", 1), "memory": memory}  # fmt: skip
        if with_vectors:
            body["vectors"] = self._device_vectors()
        change = {"source_id": f"{DEVICE}:{self.rng.randrange(10**12)}", "event": "memory_saved", "body": body,
                  "seq": 1, "parent": ""}  # fmt: skip
        push = {"device": DEVICE, "changes": [change], "restore": self.rng.random() < 0.3}
        answer = self.http.post("/v1/sync/push", content=raw(push), headers={"Content-Type": "application/json"})
        if answer.status_code >= 300:
            return self.tally.refused("sync push", answer.status_code, answer.text, memory)
        (result,) = answer.json()["results"]
        if not result["accepted"]:
            return self.tally.refused("sync push", 400, result["reason"], memory)
        self.served("sync push", memory["id"], result["seq"], memory)

    def update(self) -> None:
        base = self.http.post("/v1/memories", json={"content": f"To be updated {self.rng.randrange(10**12)}"})
        assert base.status_code == 201, base.text
        changes = save_fields(self.rng, self.pools(), content=self.rng.random() < 0.4)
        changes.pop("memory_type", None)  # fixed once saved: refused by the schema, tried enough by the others
        answer = self.http.patch(f"/v1/memories/{base.json()['id']}", content=raw(changes),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
        if answer.status_code >= 300:
            return self.tally.refused("update", answer.status_code, answer.text, changes)
        self.served("update", base.json()["id"], answer.json()["seq"], changes)

    def pools(self) -> Pools:
        """Half the payloads hold every edge case, half only what a memory may hold (those must be indexed)."""
        return WILD if self.rng.random() < 0.5 else TAME

    def _device_vectors(self) -> dict[str, Any]:
        """Vectors made with the cluster's models (so the cluster keeps them when it can), some the index refuses:
        a NaN, a wrong width, a sparse index beyond u32, repeated, or without its value."""
        if not self.vectors:
            pulled = self.http.get("/v1/sync/pull", params={"device": DEVICE, "cursor": 0, "limit": 1}).json()
            self.vectors = pulled["changes"][0]["body"]["vectors"]
        dense = np.frombuffer(base64.b64decode(self.vectors["dense"]), dtype="<f4").copy()
        sparse: dict[str, Any] = {"indices": [7, 11], "values": [0.5, 1.5]}
        self.vector_cases += 1
        match self.vector_cases % 7:
            case 0:
                dense[self.rng.randrange(len(dense))] = np.nan
            case 1:
                dense = dense[:-1]
            case 2:
                sparse = {"indices": [2**32], "values": [1.0]}
            case 3:
                sparse = {"indices": [-1, 3], "values": [1.0, 1.0]}
            case 4:
                sparse = {"indices": [3, 3], "values": [1.0, 2.0]}
            case 5:
                sparse = {"indices": [1, 2], "values": [1.0]}
        return {"model": self.vectors["model"], "dense": base64.b64encode(dense.tobytes()).decode(),
                "sparse_model": self.vectors["sparse_model"], "sparse": sparse}  # fmt: skip

    def _device_memory(self, pools: Pools) -> dict[str, Any]:
        """Every field of a memory as a device's log holds it, some at their limits."""
        rng = self.rng
        memory: dict[str, Any] = {"id": uuid7(), "namespace": NAMESPACE, "owner_agent": "anonymous",
                                  "memory_type": "fact", "status": "active", "version": 1}  # fmt: skip
        memory.update(save_fields(rng, pools))
        times = [t for t in pools.times if t not in ("30d", "2w")]  # durations are the gateway's: a device sends times
        if memory.get("expires_at") in ("30d", "2w"):
            memory["expires_at"] = rng.choice(times)
        wild = pools.wild
        extra: dict[str, Callable[[], Any]] = {
            "created_at": lambda: rng.choice(times),
            "updated_at": lambda: rng.choice(times),
            "last_accessed_at": lambda: rng.choice(times),
            "version": lambda: rng.choice((1, 2, 2**53) + ((2**63 - 1, 2**63, 1e308, math.nan) if wild else ())),
            "access_count": lambda: rng.choice(pools.numbers if wild else (0, 1, 2**53, 2**63 - 1)),
            "questions": lambda: [text_field(rng, pools) for _ in range(rng.randrange(3))],
            "source": lambda: label(rng, pools),
            "tier": lambda: rng.choice(("", "cold", label(rng, pools))),
            "status": lambda: rng.choice(("active", "archived", "expired")),
            "updated_by": lambda: "anonymous",
        }
        for name in rng.sample(sorted(extra), rng.randrange(1, 6)):
            memory[name] = extra[name]()
        if memory.get("sensitivity") == "secret":
            memory["sensitivity"] = "private"
        return memory

    def _mcp(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        url = self.node.mcp_url
        opened = self.http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                                headers=MCP_HEADERS)  # fmt: skip
        session = {**MCP_HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": PROTOCOL}
        self.http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        answered = self.http.post(url, content=raw(call), headers=session)
        self.http.delete(url, headers=session)
        if answered.status_code >= 500:
            return None
        reply = answered.json()
        if "error" in reply:  # a JSON-RPC parse error (a lone surrogate): refused before any tool ran
            return {"isError": True, "content": [{"text": reply["error"]["message"]}]}
        result: dict[str, Any] = reply["result"]
        return result


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("values"), model_cache)
    yield handle
    assert handle.stop() == 0


def server_wire_problem(payload: dict[str, Any]) -> str | None:
    """Why a Qdrant server's API could not carry ``payload`` (strict JSON, UTF-8, 64-bit integers), or None."""
    try:
        json.dumps(payload, allow_nan=False, ensure_ascii=False).encode()
    except (ValueError, UnicodeEncodeError) as e:
        return str(e)
    stack: list[Any] = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not INT64[0] <= item <= INT64[1]:
            return f"integer {item} beyond 64 bits"
        stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
    return None


async def replayed(node: NodeHandle, index: MemoryIndex, versions: MemoryIndex, ids: list[str]) -> list[str]:
    """Applies the node's whole log to ``index`` with a fresh indexer; the accepted ids it does not serve."""
    log = await NatsLog.connect(node.nats_url)
    indexer = Indexer(log, index, versions=versions)
    try:
        await indexer.start()
        await indexer.wait_caught_up(timeout=120)
        found = {p["id"] for p in index.retrieve(NAMESPACE, ids)}
        assert indexer.applied_seq == await log.last_seq()
    finally:
        await indexer.stop()
        await log.close()
    return sorted(set(ids) - found)


async def test_every_write_path_refuses_a_payload_or_both_indexes_apply_it(node: NodeHandle, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    with httpx.Client(base_url=node.http_url, timeout=60) as http:
        assert http.post("/v1/sync/register", json={"device": DEVICE}).status_code == 200
        fuzz = Fuzz(node, http, rng, Tally())
        paths = (fuzz.rest_save, fuzz.mcp_save, fuzz.rest_import, fuzz.sync_push, fuzz.update)
        for _ in range(EXAMPLES):
            for path in paths:
                path()
        ready = http.get("/readyz")
    tally = fuzz.tally
    assert not tally.failures, f"seed {SEED}:\n" + "\n".join(tally.failures)
    assert ready.status_code == 200, ready.text
    for name in ("rest save", "mcp save_memory", "rest import line", "sync push", "update"):
        # The generator is worth its examples only when both outcomes happen on each path.
        assert tally.outcomes[f"{name} accepted"] and tally.outcomes[f"{name} refused"], (SEED, tally.outcomes)

    ids = sorted({memory_id for memory_id, _ in tally.accepted})
    edge = EdgeIndex(tmp_path / "index", dim=PACKAGE_MODEL_DIM)
    edge_versions = EdgeIndex(tmp_path / "index-versions", dim=PACKAGE_MODEL_DIM)
    try:
        assert await replayed(node, edge, edge_versions, ids) == [], f"seed {SEED}: Qdrant Edge"
    finally:
        edge.close()
        edge_versions.close()
    client = QdrantClient(location=":memory:")
    try:
        server = QdrantServerIndex(client, collection="memories", dim=PACKAGE_MODEL_DIM)
        server_versions = QdrantServerIndex(client, collection="memories-versions", dim=PACKAGE_MODEL_DIM)
        assert await replayed(node, server, server_versions, ids) == [], f"seed {SEED}: the server adapter"
        carried = {p["id"]: server_wire_problem(p) for p in server.retrieve(NAMESPACE, ids)}
        assert {k: v for k, v in carried.items() if v} == {}, f"seed {SEED}"
    finally:
        client.close()


async def test_numbers_at_their_limits_come_back_as_given_in_rest_and_mcp_answers(node: NodeHandle) -> None:
    """What the index stores is served back exactly, in every answer that shows it (get, list, search; REST and
    MCP): the largest and smallest doubles, negative zero, the 64-bit integer ends, text with NUL and RTL marks."""
    deep = json.loads("[" * (MAX_METADATA_DEPTH - 1) + "1e308" + "]" * (MAX_METADATA_DEPTH - 1))
    limits = {"max": 1.7976931348623157e308, "min": -1e308, "tiny": 5e-324, "negzero": -0.0, "top": 2**63 - 1,
              "bottom": -(2**63), "text": "a\x00b \u202e 😀", "deep": deep}  # fmt: skip
    with httpx.Client(base_url=node.http_url, timeout=60) as http:
        saved = http.post("/v1/memories", json={"content": "Numbers at their limits live here", "metadata": limits})
        assert saved.status_code == 201, saved.text
        memory_id, seq = saved.json()["id"], saved.json()["seq"]
        got = http.get(f"/v1/memories/{memory_id}", params={"min_seq": seq}).json()
        listed = http.get("/v1/memories", params={"min_seq": seq, "limit": 100}).json()["memories"]
        hits = http.post("/v1/memories:search", json={"query": "numbers at their limits", "limit": 5}).json()["hits"]
    assert got["metadata"] == limits and math.copysign(1, got["metadata"]["negzero"]) == -1
    assert next(m for m in listed if m["id"] == memory_id)["metadata"] == limits
    assert next(h for h in hits if h["memory"]["id"] == memory_id)["memory"]["metadata"] == limits
    async with http_client(node.mcp_url) as client:
        shown = await call(client, "get_memory", id=memory_id)
    assert shown["metadata"] == limits


@pytest.mark.parametrize("source", ["vault", "jsonl"])
def test_engram_import_rejects_the_note_or_line_holding_nan_and_imports_the_rest(
    node: NodeHandle, tmp_path: Path, source: str
) -> None:
    """`engram import` of a vault (YAML reads `.nan` and `.inf`) or of JSON lines: the bad one is rejected, naming
    the field, the good one imported, and the index goes on."""
    marker = uuid7()
    if source == "vault":
        path = tmp_path / "vault"
        path.mkdir()
        (path / "bad.md").write_text(f"---\nratio: .nan\nlimit: -.inf\n---\nThe vault note with a NaN {marker}\n")
        (path / "good.md").write_text(f"---\nratio: 0.5\n---\nThe good vault note {marker}\n")
    else:
        path = tmp_path / "lines.jsonl"
        path.write_text(f'{{"content": "A line with a NaN {marker}", "metadata": {{"ratio": NaN}}}}\n'
                        f'{{"content": "The good line {marker}", "metadata": {{"ratio": 0.5}}}}\n')  # fmt: skip
    command = [sys.executable, "-m", "engram.services.node", "import", str(path), "--url", node.http_url, "--json"]
    done = subprocess.run(command, env=engram_env(node.model_cache), capture_output=True, text=True, timeout=180)
    outcome = json.loads(done.stdout)
    assert outcome["imported"] == 1, (done.stdout, done.stderr)
    (rejection,) = outcome["rejected"]
    assert rejection["reason"].startswith("metadata.ratio: is NaN"), rejection
    with httpx.Client(base_url=node.http_url, timeout=60) as http:
        found = http.get("/v1/memories", params={"limit": 100, "min_seq": outcome.get("last_seq", 0)}).json()
        assert [m["metadata"]["ratio"] for m in found["memories"] if marker in m["content"]] == [0.5]
        assert http.get("/readyz").status_code == 200
