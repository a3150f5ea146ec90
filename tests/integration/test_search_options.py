"""Every option of search_memory and list_memories reaches the search service's reader, over MCP (the real SDK client,
streamable HTTP) and REST, against a real node: each is given a value whose effect shows in the answer.

The options are read from the gateway's request models (flat, as the tools take them), so an option added there is
tested here as soon as it has a probe in SEARCH_PROBES or LIST_PROBES (until then its test fails saying so); a site
that drops it (the tool's parameters, the REST listing's query, the request -> SearchQuery conversion, the wire, the
servicer) fails it. The CLI sends them as REST does (tests/unit/test_search_option_derivations.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from mcp import Client

from engram.services.gateway.schemas.flat import flat_names
from engram.services.gateway.schemas.requests import ListRequest, SearchRequest
from tests.conftest import NodeHandle
from tests.helpers.mcp import http_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

AGENT = "options@laptop"
NONE_SUCH = "none-such"
FAR_FUTURE, LONG_AGO = "2999-01-01T00:00:00Z", "2000-01-01T00:00:00Z"
BEYOND_THE_LOG = 2**40


class Refused(Exception):
    """The gateway refused a call; the message is what the caller reads."""


Read = Callable[..., Awaitable[dict[str, Any]]]  # search or list with these arguments: the full answer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


WORD = f"optionprobe{uuid.uuid4().hex[:8]}"


@pytest.fixture
def word() -> str:
    return WORD


_MADE: dict[str, Any] = {}  # the memories of this module, made once (the node is the session's)


@pytest.fixture
async def memories(node: NodeHandle, word: str) -> dict[str, Any]:
    """Three memories tagged ``word``: the first updated after the others (it leads a listing by update), the last
    archived."""
    if _MADE:
        return _MADE
    async with httpx.AsyncClient(base_url=node.http_url, headers={"X-Engram-Agent-ID": AGENT}, timeout=60) as http:
        ids = []
        for n in range(3):
            saved = await http.post(
                "/v1/memories", json={"content": f"{word} note {n} about the deploy", "tags": [word]}
            )
            assert saved.status_code == 201, saved.text
            ids.append(saved.json()["id"])
        updated = await http.patch(f"/v1/memories/{ids[0]}", json={"summary": "changed last"})
        archived = await http.delete(f"/v1/memories/{ids[2]}")
        assert updated.status_code == archived.status_code == 200, (updated.text, archived.text)
        _MADE.update(first=ids[0], second=ids[1], archived=ids[2], seq=archived.json()["seq"])
    return _MADE


@pytest.fixture(params=["mcp", "rest"])
async def reads(request: pytest.FixtureRequest, node: NodeHandle) -> AsyncIterator[tuple[Read, Read]]:
    """(search, list) over one transport, each answering the full answer or raising Refused."""
    if request.param == "mcp":
        async with http_client(node.mcp_url, agent=AGENT) as client:
            yield _tool(client, "search_memory"), _tool(client, "list_memories")
        return
    async with httpx.AsyncClient(base_url=node.http_url, headers={"X-Engram-Agent-ID": AGENT}, timeout=60) as http:

        async def search(**arguments: Any) -> dict[str, Any]:
            filters = {k: arguments.pop(k) for k in list(arguments) if k in FILTER_NAMES}
            return _answer(await http.post("/v1/memories:search", json={**arguments, "filters": filters}))

        async def listing(**arguments: Any) -> dict[str, Any]:
            return _answer(await http.get("/v1/memories", params=arguments))

        yield search, listing


FILTER_NAMES = frozenset(flat_names(SearchRequest)) - frozenset(SearchRequest.model_fields)


def _tool(client: Client, name: str) -> Read:
    async def read(**arguments: Any) -> dict[str, Any]:
        result = await client.call_tool(name, {**arguments, "detail": "full"})
        if result.is_error:
            raise Refused(" ".join(getattr(part, "text", "") for part in result.content))
        assert result.structured_content is not None
        return result.structured_content

    return read


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.status_code != 200:
        raise Refused(f"{response.status_code} {response.text}")
    body: dict[str, Any] = response.json()
    return body


def _ids(answer: dict[str, Any]) -> list[str]:
    return (
        [hit["memory"]["id"] for hit in answer["hits"]] if "hits" in answer else [m["id"] for m in answer["memories"]]
    )


async def _refused(read: Read, **arguments: Any) -> str:
    with pytest.raises(Refused) as refused:
        await read(**arguments)
    return str(refused.value)


# Each probe: (the option's arguments, what the answer to them shows) given the read, the word and the memories; the
# read already asks for the memories tagged with the word (the search for the word too).
Probe = Callable[[Read, dict[str, Any]], Awaitable[None]]


async def _nothing(read: Read, arguments: dict[str, Any]) -> None:
    assert _ids(await read(**arguments)) == []


def excludes(**arguments: Any) -> Probe:
    """A filter that no memory passes: the answer is empty (without it, it is not)."""

    async def probe(read: Read, base: dict[str, Any]) -> None:
        assert _ids(await read(**base))
        await _nothing(read, {**base, **arguments})

    return probe


async def _limit(read: Read, base: dict[str, Any]) -> None:
    assert len(_ids(await read(**base))) == 2 and len(_ids(await read(**base, limit=1))) == 1


async def _archived_only(read: Read, base: dict[str, Any]) -> None:
    assert _ids(await read(**base, status="archived")) == [base["_archived"]]


async def _with_archived(read: Read, base: dict[str, Any]) -> None:
    assert base["_archived"] not in _ids(await read(**base))
    assert base["_archived"] in _ids(await read(**base, include_archived=True))


async def _explain(read: Read, base: dict[str, Any]) -> None:
    hits = (await read(**base, explain=True))["hits"]
    assert hits and all(hit["explain"] for hit in hits)


async def _rerank(read: Read, base: dict[str, Any]) -> None:
    on, off = (await read(**base, rerank=True))["rerank_note"], (await read(**base, rerank=False))["rerank_note"]
    assert (
        on != off
    )  # with a reranker: "reranked ..." / "off for this request"; without: the second says how to add one


async def _sources(read: Read, base: dict[str, Any]) -> None:
    hits = (await read(**base, sources=["bm25"], explain=True))["hits"]
    assert hits and all(hit["explain"]["dense"]["rank"] == 0 and hit["explain"]["bm25"]["rank"] for hit in hits)


async def _min_relevance(read: Read, base: dict[str, Any]) -> None:
    unrelated = {**base, "query": "quasar xylophone marmalade"}  # meaning nothing the memories say, no shared word
    assert _ids(await read(**unrelated, min_relevance=0))
    assert _ids(await read(**unrelated, min_relevance=1)) == []


async def _min_seq(read: Read, base: dict[str, Any]) -> None:
    assert "beyond the end of the log" in await _refused(read, **{**base, "min_seq": BEYOND_THE_LOG})


async def _query(read: Read, base: dict[str, Any]) -> None:
    assert set(_ids(await read(**base))) == {base["_first"], base["_second"]}


async def _page_token(read: Read, base: dict[str, Any]) -> None:
    first = await read(**base, limit=1)
    following = await read(**base, limit=1, page_token=first["next_page_token"])
    assert _ids(following) and _ids(following) != _ids(first)


async def _order(read: Read, base: dict[str, Any]) -> None:
    assert _ids(await read(**base))[-1] == base["_first"]  # the oldest
    assert _ids(await read(**base, order="updated"))[0] == base["_first"]  # the last changed


FILTER_PROBES: dict[str, Probe] = {
    "tags": excludes(tags=[NONE_SUCH]), "topics": excludes(topics=[NONE_SUCH]),
    "owner_agent": excludes(owner_agent=NONE_SUCH), "memory_type": excludes(memory_type="blocker"),
    "project": excludes(project=NONE_SUCH), "conversation_id": excludes(conversation_id=NONE_SUCH),
    "created_after": excludes(created_after=FAR_FUTURE), "created_before": excludes(created_before=LONG_AGO),
    "team": excludes(team=NONE_SUCH), "status": _archived_only, "include_archived": _with_archived,
    "pack": excludes(pack=NONE_SUCH),
}  # fmt: skip
SEARCH_PROBES: dict[str, Probe] = {
    "query": _query, "limit": _limit, **FILTER_PROBES, "as_of": excludes(as_of=LONG_AGO), "explain": _explain,
    "rerank": _rerank, "min_seq": _min_seq, "sources": _sources, "min_relevance": _min_relevance,
}  # fmt: skip
LIST_PROBES: dict[str, Probe] = {
    "limit": _limit, **FILTER_PROBES, "page_token": _page_token, "min_seq": _min_seq, "order": _order,
}  # fmt: skip


def _probe(probes: dict[str, Probe], option: str) -> Probe:
    if option not in probes:
        pytest.fail(f"add a probe for option {option} to {__name__}: a value whose effect shows in the answer")
    return probes[option]


def _base(word: str, memories: dict[str, Any], *, search: bool) -> dict[str, Any]:
    """The arguments every probe's read starts from (the memories tagged ``word``; the search for it too, waiting for
    the writes), and the memories' ids (the keys starting with _, which the read leaves out)."""
    base: dict[str, Any] = {"tags": [word], "min_seq": memories["seq"]}
    if search:
        base["query"] = f"{word} deploy"
    return base | {"_first": memories["first"], "_second": memories["second"], "_archived": memories["archived"]}


def _reader(read: Read) -> Read:
    """``read`` without the probe's own keys (those starting with _)."""

    async def call(**arguments: Any) -> dict[str, Any]:
        return await read(**{k: v for k, v in arguments.items() if not k.startswith("_")})

    return call


@pytest.mark.parametrize("option", flat_names(SearchRequest))
async def test_a_search_option_reaches_the_reader(
    reads: tuple[Read, Read], memories: dict[str, Any], word: str, option: str
) -> None:
    base = _base(word, memories, search=True)
    await _probe(SEARCH_PROBES, option)(_reader(reads[0]), base)


@pytest.mark.parametrize("option", flat_names(ListRequest))
async def test_a_list_option_reaches_the_reader(
    reads: tuple[Read, Read], memories: dict[str, Any], word: str, option: str
) -> None:
    base = _base(word, memories, search=False)
    await _probe(LIST_PROBES, option)(_reader(reads[1]), base)
