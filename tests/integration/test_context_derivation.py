"""Context without effort (issue 8, point 8) on a real node: a memory of a conversation saved without context gets
the previous memory of that conversation as its context, from the ingest's memory of recent turns, or, when that
has none (a restarted or other ingest: an ingest service built here over the node's log and search service), from
the search service; never itself, never a more sensitive memory's text, never when ENGRAM_DERIVE_CONTEXT is off."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from engram import errors
from engram.config import Settings
from engram.grpc.clients import IngestClient, SearchClient
from engram.model import Caller, MemoryInput, SearchFilter
from engram.process.runtime import Resources
from engram.results import ImportItem
from engram.services.ingest.conversations import LOOKUP_PAGE
from engram.services.ingest.server import IngestService, build_service
from tests.conftest import NodeHandle, start_node

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def context_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("context"), model_cache)
    yield handle
    assert handle.stop() == 0


@pytest.fixture
async def clients(context_node: NodeHandle) -> AsyncIterator[tuple[IngestClient, SearchClient]]:
    ingest = IngestClient(context_node.grpc_address)
    search = SearchClient(context_node.grpc_address)
    yield ingest, search
    await search.close()
    await ingest.close()


@asynccontextmanager
async def fresh_ingest(node: NodeHandle, home: Path, **settings: Any) -> AsyncIterator[IngestService]:
    """Another ingest service over the node's log and search service, as `engram run ingest` builds it: it has
    remembered no conversation yet."""
    values: dict[str, Any] = {"nats_url": node.nats_url, "search_addr": node.grpc_address}
    configured = Settings.from_env({}, home=home, model_cache=node.model_cache, **{**values, **settings})
    resources = Resources(configured)
    service = await build_service(configured, resources)
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
        await resources.close()


def caller(namespace: str = "", agent: str = "claude-code") -> Caller:
    return Caller(namespace or f"ns{uuid.uuid4().hex[:10]}", agent, source=agent)


def conversation() -> str:
    return f"conv-{uuid.uuid4().hex[:8]}"


def turn(text: str, conversation_id: str, **fields: Any) -> MemoryInput:
    return MemoryInput(content=f"{text} {uuid.uuid4().hex[:6]}", conversation_id=conversation_id, **fields)


async def items(drafts: list[MemoryInput]) -> AsyncIterator[ImportItem]:
    for line, draft in enumerate(drafts, start=1):
        yield ImportItem(line, draft)


async def test_a_save_in_a_conversation_gets_the_previous_memory_as_context(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me, talk = caller(), conversation()
    first = await ingest.save(me, turn("Which port does the gateway use?", talk))
    second = await ingest.save(me, turn("Port 8443, behind the proxy", talk))
    given = await ingest.save(me, turn("Deploys happen on Tuesdays", talk, context="Given by the agent"))
    handoff = await ingest.save(me, turn("Take over the deploy", talk, handoff_target="gemini-cli"))
    after = await ingest.save(me, turn("Done", talk))
    assert first.memory.context == ""
    assert second.memory.context == first.memory.content
    assert given.memory.context == "Given by the agent", "a context the caller gives is kept"
    assert handoff.memory.context == given.memory.content
    assert after.memory.context == handoff.memory.content, "a handoff is a turn of its conversation too"

    stranger = await ingest.save(caller(agent="claude-code"), turn("Same conversation id, other namespace", talk))
    other = await ingest.save(me, turn("Another conversation", conversation()))
    alone = await ingest.save(me, MemoryInput(content=f"No conversation {uuid.uuid4().hex}"))
    assert stranger.memory.context == other.memory.context == alone.memory.context == ""

    word = first.memory.content.split()[-1]  # only the first turn says it: the second is found through its context
    found = await search.search(me, word, limit=5, flt=SearchFilter(), min_seq=after.seq, sources=["bm25"])
    assert second.memory.id in [h.memory.id for h in found.hits]


async def test_a_retried_save_does_not_become_its_own_context(clients: tuple[IngestClient, SearchClient]) -> None:
    ingest, _ = clients
    me, talk = caller(), conversation()
    question = await ingest.save(me, turn("Q: where are the logs?", talk))
    answer = turn("A: in /var/log/engram", talk)
    once = await ingest.save(me, answer)
    twice = await ingest.save(me, answer)  # the client retried: a second memory saying the same
    follow_up = await ingest.save(me, turn("Q: and the rotation?", talk))
    assert once.memory.context == twice.memory.context == question.memory.content
    assert follow_up.memory.context == answer.content


async def test_consecutive_items_of_an_import_chain_and_the_next_save_follows_the_last(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, search = clients
    me, talk, aside = caller(), conversation(), conversation()
    drafts = [
        turn("Turn one", talk),
        turn("Aside one", aside),
        turn("Turn two", talk),
        MemoryInput(content="", conversation_id=talk),  # rejected: not a turn of the conversation
        turn("Turn three", talk, context="Given"),
        turn("Aside two", aside),
        turn("Turn four", talk),
    ]
    summary = await ingest.import_memories(me, items(drafts))
    assert [line for line, _ in summary.rejected] == [4]
    stored = {line: await search.get(me, memory_id, min_seq=seq) for line, memory_id, seq in summary.imported}
    contexts = {line: memory.context for line, memory in stored.items()}
    assert contexts == {
        1: "",
        2: "",
        3: drafts[0].content,
        5: "Given",
        6: drafts[1].content,
        7: drafts[4].content,
    }
    later = await ingest.save(me, turn("Turn five", talk))
    assert later.memory.context == drafts[6].content


async def test_without_its_memory_of_a_conversation_ingest_asks_the_search_service(
    clients: tuple[IngestClient, SearchClient], context_node: NodeHandle, tmp_path: Path
) -> None:
    ingest, search = clients
    me, saved_talk, imported_talk = caller(), conversation(), conversation()
    await ingest.save(me, turn("Earlier", saved_talk))
    last_saved = await ingest.save(me, turn("Latest saved", saved_talk))
    # One import creates its memories at one time; more of them than a listing page, to find the last of them.
    drafts = [turn(f"Imported turn {n}", imported_talk) for n in range(LOOKUP_PAGE + 10)]
    summary = await ingest.import_memories(me, items(drafts))
    assert summary.rejected == [] and len(summary.imported) == len(drafts)
    await search.get(me, summary.imported[-1][1], min_seq=summary.last_seq)  # the index has it all

    async with fresh_ingest(context_node, tmp_path) as service:
        conversations = service.writer.conversations
        assert conversations is not None and len(conversations) == 0
        next_saved = await service.writer.save(me, turn("Next saved", saved_talk))
        next_imported = await service.writer.save(me, turn("Next imported", imported_talk))
        assert next_saved.memory.context == last_saved.memory.content
        assert next_imported.memory.context == drafts[-1].content
        assert len(conversations) == 2
        chained = await service.writer.save(me, turn("And on", imported_talk))
        assert chained.memory.context == next_imported.memory.content


async def test_a_search_service_that_cannot_answer_never_fails_the_save(
    tmp_path: Path, context_node: NodeHandle
) -> None:
    me, talk = caller(), conversation()
    async with fresh_ingest(context_node, tmp_path, search_addr="127.0.0.1:9") as service:  # nothing listens
        saved = await service.writer.save(me, turn("Saved anyway", talk))
        assert saved.seq > 0 and saved.memory.context == ""
        following = await service.writer.save(me, turn("And remembered", talk))
        assert following.memory.context == saved.memory.content


async def test_no_context_is_derived_when_derive_context_is_off(
    clients: tuple[IngestClient, SearchClient], context_node: NodeHandle, tmp_path: Path
) -> None:
    _, search = clients
    me, talk = caller(), conversation()
    async with fresh_ingest(context_node, tmp_path, derive_context=False) as service:
        assert service.writer.conversations is None
        await service.writer.save(me, turn("One", talk))
        two = await service.writer.save(me, turn("Two", talk))
        summary = await service.writer.import_stream(me, items([turn("Three", talk), turn("Four", talk)]))
    assert two.memory.context == "" and summary.rejected == []
    for _, memory_id, seq in summary.imported:
        assert (await search.get(me, memory_id, min_seq=seq)).context == ""


async def test_a_more_sensitive_previous_memory_is_not_copied_into_the_context(
    clients: tuple[IngestClient, SearchClient],
) -> None:
    ingest, _ = clients
    me, talk = caller(), conversation()
    secret = await ingest.save(me, turn("The vault unseal order is 3-1-2", talk, sensitivity="private"))
    plain = await ingest.save(me, turn("Unrelated plain turn", talk))
    private = await ingest.save(me, turn("Another private turn", talk, sensitivity="private"))
    assert plain.memory.context == "", "a private turn's text would leave with a normal memory"
    assert private.memory.context == plain.memory.content
    assert secret.memory.context == ""


async def test_a_derived_context_is_capped_like_a_given_one(
    clients: tuple[IngestClient, SearchClient], context_node: NodeHandle, tmp_path: Path
) -> None:
    ingest, search = clients
    me, talk = caller(), conversation()
    long_turn = await ingest.save(me, MemoryInput(content="é" * 400, conversation_id=talk))  # 800 bytes
    await search.get(me, long_turn.memory.id, min_seq=long_turn.seq)
    async with fresh_ingest(context_node, tmp_path, max_content_bytes=101) as service:
        capped = await service.writer.save(me, turn("Short", talk))
    assert capped.memory.context == "é" * 50, "cut to 101 bytes at a character boundary"
    with pytest.raises(errors.InvalidArgument, match="context: is 40000 bytes; the limit is 32768"):
        await ingest.save(me, MemoryInput(content="x", context="c" * 40000))
