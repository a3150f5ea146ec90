"""An option of search or list is written in four places (the proto's request, engram.model's SearchQuery or ListQuery,
the gateway's request model, its use in the reader); everything between them is derived. These checks name the
derivation that drifted without a node; tests/integration/test_search_options.py sends every option through MCP and
REST to a real node and sees its effect."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any
from unittest.mock import MagicMock

import pytest

from engram.cli import build_parser
from engram.cli.common import build_call
from engram.config import Settings
from engram.grpc import wire
from engram.model import Caller, ListQuery, SearchFilter, SearchQuery
from engram.services.gateway.app import build_app
from engram.services.gateway.mcp.server import build_mcp
from engram.services.gateway.operations.memories import LIST_OPTIONS, SEARCH_OPTIONS, list_query, search_query
from engram.services.gateway.schemas.flat import flat_names
from engram.services.gateway.schemas.requests import Filters, ListRequest, SearchRequest
from engram.v1 import search_pb2

CALLER = Caller(namespace="team", agent_id="probe", source="pytest", scopes=frozenset({"read"}), device="laptop")
# The options the CLI leaves out, and why: a shell user waits for nothing (min_seq), and reads the fused answer.
NOT_ON_THE_CLI = {"search": {"min_seq", "sources"}, "list": {"min_seq"}}


def test_a_search_request_gives_every_option_of_the_kernels_search_by_its_name() -> None:
    # The filters (and as_of, a filter of the index) become its filter; min_seq is raised by the gateway's cursors.
    assert set(SEARCH_OPTIONS) | {"filters", "as_of", "min_seq"} == set(SearchRequest.model_fields)
    assert set(SEARCH_OPTIONS) | {"flt", "min_seq"} == {f.name for f in dataclasses.fields(SearchQuery)}


def test_a_list_request_gives_every_option_of_the_kernels_listing_by_its_name() -> None:
    assert set(LIST_OPTIONS) | {"filters", "min_seq"} == set(ListRequest.model_fields)
    assert set(LIST_OPTIONS) | {"flt", "min_seq"} == {f.name for f in dataclasses.fields(ListQuery)}


# A value other than the default for every field a request may give (a new one fails below until it has one).
SAMPLES: dict[str, Any] = {
    "query": "where do we deploy", "limit": 3, "as_of": "2026-01-31T12:00:00Z", "explain": True, "rerank": False,
    "min_seq": 7, "sources": ["bm25"], "min_relevance": 0.4, "page_token": "token", "order": "updated",
    "tags": ["ops"], "topics": ["deploys"], "owner_agent": "alice", "memory_type": "decision", "project": "shop",
    "conversation_id": "c-1", "created_after": "2026-01-01T00:00:00Z", "created_before": "2026-02-01T00:00:00Z",
    "team": "platform", "status": "archived", "include_archived": True, "pack": "rust",
}  # fmt: skip


def _sample(name: str) -> Any:
    if name not in SAMPLES:
        pytest.fail(f"add a value other than its default for option {name} to SAMPLES in {__name__}")
    return SAMPLES[name]


def _filters() -> Filters:
    return Filters(**{name: _sample(name) for name in Filters.model_fields})


def test_every_filter_reaches_the_kernels_filter() -> None:
    built = search_query(SearchRequest(query="q", filters=_filters(), as_of=SAMPLES["as_of"]), min_seq=0).flt
    unset = [
        f.name for f in dataclasses.fields(SearchFilter) if getattr(built, f.name) == getattr(SearchFilter(), f.name)
    ]
    # Those no request filter sets: ingest's and coordination's own lookups.
    assert set(unset) == {"handoff_target", "handoff_statuses", "relation_kinds", "content_keys"}


def test_every_search_option_reaches_the_kernels_search_unchanged() -> None:
    request = SearchRequest(**{name: _sample(name) for name in SEARCH_OPTIONS}, filters=_filters())
    query = search_query(request, min_seq=9)
    for name in SEARCH_OPTIONS:
        assert getattr(query, name) == getattr(request, name), name
    assert query.min_seq == 9


def test_every_list_option_reaches_the_kernels_listing_unchanged() -> None:
    request = ListRequest(**{name: _sample(name) for name in LIST_OPTIONS}, filters=_filters())
    query = list_query(request, min_seq=9)
    for name in LIST_OPTIONS:
        assert getattr(query, name) == getattr(request, name), name


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (SearchQuery("q", 3, SearchFilter(tags=["a"], as_of=5.0), 7, True, False, ["bm25"], 0.0),
         search_pb2.SearchMemoriesRequest),
        (SearchQuery("q", rerank=True, min_relevance=None), search_pb2.SearchMemoriesRequest),
        (ListQuery(5, SearchFilter(statuses=["archived"]), "token", 3, "updated"), search_pb2.ListMemoriesRequest),
    ],
)  # fmt: skip
def test_a_query_crosses_the_wire_unchanged(query: Any, message: Any) -> None:
    sent = wire.request_to_proto(CALLER, query, message)
    caller, received = wire.request_from_proto(message.FromString(sent.SerializeToString()), type(query))
    assert received == query and caller == CALLER


def test_an_unset_relevance_floor_and_rerank_are_the_servers_default_on_the_wire() -> None:
    sent = wire.request_to_proto(CALLER, SearchQuery("q"), search_pb2.SearchMemoriesRequest)
    assert not sent.HasField("min_relevance") and sent.rerank == search_pb2.RERANK_MODE_UNSPECIFIED
    assert wire.request_to_proto(CALLER, SearchQuery("q", min_relevance=0.0), type(sent)).HasField("min_relevance")


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "model"), [("search_memory", SearchRequest), ("list_memories", ListRequest)])
async def test_the_read_tools_take_their_requests_fields_as_arguments(tool: str, model: type) -> None:
    server = build_mcp(MagicMock(), MagicMock(), MagicMock(), Settings())
    schema = {t.name: t.input_schema for t in await server.list_tools()}[tool]
    assert list(schema["properties"]) == [*flat_names(model), "detail"]


def test_the_rest_listing_takes_its_requests_fields_as_query_parameters() -> None:
    app = build_app(Settings(), MagicMock(), MagicMock())
    parameters = app.openapi()["paths"]["/v1/memories"]["get"]["parameters"]
    assert [p["name"] for p in parameters if p["in"] == "query" and p["name"] != "agent_id"] == flat_names(ListRequest)


def _cli(*argv: str) -> Any:
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    return build_call(args)


FILTER_FLAGS = (
    "--tag", "ops", "--topic", "deploys", "--type", "decision", "--owner", "alice", "--project", "shop", "--team",
    "platform", "--conversation", "c-1", "--after", "2026-01-01T00:00:00Z", "--before", "2026-02-01T00:00:00Z",
    "--status", "archived", "--include-archived", "--pack", "rust",
)  # fmt: skip


def test_the_cli_search_sends_every_option_but_those_it_names() -> None:
    call = _cli("search", "q", "--limit", "3", "--as-of", "2026-01-31T12:00:00Z", "--explain", "--no-rerank",
                "--min-relevance", "0.4", *FILTER_FLAGS)  # fmt: skip
    assert set(call.body) | NOT_ON_THE_CLI["search"] == set(SearchRequest.model_fields)
    assert set(call.body["filters"]) == set(Filters.model_fields)
    SearchRequest.model_validate(call.body)  # the REST body it sends is a valid request


def test_the_cli_list_sends_every_option_but_those_it_names() -> None:
    call = _cli("list", "--limit", "3", "--order", "updated", *FILTER_FLAGS)
    sent = set(call.params) | {"page_token"}  # the next page's token, sent by --all (tests/unit/test_cli_find.py)
    assert sent | NOT_ON_THE_CLI["list"] == set(flat_names(ListRequest))
