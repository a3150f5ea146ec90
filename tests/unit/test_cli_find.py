"""`engram save|search|list|get` without a node: the requests the command lines make, the tables and blocks they
print, the errors they say, and --all and --history against a small stand-in HTTP server."""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, get_args
from urllib.parse import parse_qs, urlsplit

import pytest

from engram import cli
from engram.cli import build_parser, find
from engram.cli.common import UsageError, build_call
from engram.index import DEFAULT_ORDER, ORDERS
from engram.model import parse_time
from engram.services.gateway.operations.memories import DURATION_UNITS
from engram.services.gateway.schemas.arguments import DEFAULT_LIST_ORDER, ListOrderName
from engram.services.gateway.schemas.requests import Filters

ID_A = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
ID_B = "0196a1b2-c3d4-7e60-9abc-def012345678"
NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def _call(*argv: str) -> Any:
    return build_call(_args(*argv))


def _memory(memory_id: str = ID_A, **fields: Any) -> dict[str, Any]:
    return {
        "id": memory_id, "namespace": "default", "content": "Deploys go through the blue-green script.",
        "owner_agent": "claude-code@laptop", "summary": "", "memory_type": "fact", "confidence": "stated",
        "topics": [], "tags": [], "importance": "normal", "source": "cli", "team": "", "project": "",
        "conversation_id": "", "metadata": {}, "sensitivity": "normal", "created_at": "2026-11-20T09:15:42.123Z",
        "updated_at": "2026-11-21T10:30:00.000Z", "valid_at": None, "invalid_at": None, "expires_at": None,
        "version": 1, "history": [], "status": "active", "superseded_by": "", "relations": [], "handoff": None,
        "questions": [], "access_count": 0, "origin": {"device": "", "source_id": ""}, "seq": 7, "context": "",
        "last_accessed_at": None, "updated_by": "claude-code@laptop", "tier": "", **fields,
    }  # fmt: skip


# --- what the command lines send ------------------------------------------------------------------------------


def test_the_cli_filters_are_the_rest_filters() -> None:
    assert sorted(find.FILTERS) == sorted(Filters.model_fields)


def test_the_durations_back_are_those_of_expires_at() -> None:
    assert find.DURATION_UNITS == DURATION_UNITS


def test_search_sends_the_query_alone_when_nothing_else_is_given() -> None:
    call = _call("search", "blue-green deploys")
    assert (call.method, call.path, call.body) == ("POST", "/v1/memories:search", {"query": "blue-green deploys",
                                                                                  "filters": {}})  # fmt: skip


def test_search_sends_every_filter_by_its_rest_name() -> None:
    call = _call(
        "search", "deploys", "--limit", "5", "--tag", "ops", "--tag", "ci", "--topic", "release", "--type", "fact",
        "--type", "decision", "--owner", "codex@ci", "--project", "shop", "--team", "platform", "--conversation", "c1",
        "--after", "2026-01-01", "--before", "2026-02-01T00:00:00+01:00", "--status", "active", "--status",
        "superseded", "--include-archived", "--pack", "coach", "--as-of", "2026-01-15T12:00:00Z", "--explain",
        "--no-rerank",
    )  # fmt: skip
    assert call.body == {
        "query": "deploys", "limit": 5, "as_of": "2026-01-15T12:00:00.000Z", "explain": True, "rerank": False,
        "filters": {
            "tags": ["ops", "ci"], "topics": ["release"], "memory_type": ["fact", "decision"],
            "owner_agent": "codex@ci", "project": "shop", "team": "platform", "conversation_id": "c1",
            "created_after": "2026-01-01T00:00:00.000Z", "created_before": "2026-01-31T23:00:00.000Z",
            "status": ["active", "superseded"], "include_archived": True, "pack": "coach",
        },
    }  # fmt: skip
    assert set(call.body["filters"]) == set(find.FILTERS)


def test_a_duration_is_a_time_that_long_ago() -> None:
    assert find.moment("7d", now=NOW) == "2027-01-08T08:00:00.000Z"
    assert find.moment("12h", now=NOW) == "2027-01-14T20:00:00.000Z"
    assert parse_time(find.moment("30m")) == pytest.approx(time.time() - 1800, abs=5)  # now by default


