"""The source a request names itself (X-Engram-Source): what agents' hooks send so their captures show as `hook`."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from engram.config import Settings
from engram.errors import InvalidArgument
from engram.keys import KeyStore
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
