"""Tool profiles without a node: the names ENGRAM_MCP_TOOLS and `engram mcp --tools` accept are the profiles the
gateway has, an unknown one is refused where it is given, and a request's profile is read from its URL or header."""

from __future__ import annotations

import pytest

from engram import cli
from engram.config import MCP_TOOL_PROFILES, Settings, SettingsError
from engram.errors import InvalidArgument
from engram.services.gateway.mcp.profiles import PROFILES, requested_profile


def test_the_setting_names_the_profiles_the_gateway_has() -> None:
    assert tuple(PROFILES) == MCP_TOOL_PROFILES
    assert Settings().mcp_tools == "core"  # the everyday tools unless a client or the node asks for more
    assert Settings.from_env({"ENGRAM_MCP_TOOLS": "full"}).mcp_tools == "full"


def test_an_unknown_profile_setting_is_refused_at_startup_with_the_profiles_named() -> None:
    with pytest.raises(SettingsError, match=r"ENGRAM_MCP_TOOLS must be 'full' .* or 'core' .*got 'tiny'"):
        Settings.from_env({"ENGRAM_MCP_TOOLS": "tiny"})


def test_engram_mcp_tools_is_the_setting_and_refuses_an_unknown_profile(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli.build_parser().parse_args(["mcp", "--tools", "full"])
    assert cli._settings(args).mcp_tools == "full"
    assert cli._settings(cli.build_parser().parse_args(["mcp"])).mcp_tools == "core"  # the default
    with pytest.raises(SystemExit) as exited:
        cli.build_parser().parse_args(["mcp", "--tools", "tiny"])
    assert exited.value.code == 2 and "choose from 'full', 'core'" in capsys.readouterr().err


def test_a_request_asks_for_a_profile_by_query_else_header_in_any_case() -> None:
    assert requested_profile(None, None) is None and requested_profile("", " ") is None
    assert requested_profile("Core", None) == "core"
    assert requested_profile(None, "core") == "core"
    assert requested_profile("full", "core") == "full"  # the URL wins
    with pytest.raises(InvalidArgument, match=r"^X-Engram-Tools: 'big' is not a tool profile; use full"):
        requested_profile(None, "big")
