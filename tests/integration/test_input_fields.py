"""Every input field of a memory round-trips through the gateway against a real node: saved and read back, then
changed by an update and read back, over MCP (the real SDK client, streamable HTTP) and REST.

The fields are read from engram.model.MemoryInput, so a field added there is tested here as soon as it has a sample
value in SAMPLES (until then its tests fail saying so); a site that drops it (the tools' parameters, the request
models, the ingest writer's copy, input_of, the update mask) fails them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import Client

from engram.model import FIXED_INPUTS, MemoryInput, stored_name
from engram.validation import TEAM_TAG_PREFIX
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AGENT = "fields@laptop"
TRANSPORTS = ["mcp", "rest"]
FIELDS = [stored_name(f.name) for f in dataclasses.fields(MemoryInput)]  # as the requests name them


@dataclass(frozen=True)
class Sample:
    """Two values of a field other than its default, and how a memory (as get_memory answers) shows it."""

    saved: Any
    updated: Any
    read: Callable[[dict[str, Any]], Any] | None = None  # default: the memory's field of the same name


def _own_tags(memory: dict[str, Any]) -> list[str]:
    return [tag for tag in memory["tags"] if not tag.startswith(TEAM_TAG_PREFIX)]  # the team's tag is added


SAMPLES = {
    "content": Sample("The deploy target is Fly.io.", "The deploy target is Render."),
    "summary": Sample("Where we deploy", "Where we deploy now"),
    "memory_type": Sample("decision", "fact"),
    "confidence": Sample("inferred", "stated"),  # two values only: the update goes back to the default
    "topics": Sample(["deploys"], ["hosting", "costs"]),
    "tags": Sample(["ops", "infra"], ["platform"], read=_own_tags),
    "importance": Sample("high", "critical"),
    "team": Sample("platform", "payments"),
    "project": Sample("storefront", "checkout"),
    "conversation_id": Sample("conv-1", "conv-2"),
    "metadata": Sample({"n": 5, "nested": {"a": [1, 2]}, "flag": True}, {"ratio": 0.5}),
    "sensitivity": Sample("private", "secret"),
    "valid_at": Sample("2026-01-31T12:00:00.000Z", "2027-02-01T08:30:00.000Z"),
    "invalid_at": Sample("2030-01-01T00:00:00.000Z", "2031-06-01T00:00:00.000Z"),
    "expires_at": Sample("2040-01-01T00:00:00.000Z", "2041-03-01T00:00:00.000Z"),
    "handoff_target": Sample("reviewer", "tester", read=lambda memory: (memory["handoff"] or {}).get("target_agent")),
    "context": Sample("We were choosing a host.", "We were comparing prices."),
}
# Fields saved on a memory of their own: a handoff_target makes the memory a handoff (its memory_type is fixed).
ALONE = {"handoff_target"}


def sample(name: str) -> Sample:
    if name not in SAMPLES:
        pytest.fail(f"add a sample value for field {name} to SAMPLES in {__name__} (two values other than its default)")
    return SAMPLES[name]


def shown(memory: dict[str, Any], name: str) -> Any:
    read = sample(name).read
    return read(memory) if read is not None else memory[name]


def unique(text: str) -> str:
    return f"{text} ({uuid.uuid4().hex[:10]})"


class Refused(Exception):
    """The gateway refused a call; the message is what the caller reads."""


class Transport:
    """Saves, updates and reads memories over one of the gateway's APIs, answering with the memory as get reads it."""

    async def save(self, fields: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def update(self, memory_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class McpTransport(Transport):
    def __init__(self, client: Client) -> None:
        self.client = client

    async def save(self, fields: dict[str, Any]) -> dict[str, Any]:
        saved = await call(self.client, "save_memory", **fields)
        return await call(self.client, "get_memory", id=saved["id"])

    async def update(self, memory_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool("update_memory", {"id": memory_id, **fields})
        if result.is_error:
            raise Refused(" ".join(getattr(part, "text", "") for part in result.content))
        return await call(self.client, "get_memory", id=memory_id)


class RestTransport(Transport):
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def save(self, fields: dict[str, Any]) -> dict[str, Any]:
        saved = await self.http.post("/v1/memories", json=fields)
        assert saved.status_code == 201, saved.text
        return await self._get(saved.json()["id"], saved.json()["seq"])

    async def update(self, memory_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        updated = await self.http.patch(f"/v1/memories/{memory_id}", json=fields)
        if updated.status_code != 200:
            raise Refused(f"{updated.status_code} {updated.text}")
        return await self._get(memory_id, updated.json()["seq"])

    async def _get(self, memory_id: str, seq: int) -> dict[str, Any]:
        got = await self.http.get(f"/v1/memories/{memory_id}", params={"min_seq": seq})
        assert got.status_code == 200, got.text
        memory: dict[str, Any] = got.json()
        return memory


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=TRANSPORTS)
async def transport(request: pytest.FixtureRequest, node: NodeHandle) -> AsyncIterator[Transport]:
    if request.param == "mcp":
        async with http_client(node.mcp_url, agent=AGENT) as client:
            yield McpTransport(client)
    else:
        headers = {"X-Engram-Agent-ID": AGENT}
        async with httpx.AsyncClient(base_url=node.http_url, headers=headers, timeout=60) as http:
            yield RestTransport(http)


def full_memory() -> dict[str, Any]:
    """A save giving every field (but those saved alone) a value other than its default."""
    fields = {name: sample(name).saved for name in FIELDS if name not in ALONE}
    return {**fields, "content": unique(sample("content").saved)}


def unique_free(text: str) -> str:
    return text.rsplit(" (", 1)[0]


@pytest.mark.parametrize("name", FIELDS)
async def test_an_input_field_given_to_a_save_is_read_back(transport: Transport, name: str) -> None:
    value = sample(name).saved
    content = unique(sample("content").saved)
    memory = await transport.save({"content": content, name: value} if name != "content" else {"content": content})
    got = unique_free(memory["content"]) if name == "content" else shown(memory, name)
    assert got == value, f"{name} was saved as {value!r} and read back as {got!r}"


@pytest.mark.parametrize("name", FIELDS)
async def test_an_update_changes_an_input_field_and_keeps_every_other(transport: Transport, name: str) -> None:
    given = {"content": unique(sample("content").saved), name: sample(name).saved} if name in ALONE else full_memory()
    before = await transport.save(given)
    new = sample(name).updated
    if name in (stored_name(fixed) for fixed in FIXED_INPUTS):
        with pytest.raises(Refused) as refused:
            await transport.update(before["id"], {name: new})
        assert name in str(refused.value)
        return
    after = await transport.update(before["id"], {name: unique(new) if name == "content" else new})
    got = unique_free(after["content"]) if name == "content" else shown(after, name)
    assert got == new, f"{name} was updated to {new!r} and read back as {got!r}"
    assert after["version"] == before["version"] + 1
    for other in (field for field in FIELDS if field != name and field in given):
        assert shown(after, other) == shown(before, other), f"updating {name} changed {other}"
