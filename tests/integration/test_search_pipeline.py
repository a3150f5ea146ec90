"""The search pipeline on a real node: retriever choice, question vectors, rerank, explain at every stage."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import httpx
import pytest

from engram.models.rerank import load_reranker
from engram.models.store import import_dir
from engram.v1 import common_pb2, ingest_pb2, ingest_pb2_grpc
from tests.conftest import NodeHandle, start_node
from tests.helpers.mcp import call, http_client
from tests.helpers.tiny_models import make_tiny_cross_encoder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

FACTS = [
    "The billing service retries failed card payments three times",
    "Our staging database runs PostgreSQL 16 on port 5433",
    "Alice prefers dark mode in every editor",
    "The release train leaves every second Tuesday",
]


@pytest.fixture(scope="module")
def rerank_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHandle]:
    """A node whose model dir has a (tiny, test-built) cross-encoder installed."""
    models = tmp_path_factory.mktemp("models-with-reranker")
    import_dir(make_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce")), models)
    handle = start_node(tmp_path_factory.mktemp("rerank-node"), models)
    yield handle
    assert handle.stop() == 0


async def _seed(url: str, tag: str) -> dict[str, str]:
    ids = {}
    async with http_client(url, agent=tag, name="seeder") as client:  # an agent per tag: its own memories
        for fact in FACTS:
            ids[fact] = (await call(client, "save_memory", content=fact, tags=[tag]))["id"]
    return ids


async def test_each_retriever_can_be_chosen_and_explain_shows_every_stage(node: NodeHandle) -> None:
    ids = await _seed(node.mcp_url, "pipeline-sources")
    async with http_client(node.mcp_url) as client:
        full = await call(client, "search_memory", query="PostgreSQL port", tags=["pipeline-sources"], explain=True)
        bm25 = await call(client, "search_memory", query="PostgreSQL port", tags=["pipeline-sources"],
                          sources=["bm25"], explain=True)  # fmt: skip
        dense = await call(client, "search_memory", query="which database do we use?", tags=["pipeline-sources"],
                           sources=["dense"], explain=True, min_relevance=0)  # fmt: skip
    staging = ids[FACTS[1]]
    assert full["hits"][0]["id"] == staging
    assert set(full["hits"][0]["explain"]) == {"dense", "bm25", "questions", "fused", "floor"}
    assert full["hits"][0]["explain"]["fused"]["rank"] == 1
    assert all(h["explain"]["bm25"]["rank"] > 0 for h in bm25["hits"])  # only BM25 matches come back
    assert all(h["explain"]["dense"]["rank"] == 0 for h in bm25["hits"])
    assert len(bm25["hits"]) == 1
    assert dense["hits"][0]["id"] == staging
    assert len(dense["hits"]) == len(FACTS)


async def test_unknown_retriever_is_rejected_with_the_allowed_names(node: NodeHandle) -> None:
    response = httpx.post(f"{node.http_url}/v1/memories:search", json={"query": "x", "sources": ["magic"]})
    assert response.status_code == 400
    assert "dense" in response.json()["detail"]


async def test_question_vectors_find_a_memory_by_the_questions_it_answers(node: NodeHandle) -> None:
    ids = await _seed(node.mcp_url, "pipeline-questions")
    target = ids[FACTS[3]]
    async with grpc.aio.insecure_channel(node.grpc_address) as channel:
        reply = await ingest_pb2_grpc.IngestStub(channel).EnrichMemory(
            ingest_pb2.EnrichMemoryRequest(
                caller=common_pb2.CallContext(namespace="default", agent_id="engram-enricher", source="test"),
                id=target,
                questions=["How often do we ship a release?", "When is the next deployment window?"],
                model="test",
            )
        )
    async with http_client(node.mcp_url) as client:
        found = await call(client, "search_memory", query="how often do we ship?", tags=["pipeline-questions"],
                           sources=["questions"], explain=True, min_seq=reply.seq)  # fmt: skip
        memory = await call(client, "get_memory", id=target)
    assert [h["id"] for h in found["hits"]] == [target]  # only enriched memories have question vectors
    assert found["hits"][0]["explain"]["questions"]["rank"] == 1
    assert memory["questions"] == ["How often do we ship a release?", "When is the next deployment window?"]


async def test_without_a_reranker_rerank_is_off_and_says_so(node: NodeHandle) -> None:
    assert httpx.get(f"{node.http_url}/readyz").json()["rerank"] == "off"
    async with http_client(node.mcp_url) as client:
        result = await call(client, "search_memory", query="dark mode", rerank=True, detail="full")
    assert result["reranked"] is False
    assert "no reranker installed" in result["rerank_note"]


async def test_reranker_reorders_the_top_hits_by_cross_encoder_score(rerank_node: NodeHandle) -> None:
    ready = httpx.get(f"{rerank_node.http_url}/readyz").json()
    assert ready["rerank"] == "on" and ready["rerank_model"]
    await _seed(rerank_node.mcp_url, "pipeline-rerank")
    query = "what does Alice prefer?"
    async with http_client(rerank_node.mcp_url) as client:
        on = await call(client, "search_memory", query=query, tags=["pipeline-rerank"], rerank=True, explain=True,
                        detail="full")  # fmt: skip
        off = await call(client, "search_memory", query=query, tags=["pipeline-rerank"], rerank=False, explain=True,
                         detail="full")  # fmt: skip
    assert on["reranked"] is True and off["reranked"] is False
    assert all("rerank" in h["explain"] for h in on["hits"])
    assert all("rerank" not in h["explain"] for h in off["hits"])
    expected = load_reranker(rerank_node.model_cache)
    assert expected is not None
    scores = expected.score(query, [h["memory"]["content"] for h in on["hits"]])
    assert [h["score"] for h in on["hits"]] == pytest.approx([float(s) for s in scores], abs=1e-4)
    assert [h["score"] for h in on["hits"]] == sorted((h["score"] for h in on["hits"]), reverse=True)
    assert [h["explain"]["rerank"]["rank"] for h in on["hits"]] == list(range(1, len(on["hits"]) + 1))
