"""The source a request names itself (X-Engram-Source): what agents' hooks send so their captures show as `hook`."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from engram.config import Settings
from engram.errors import InvalidArgument
from engram.keys import KeyStore
from engram.names import RESERVED_SOURCES, source_of_client
from engram.services.gateway.identity import MCP_SOURCE, REST_SOURCE, RequestIdentity, Resolver


def _resolver(tmp_path: Path) -> Resolver:
    return Resolver(Settings(home=tmp_path, host="127.0.0.1"), KeyStore(tmp_path / "keys.json"))


def _request(headers: dict[str, str], client_name: str | None = None) -> RequestIdentity:
    return RequestIdentity.from_http(Headers(headers), {}, client_name)


def test_a_request_naming_its_source_is_recorded_with_it_over_the_transports_default(tmp_path: Path) -> None:
    resolver = _resolver(tmp_path)
    named = _request({"X-Engram-Agent-ID": "claude-code", "X-Engram-Source": "hook"})
    assert resolver.resolve(named, default_source=REST_SOURCE).source == "hook"
    assert resolver.resolve(_request({"X-Engram-Source": "hook"}, "Claude Code"), default_source=MCP_SOURCE).source == (
        "hook"
    )


def test_without_the_header_the_source_is_the_client_name_or_the_transport(tmp_path: Path) -> None:
    resolver = _resolver(tmp_path)
    assert resolver.resolve(_request({}), default_source=REST_SOURCE).source == REST_SOURCE
    assert resolver.resolve(_request({}, "cursor"), default_source=MCP_SOURCE).source == "cursor"


@pytest.mark.parametrize("value", ["Hook", "a b", "x" * 40, "hook;drop"])
def test_a_source_that_is_not_a_short_lowercase_word_is_refused_with_an_example(tmp_path: Path, value: str) -> None:
    with pytest.raises(InvalidArgument, match="such as 'hook'"):
        _resolver(tmp_path).resolve(_request({"X-Engram-Source": value}))


@pytest.mark.parametrize("value", sorted(RESERVED_SOURCES))
def test_a_source_engram_records_itself_is_refused_in_the_header(tmp_path: Path, value: str) -> None:
    with pytest.raises(InvalidArgument, match="is reserved for what Engram itself records") as refused:
        _resolver(tmp_path).resolve(_request({"X-Engram-Source": value}))
    assert refused.value.field == "X-Engram-Source"


@pytest.mark.parametrize(
    ("client_name", "source"),
    [
        ("Claude Code", "claude-code"),
        ("Cursor (1.2)", "cursor-1.2"),
        ("gemini-cli", "gemini-cli"),
        ("a" * 100_000, "a" * 32),
        ("<b>x</b>\r\nSet-Cookie: y", "b-x-b-set-cookie-y"),
        ("evil\u202etxt.exe", "evil-txt.exe"),
        ("42 tools", "tools"),
        ("Admin", MCP_SOURCE),  # reserved: the transport's name instead
        ("\u202e\r\n", MCP_SOURCE),  # nothing usable left
        ("ghp_" + "aB3x" * 9, MCP_SOURCE),  # a token is never kept, not even lower-cased and cut
    ],
)
def test_an_mcp_client_name_becomes_a_safe_source_never_a_refusal(
    tmp_path: Path, client_name: str, source: str
) -> None:
    caller = _resolver(tmp_path).resolve(_request({}, client_name), default_source=MCP_SOURCE)
    assert caller.source == source
    assert source_of_client(client_name) == (None if source == MCP_SOURCE else source)


@pytest.mark.parametrize(
    ("client_name", "agent"),
    [("a" * 200, "anonymous"), ("x\r\ny", "x-y"), ("good\u202egnp", "anonymous"), ("<script>", "anonymous")],
)
def test_a_client_name_names_the_agent_only_when_it_is_a_valid_agent_id(
    tmp_path: Path, client_name: str, agent: str
) -> None:
    # DESIGN.md: clientInfo.name may name the agent of a shared key; an unusable one is skipped (here: dev mode).
    assert _resolver(tmp_path).resolve(_request({}, client_name), default_source=MCP_SOURCE).agent_id == agent
