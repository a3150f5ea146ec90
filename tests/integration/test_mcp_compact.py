"""What an agent pays for in context: tools/list and the answers of the tools, over the real SDK client and a real
node. Answers are compact by default (detail="full" or get_memory for every field); tools/list stays small."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

# What every session pays before its first call: all the tools, with their descriptions and input schemas.
MAX_TOOLS_LIST_BYTES = 42 * 1024  # about 40 KB today, from 180 KB
MAX_SEARCH_ANSWER_BYTES = 1536  # five typical hits
MAX_SAVE_ANSWER_BYTES = 512
# Typical memories: one statement of 60 to 100 characters (the discrete-facts set's median is 61), a type, a tag or
# two, a project.
MEMORIES = [
    "Billing: invoices are generated on the 1st of each month by the invoice-cron job.",
    "Billing: refunds above 500 EUR need the finance team's approval first.",
    "Billing: card tokens live in Stripe only; we keep the last four digits.",
    "Billing: failed payments are retried after 1, 3 and 7 days, then the account is suspended.",
    "Billing: the billing API moved from polling to webhooks (polling cost 40% of the quota).",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


async def test_tools_list_is_small_and_every_tool_keeps_a_description_and_an_input_schema(node: NodeHandle) -> None:
    async with http_client(node.mcp_url) as client:
        listed = await client.list_tools()
    assert len(listed.model_dump_json(by_alias=True, exclude_none=True).encode()) <= MAX_TOOLS_LIST_BYTES
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object" and "properties" in tool.input_schema, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name


async def test_a_search_answers_five_typical_hits_compactly_and_in_full_on_request(node: NodeHandle) -> None:
    tag = f"t{uuid.uuid4().hex[:10]}"
    async with http_client(node.mcp_url, name="claude-code") as client:
        for content in MEMORIES:
            saved = await call(
                client, "save_memory", content=content, memory_type="fact", tags=[tag, "billing"], project="shop"
            )
        found = await call(client, "search_memory", query="billing", tags=[tag], limit=5)
        full = await call(client, "search_memory", query="billing", tags=[tag], limit=5, detail="full")
        got = await call(client, "get_memory", id=saved["id"])
    assert len(found["hits"]) == 5
    assert size(found) <= MAX_SEARCH_ANSWER_BYTES, json.dumps(found)
    for hit in found["hits"]:
        assert set(hit) == {"id", "content", "memory_type", "owner_agent", "project", "tags", "updated_at", "score"}
        assert not any(empty(value) for value in hit.values()), hit
    assert set(found) == {"hits"}  # how it was made (applied_seq, reranked) is left out
    assert [hit["memory"]["id"] for hit in full["hits"]] == [hit["id"] for hit in found["hits"]]
    assert set(full) >= {"hits", "applied_seq", "reranked"}
    assert full["hits"][0]["memory"].keys() == got.keys()  # the full shape: every field of the memory
    assert {"namespace", "metadata", "history", "origin", "version", "status"} <= got.keys()


async def test_a_save_answer_is_a_short_confirmation_with_the_seq_to_read_it_back(node: NodeHandle) -> None:
    async with http_client(node.mcp_url, name="claude-code") as client:
        saved = await call(client, "save_memory", content=MEMORIES[0], tags=["billing"])
        listed = await call(client, "list_memories", limit=1)
    assert size(saved) <= MAX_SAVE_ANSWER_BYTES, json.dumps(saved)
    assert {"id", "version", "seq", "memory"} <= saved.keys()
    assert "redactions" not in saved and "warnings" not in saved  # empty
    assert saved["memory"]["content"] == MEMORIES[0] and "metadata" not in saved["memory"]
    assert [m["id"] for m in listed["memories"]] == [saved["id"]] and "next_page_token" in listed


async def test_explain_and_redactions_still_show_when_there_is_something_to_show(node: NodeHandle) -> None:
    tag = f"t{uuid.uuid4().hex[:10]}"
    async with http_client(node.mcp_url) as client:
        secret = "sk-proj-" + "a1B2c3D4e5" * 4
        saved = await call(client, "save_memory", content=f"Use OPENAI_API_KEY={secret} for evals {tag}", tags=[tag])
        found = await call(client, "search_memory", query="eval key", tags=[tag], explain=True)
    assert saved["redactions"] == [{"kind": "api_key", "count": 1}]
    [hit] = found["hits"]
    assert hit["id"] == saved["id"] and hit["explain"]["fused"]["rank"] == 1