@pytest.mark.parametrize("value", ["yesterday", "7 days", "0d", "1y", "2026-13-01", ""])
def test_a_time_that_is_none_is_refused_by_the_parser(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _args("list", "--after", value)
    assert exited.value.code == 2
    assert "is not a time; give an RFC 3339 time" in capsys.readouterr().err


@pytest.mark.parametrize("limit", ["0", "101", "ten"])
def test_a_limit_out_of_range_is_refused_by_the_parser(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _args("search", "q", "--limit", limit)
    assert "--limit" in capsys.readouterr().err


def test_list_sends_filters_as_query_parameters_and_the_nodes_default_page() -> None:
    call = _call("list", "--tag", "a", "--tag", "b", "--include-archived", "--type", "fact")
    assert (call.method, call.path) == ("GET", "/v1/memories")
    assert call.params == {"tags": ["a", "b"], "include_archived": "true", "memory_type": ["fact"]}
    assert _call("list", "--limit", "3").params == {"limit": 3}


def test_list_all_reads_the_largest_pages() -> None:
    assert _call("list", "--all").params == {"limit": 100}
    assert _call("list", "--all", "--limit", "7").params == {"limit": 7}


def test_list_orders_are_those_of_the_rest_list_and_the_index() -> None:
    assert find.LIST_ORDERS == get_args(ListOrderName) == tuple(ORDERS)
    assert DEFAULT_LIST_ORDER == DEFAULT_ORDER


def test_list_order_updated_is_sent_and_the_table_shows_the_last_change() -> None:
    args = _args("list", "--order", "updated")
    call = build_call(args)
    assert call.params == {"order": "updated"}
    memory = _memory(updated_at="2026-12-01T10:30:00.000Z")
    lines = call.render({"memories": [memory], "next_page_token": None}).splitlines()
    assert lines[0].split()[3] == "UPDATED" and lines[1].split()[3:5] == ["2026-12-01", "10:30Z"]
    assert "order" not in _call("list").params


def test_an_unknown_list_order_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _args("list", "--order", "oldest")
    assert "created" in capsys.readouterr().err


def test_save_sends_the_content_and_the_fields_given() -> None:
    call = _call(
        "save", "The API uses OAuth2.", "--type", "decision", "--tag", "auth", "--topic", "security", "--importance",
        "high", "--project", "shop", "--team", "platform", "--summary", "OAuth2", "--sensitivity", "private",
        "--metadata", '{"ticket": "ENG-12"}', "--conversation", "c9",
    )  # fmt: skip
    assert (call.method, call.path) == ("POST", "/v1/memories")
    assert call.body == {
        "content": "The API uses OAuth2.", "memory_type": "decision", "tags": ["auth"], "topics": ["security"],
        "importance": "high", "project": "shop", "team": "platform", "summary": "OAuth2", "sensitivity": "private",
        "metadata": {"ticket": "ENG-12"}, "conversation_id": "c9",
    }  # fmt: skip


@pytest.mark.parametrize("argv", [("save",), ("save", "-")])
def test_save_reads_stdin_without_content_or_with_a_dash(
    argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("line one\n  line two\n\n"))
    assert _call(*argv).body == {"content": "line one\n  line two"}


def test_save_of_nothing_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n \n"))
    with pytest.raises(UsageError, match="nothing to save"):
        _call("save")
    with pytest.raises(UsageError, match="nothing to save"):
        _call("save", "   ")


def test_get_builds_the_memory_route() -> None:
    assert (_call("get", ID_A).method, _call("get", ID_A).path) == ("GET", f"/v1/memories/{ID_A}")


# --- what people read -----------------------------------------------------------------------------------------


def _search_answer(*memories: dict[str, Any], explain: bool = False) -> dict[str, Any]:
    hits = []
    for rank, memory in enumerate(memories, 1):
        hit: dict[str, Any] = {"score": 1.0 / rank, "memory": memory}
        if explain:
            hit["explain"] = {"dense": {"rank": rank, "score": 0.8}, "bm25": {"rank": 0, "score": 0.0},
                              "fused": {"rank": rank, "score": 1.0 / rank}}  # fmt: skip
        hits.append(hit)
    return {"hits": hits, "applied_seq": 12, "reranked": False, "rerank_note": "no reranker installed"}


def test_search_prints_a_table_best_first_cut_to_the_width() -> None:
    long = _memory(ID_B, content="word " * 100, owner_agent="a-very-long-agent-name@a-very-long-device-name")
    out = find.render_search(_search_answer(_memory(), long), width=120)
    header, first, second = out.splitlines()
    assert header.split() == ["#", "SCORE", "ID", "TYPE", "OWNER", "UPDATED", "CONTENT"]
    assert first.split()[:7] == ["1", "1.000", "…2e3f4a5b", "fact", "claude-code@laptop", "2026-11-21", "10:30Z"]
    assert first.endswith("Deploys go through the blue-green script.")
    assert second.startswith("2  0.500  …12345678  fact  a-very-long-agent-name@…  2026-11-21 10:30Z  word word")
    assert len(second) == 120 and second.endswith("…")


def test_search_shows_whole_ids_when_asked() -> None:
    out = find.render_search(_search_answer(_memory()), width=200, full_ids=True)
    assert out.splitlines()[1].split()[2] == ID_A


def test_a_narrow_terminal_still_shows_some_content() -> None:
    row = find.render_search(_search_answer(_memory()), width=20).splitlines()[1]
    assert row.endswith("Deploys go through the…")


def test_wide_characters_count_two_columns() -> None:
    assert find.display_width("記憶ab") == 6
    assert find.fit("記憶記憶", 5) == "記憶…"
    assert find.display_width(find.fit("e\u0301" * 30, 10)) == 10


def test_search_with_explain_shows_each_stages_rank_under_every_hit() -> None:
    out = find.render_search(_search_answer(_memory(), _memory(ID_B), explain=True), width=120).splitlines()
    assert out[2] == "     dense #1 0.800 · bm25 - · fused #1 1.000"
    assert out[4] == "     dense #2 0.800 · bm25 - · fused #2 0.500"
    assert out[5] == "reranked: no (no reranker installed); index at log seq 12"


def test_no_hits_says_so_and_what_to_try() -> None:
    empty = {"hits": [], "applied_seq": 3, "reranked": False}
    assert find.render_search(empty, width=80, query="kubernetes") == (
        "No memories match 'kubernetes'. Try other or fewer words, --min-relevance 0 for weaker matches, "
        "--include-archived or --status to look beyond active memories, or `engram list` for the newest."
    )
    assert "fewer filters" in find.render_search(empty, width=80, query="k8s", narrowed=True)


def test_list_prints_a_table_and_says_how_to_see_more() -> None:
    answer = {"memories": [_memory(), _memory(ID_B, memory_type="decision")], "next_page_token": "t1"}
    lines = find.render_list(answer, width=120).splitlines()
    assert lines[0].split() == ["ID", "TYPE", "OWNER", "CREATED", "CONTENT"]
    assert lines[1].split()[:5] == ["…2e3f4a5b", "fact", "claude-code@laptop", "2026-11-20", "09:15Z"]
    assert lines[2].split()[:2] == ["…12345678", "decision"]
    assert lines[3] == "(the 2 newest; more: --all for every one, or --limit N for up to 100 a page)"
    assert "more" not in find.render_list({**answer, "next_page_token": None}, width=120)


def test_an_empty_list_says_what_to_do() -> None:
    empty: dict[str, Any] = {"memories": [], "next_page_token": None}
    assert find.render_list(empty, width=80).startswith('No memories yet. Save one: engram save "what to remember"')
    assert find.render_list(empty, width=80, narrowed=True).startswith("No memories match these filters.")


def test_get_shows_every_set_field_and_the_content_as_a_block() -> None:
    memory = _memory(
        content="First line.\nSecond line.", tags=["ops", "ci"], metadata={"ticket": "ENG-12", "n": [1, 2]},
        handoff={"target_agent": "codex@ci", "status": "pending", "updated_at": None, "expires_at": None},
        relations=[{"kind": "supersedes", "memory_id": ID_B, "note": ""}], version=2,
        history=[{"version": 1, "content": "old"}],
    )  # fmt: skip
    out = find.render_get(memory)
    assert out.splitlines()[0] == f"Memory {ID_A}"
    rows = [line.split(None, 1) for line in out.splitlines()[1:] if not line.startswith(("    ", "  (", "  content"))]
    fields = dict(rows)
    assert fields["tags"] == "ops, ci"
    assert fields["metadata"] == '{"ticket": "ENG-12", "n": [1, 2]}'
    assert fields["handoff"] == "target_agent codex@ci · status pending"
    assert fields["relations"] == f"kind supersedes · memory_id {ID_B}"
    assert fields["version"] == "2" and fields["seq"] == "7" and fields["status"] == "active"
    assert {"summary", "origin", "access_count", "tier", "valid_at", "history", "id"}.isdisjoint(fields)
    assert "  content:\n    First line.\n    Second line." in out
    assert out.endswith(f"  (1 earlier version: engram get {ID_A} --history)")


def test_a_save_prints_its_id_version_seq_and_what_was_redacted() -> None:
    answer = {"id": ID_A, "version": 1, "seq": 42, "memory": _memory(), "warnings": [],
              "redactions": [{"kind": "github_token", "count": 1}, {"kind": "aws_key", "count": 2}]}  # fmt: skip
    assert find.render_saved(answer) == f"Saved {ID_A} (version 1, seq 42)\nredacted: 1 github_token, 2 aws_key"
    assert find.render_saved({**answer, "redactions": []}) == f"Saved {ID_A} (version 1, seq 42)"


# --- errors and more than one request -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_no_node_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    for argv in (("search", "q"), ("list",), ("list", "--all"), ("get", ID_A, "--history"), ("save", "x")):
        assert cli.main([*argv, "--url", url, "--home", str(tmp_path)]) == 2
        out, err = capsys.readouterr()
        refused = f"engram: no Engram node answers at {url} (ConnectionRefusedError). Start one with"
        assert out == "" and err.startswith(refused)


def test_get_of_what_is_no_id_says_where_whole_ids_are(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    for extra in ((), ("--history",)):
        assert cli.main(["get", "memory-2e3f", *extra, "--url", "http://127.0.0.1:9", "--home", str(tmp_path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "is not a memory id: give the whole id (a UUID) or at least its last 4 characters" in err


def test_a_closed_pipe_ends_the_command_quietly(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    read, write = os.pipe()
    os.close(read)
    stdout = open(write, "w", encoding="utf-8")  # noqa: SIM115 - main points it at /dev/null, the test closes it
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        assert cli.main(["version"]) == 0
    finally:
        stdout.close()


class _Node(BaseHTTPRequestHandler):
    """Pages of memories (three, one a page), a memory and its history; every request is recorded."""

    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.requests.append(self.path)
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/v1/memories":
            page = int(query.get("page_token", ["0"])[0])
            ids = [ID_A, ID_B, ID_A.replace("a5b", "a5c")]
            self._answer({"memories": [_memory(ids[page])], "next_page_token": str(page + 1) if page < 2 else None})
        elif url.path == f"/v1/memories/{ID_A}":
            self._answer(_memory(version=2, history=[{"version": 1, "content": "old"}]))
        elif url.path == f"/v1/memories/{ID_A}/history":
            versions = [{"version": 1, "content": "old", "agent_id": "a", "updated_at": "2026-11-20T09:15:42.123Z",
                         "event": "memory_saved", "status": "active"},
                        {"version": 2, "content": "new", "agent_id": "a", "updated_at": "2026-11-21T10:30:00.000Z",
                         "event": "memory_updated", "status": "active"}]  # fmt: skip
            self._answer({"memory_id": ID_A, "versions": versions})
        else:
            self.send_error(404)

    def _answer(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Node.requests = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_list_all_reads_every_page_into_one_table(stand_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--all", "--limit", "1", "--url", stand_in]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["ID", "…2e3f4a5b", "…12345678", "…2e3f4a5c"]
    assert [p.split("?")[1] for p in _Node.requests] == ["limit=1", "limit=1&page_token=1", "limit=1&page_token=2"]


def test_list_all_json_is_one_document(stand_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--all", "--json", "--url", stand_in]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [m["id"][-3:] for m in document["memories"]] == ["a5b", "678", "a5c"]
    assert document["next_page_token"] is None


def test_list_shows_the_first_page_and_how_to_see_more(stand_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "--url", stand_in]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("(the 1 newest; more: --all")


def test_get_json_is_the_apis_answer_unchanged(stand_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["get", ID_A, "--history", "--json", "--url", stand_in]) == 0
    assert json.loads(capsys.readouterr().out) == _memory(version=2, history=[{"version": 1, "content": "old"}])
    assert _Node.requests == [f"/v1/memories/{ID_A}"]


def test_get_history_adds_every_version(stand_in: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["get", ID_A, "--history", "--url", stand_in]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Memory {ID_A}\n") and "--history)" not in out
    assert f"\n\nMemory {ID_A}: 2 versions, oldest first\n  v1  2026-11-20T09:15:42.123Z  saved by a" in out
    assert "  v2  2026-11-21T10:30:00.000Z  updated by a  [active]\n      new" in out
