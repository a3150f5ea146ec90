"""A real node with an LLM configured: saved memories gain questions, search finds them by those questions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NodeHandle, start_node
from tests.helpers.fake_llm import FakeLlm, fake_llm_server
from tests.helpers.mcp import call, http_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.anyio]

API_KEY = "sk-e2e-enrich-4d2c8b1a"
ENRICH_WAIT = 60.0
POLL_INTERVAL = 0.1
FAST_SAVE_SECONDS = 3.0


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with fake_llm_server() as server:
        yield server


def llm_env(fake: FakeLlm, **extra: str) -> dict[str, Any]:
    return {
        "ENGRAM_LLM_URL": fake.url, "ENGRAM_LLM_MODEL": "fake-model", "ENGRAM_LLM_API_KEY": API_KEY,
        "ENGRAM_ENRICH_RETRY_BASE_SECONDS": "0.05", "ENGRAM_LOG_LEVEL": "INFO", **extra,
    }  # fmt: skip


def serve_log(node: NodeHandle) -> str:
    return (node.home / "serve.log").read_text(errors="replace")


async def wait_for_questions(client: Any, memory_id: str, node: NodeHandle) -> dict[str, Any]:
    """Polls get_memory (bounded) until enrichment has added questions."""
    deadline = time.monotonic() + ENRICH_WAIT
    while time.monotonic() < deadline:
        memory = await call(client, "get_memory", id=memory_id)
        if memory.get("questions"):
            return memory
        await asyncio.sleep(POLL_INTERVAL)
    raise AssertionError(f"no questions after {ENRICH_WAIT:g}s; serve.log:\n{serve_log(node)[-4000:]}")


async def test_saved_memories_gain_questions_and_search_ranks_them_by_question(
    tmp_path: Path, model_cache: Path, fake: FakeLlm
) -> None:
    node = start_node(tmp_path / "home", model_cache, **llm_env(fake))
    try:
        async with http_client(node.mcp_url, name="enrich-e2e") as client:
            target = await call(client, "save_memory", content="Kubernetes upgrades happen on the first Tuesday")
            other = await call(client, "save_memory", content="The espresso machine on floor three needs descaling")
            memory = await wait_for_questions(client, target["id"], node)
            await wait_for_questions(client, other["id"], node)
            question = memory["questions"][0]
            result = await call(client, "search_memory", query=question, explain=True)
        hits = {hit["id"]: hit for hit in result["hits"]}
        assert target["id"] in hits, result
        assert "questions" in hits[target["id"]]["explain"], hits[target["id"]]
        assert hits[target["id"]]["explain"]["questions"]["rank"] == 1
        assert any("Kubernetes upgrades happen" in r.user_text for r in fake.requests)
        assert fake.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    finally:
        assert node.stop() == 0
    log = serve_log(node)
    assert "enrichment on" in log, log[-4000:]
    assert API_KEY not in log


async def test_a_hanging_llm_never_slows_saves_or_blocks_shutdown(
    tmp_path: Path, model_cache: Path, fake: FakeLlm
) -> None:
    fake.mode = "hang"
    node = start_node(tmp_path / "home", model_cache, **llm_env(fake, ENGRAM_LLM_TIMEOUT_SECONDS="120"))
    try:
        async with http_client(node.mcp_url, name="enrich-hang") as client:
            await call(client, "save_memory", content="Warm-up save so the first timing is not a cold start")
            assert await asyncio.to_thread(fake.wait_for_requests, 1, ENRICH_WAIT), serve_log(node)[-4000:]
            started = time.monotonic()
            saved = await call(client, "save_memory", content="Saved while the LLM hangs")
            elapsed = time.monotonic() - started
            found = await call(client, "search_memory", query="saved while the LLM hangs", min_seq=saved["seq"])
        assert elapsed < FAST_SAVE_SECONDS
        assert saved["id"] in [hit["id"] for hit in found["hits"]]
        started = time.monotonic()
    finally:
        assert node.stop() == 0
    assert time.monotonic() - started < 20  # stopping does not wait for the LLM's 120 s timeout
