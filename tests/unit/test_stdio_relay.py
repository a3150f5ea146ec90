"""The stdio relay's pieces (services/node/relay.py): stdin lines and what is left to replay, the routing headers
of a 2026-07-28 request as the MCP SDK checks them, and the team a relay sends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.shared.inbound import decode_header_value

from engram.services.node.relay import Lines, _header_value, _routing_headers, local_team, relay_headers


def test_lines_are_taken_one_by_one_and_the_rest_is_left_to_replay() -> None:
    read, write = os.pipe()
    os.write(write, b'{"id": 1}\n\n{"id": 2}\n{"id": 3')
    lines = Lines(read)
    assert next(lines) == b'{"id": 1}'
    assert lines.unread() == b'{"id": 2}\n{"id": 3'  # what the in-process server reads first when it takes over
    os.close(write)
    assert list(lines) == [b'{"id": 2}', b'{"id": 3']
    os.close(read)


@pytest.mark.parametrize("name", ["ping", "engram://memory/1", "naïve tool", " padded", "=?base64?x?=", "a\r\nb"])
def test_a_name_header_decodes_to_the_name_as_the_sdk_reads_it(name: str) -> None:
    value = _header_value(name)
    assert value.isascii() and value.isprintable()
    assert decode_header_value(value) == name


def test_a_modern_request_carries_its_version_method_and_name() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "engram://recent"}}
    assert _routing_headers(message, "2026-07-28") == {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "engram://recent",
    }  # fmt: skip
    assert "Mcp-Name" not in _routing_headers({"method": "tools/list", "params": {}}, "2026-07-28")


def test_the_relayed_team_is_engram_team_else_the_claude_code_team(tmp_path: Path) -> None:
    (tmp_path / "teams" / "auth").mkdir(parents=True)
    (tmp_path / "teams" / "auth" / "config.json").write_text('{"name": "auth", "members": []}')
    claude = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    assert local_team("fleet", claude) == "fleet"
    assert local_team(None, {**claude, "CLAUDE_TEAM_NAME": "ops"}) == "ops"
    assert local_team(None, {**claude, "CLAUDE_TEAM_NAME": "not a team"}) == "auth"  # skipped, as in-process
    assert local_team(None, claude) == "auth"
    assert local_team(None, {"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}) == ""


def test_http_client_without_ssl_is_forgotten_before_https_is_needed() -> None:
    # The relay's http.client has no ssl; when it hands the session to the in-process server, that one's stack
    # (urllib.request) needs https again.
    probe = (
        "import sys\n"
        "from engram.plainhttp import forget_plain, http_client\n"
        "assert not hasattr(http_client(https=False), 'HTTPSConnection') and 'ssl' not in sys.modules\n"
        "forget_plain()\n"
        "from urllib.request import HTTPSHandler\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_a_setting_no_header_can_carry_is_sent_escaped_for_the_node_to_refuse() -> None:
    headers = relay_headers(api_key=None, tools="core", agent="robot\n7", device="tablé")
    assert (headers["X-Engram-Default-Agent"], headers["X-Engram-Default-Device"]) == ("robot\\n7", "tabl\\xe9")
    assert relay_headers(api_key=" k ", tools="full", agent="claude-code@laptop", device=None) == {
        "X-Engram-Tools": "full", "User-Agent": "engram-mcp-relay", "Authorization": "Bearer k",
        "X-Engram-Default-Agent": "claude-code@laptop",
    }  # fmt: skip
