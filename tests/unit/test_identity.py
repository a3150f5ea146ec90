"""Caller resolution of the gateway: keys, dev mode, the agent, device and team resolution orders, Claude Code
team detection, the refusal of unnamed callers, scopes and the bind check."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from engram.config import Settings, SettingsError
from engram.errors import InvalidArgument, PermissionDenied, Unauthenticated
from engram.keys import KeyStore
from engram.model import Caller
from engram.services.gateway.identity import (
    ANONYMOUS_AGENT,
    CLAUDE_TEAMS_READ,
    DEV_NAMESPACE,
    MCP_SOURCE,
    LocalTeam,
    RequestIdentity,
    Resolver,
    bearer_token,
    check_bind,
    newest_claude_team,
    require_scope,
)
from engram.services.gateway.mcp.stdio import claude_code_team


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    return KeyStore(tmp_path / "keys.json")


@pytest.fixture
def alice_key(keys: KeyStore) -> str:
    _, secret = keys.create(namespace="team-a", agent="alice")
    return secret


@pytest.fixture
def shared_key(keys: KeyStore) -> str:
    _, secret = keys.create(namespace="team-a")
    return secret


def dev_settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(home=tmp_path, host="127.0.0.1", **changes)  # type: ignore[arg-type]


def secured_settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(home=tmp_path, host="127.0.0.1", dev_mode=False, **changes)  # type: ignore[arg-type]


def http(
    key: str | None = None,
    *,
    agent_header: str | None = None,
    agent_query: str | None = None,
    client: str | None = None,
    device: str | None = None,
    team: str | None = None,
    peer: str | None = None,
) -> RequestIdentity:
    headers = {}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    if agent_header is not None:
        headers["X-Engram-Agent-ID"] = agent_header
    if device is not None:
        headers["X-Engram-Device"] = device
    if team is not None:
        headers["X-Engram-Team"] = team
    query = {"agent_id": agent_query} if agent_query is not None else {}
    return RequestIdentity.from_http(Headers(headers), query, client, client_host=peer)


# --- agent resolution order --------------------------------------------------------------------------------


def test_with_a_shared_key_the_agent_header_wins_over_query_and_client_name(
    tmp_path: Path, keys: KeyStore, shared_key: str
) -> None:
    resolver = Resolver(dev_settings(tmp_path), keys)
    caller = resolver.resolve(http(shared_key, agent_header="hdr-agent", agent_query="q-agent", client="cursor"))
    assert caller.agent_id == "hdr-agent"
    assert not caller.agent_from_key


def test_with_a_shared_key_the_agent_query_parameter_wins_over_client_name(
    tmp_path: Path, keys: KeyStore, shared_key: str
) -> None:
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(shared_key, agent_query="q-agent", client="cursor")).agent_id == "q-agent"


@pytest.mark.parametrize("settings", [dev_settings, secured_settings])
@pytest.mark.parametrize(
    ("request_identity", "where"),
    [
        (dict(agent_header="bob"), "Drop the X-Engram-Agent-ID header"),
        (dict(agent_query="bob"), "Drop the ?agent_id= parameter"),
        (dict(agent_header="alice", agent_query="bob@laptop"), "Drop the ?agent_id= parameter"),
        (dict(agent_header="bob@alice"), "Drop the X-Engram-Agent-ID header"),
    ],
)
def test_a_key_bound_to_an_agent_cannot_speak_for_another(
    tmp_path: Path,
    keys: KeyStore,
    alice_key: str,
    settings: Callable[[Path], Settings],
    request_identity: dict[str, str],
    where: str,
) -> None:
    with pytest.raises(PermissionDenied) as info:
        Resolver(settings(tmp_path), keys).resolve(http(alice_key, **request_identity))
    message = str(info.value)
    assert "This key acts as 'alice'; it cannot speak for 'bob'." in message
    assert f"{where} or use bob's key." in message


def test_a_bound_stdio_key_ignores_engram_agent_id(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    # ENGRAM_AGENT_ID is a fallback for shared keys; with a bound key it is not consulted (and grants nothing).
    resolver = Resolver(secured_settings(tmp_path, api_key=alice_key, agent_id="bob"), keys, stdio=True)
    caller = resolver.resolve(RequestIdentity(client_name="bob"))
    assert (caller.agent_id, caller.agent_from_key) == ("alice", True)


def test_a_key_bound_to_an_agent_may_repeat_its_name_with_a_device(
    tmp_path: Path, keys: KeyStore, alice_key: str
) -> None:
    resolver = Resolver(secured_settings(tmp_path), keys)
    caller = resolver.resolve(http(alice_key, agent_header="alice@phone", agent_query="alice"))
    assert (caller.agent_id, caller.device, caller.agent_from_key) == ("alice", "phone", True)


def test_a_sync_key_naming_several_agents_speaks_only_for_one_of_them(tmp_path: Path, keys: KeyStore) -> None:
    # A device's sync key names the agents that work on it ("robot,planner"): a request acts as one of them.
    _, secret = keys.create(namespace="robots", agent="robot,planner", device="jetson-1", scopes=("sync",))
    resolver = Resolver(secured_settings(tmp_path), keys)
    caller = resolver.resolve(http(secret, agent_header="planner@arm"))
    assert (caller.agent_id, caller.device, caller.agent_from_key) == ("planner", "jetson-1", True)
    with pytest.raises(PermissionDenied, match="This key acts as 'robot' or 'planner'; it cannot speak for 'bob'"):
        resolver.resolve(http(secret, agent_query="bob"))
    with pytest.raises(InvalidArgument, match=r"names several agents \('robot' or 'planner'\): send X-Engram-Agent-ID"):
        resolver.resolve(http(secret, client="robot"))


def test_a_bound_key_ignores_the_mcp_client_name(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    # Clients send their product's name ("bob" here); that is not a claim to refuse, only a source.
    caller = Resolver(secured_settings(tmp_path), keys).resolve(http(alice_key, client="bob"))
    assert (caller.agent_id, caller.source, caller.agent_from_key) == ("alice", "bob", True)


def test_key_agent_wins_over_client_name(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    resolver = Resolver(dev_settings(tmp_path), keys)
    assert resolver.resolve(http(alice_key, client="cursor")).agent_id == "alice"


def test_client_name_names_an_anonymous_caller(tmp_path: Path, keys: KeyStore) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(client="claude-code"))
    assert caller.agent_id == "claude-code"
    assert caller.source == "claude-code"


def test_client_name_with_spaces_becomes_a_usable_agent_id(tmp_path: Path, keys: KeyStore) -> None:
    assert Resolver(dev_settings(tmp_path), keys).resolve(http(client="Claude Code")).agent_id == "Claude-Code"


def test_unusable_client_name_falls_back_instead_of_failing(tmp_path: Path, keys: KeyStore) -> None:
    assert Resolver(dev_settings(tmp_path), keys).resolve(http(client="***")).agent_id == ANONYMOUS_AGENT


def test_stdio_uses_engram_agent_id_after_client_name(tmp_path: Path, keys: KeyStore) -> None:
    resolver = Resolver(dev_settings(tmp_path, agent_id="robot-7"), keys, stdio=True)
    assert resolver.resolve(RequestIdentity()).agent_id == "robot-7"
    assert resolver.resolve(RequestIdentity(client_name="cursor")).agent_id == "cursor"


def test_anonymous_when_nothing_names_the_agent(tmp_path: Path, keys: KeyStore) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http())
    assert caller == Caller(DEV_NAMESPACE, ANONYMOUS_AGENT, "rest", frozenset({"read", "write", "packs"}))


def test_http_ignores_the_server_processes_own_agent_id_and_key(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    # ENGRAM_API_KEY / ENGRAM_AGENT_ID are for stdio clients; a gateway started with them set must not hand
    # that identity to every anonymous HTTP caller.
    resolver = Resolver(secured_settings(tmp_path, api_key=alice_key, agent_id="robot-7"), keys)
    with pytest.raises(Unauthenticated):
        resolver.resolve(http())
    dev = Resolver(dev_settings(tmp_path, api_key=alice_key, agent_id="robot-7"), keys)
    assert dev.resolve(http()) == Caller(DEV_NAMESPACE, ANONYMOUS_AGENT, "rest", frozenset({"read", "write", "packs"}))


@pytest.mark.parametrize(
    ("request_identity", "field"),
    [
        (RequestIdentity(agent_header="bad agent"), "X-Engram-Agent-ID"),
        (RequestIdentity(agent_query="-flag"), "agent_id"),
    ],
)
def test_bad_agent_id_is_rejected_naming_where_it_came_from(
    tmp_path: Path, keys: KeyStore, request_identity: RequestIdentity, field: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        Resolver(dev_settings(tmp_path), keys).resolve(request_identity)
    assert info.value.code == "invalid_argument"
    assert info.value.field == field
    assert "invalid agent id" in str(info.value)


def test_bad_engram_agent_id_is_rejected_for_stdio(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(InvalidArgument, match="ENGRAM_AGENT_ID"):
        Resolver(dev_settings(tmp_path, agent_id="no spaces please"), keys, stdio=True).resolve(RequestIdentity())


# --- agent@device: the owner is the agent, the device is recorded apart -----------------------------------


@pytest.mark.parametrize(
    "request_identity",
    [
        RequestIdentity(agent_header="claude-code@laptop"),
        RequestIdentity(agent_query="claude-code@laptop"),
        RequestIdentity(client_name="claude-code@laptop"),
    ],
)
def test_agent_at_device_is_split_into_owner_and_device(
    tmp_path: Path, keys: KeyStore, request_identity: RequestIdentity
) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(request_identity)
    assert (caller.agent_id, caller.device, caller.identity) == ("claude-code", "laptop", "claude-code@laptop")


def test_agent_id_splits_at_its_last_at_sign(tmp_path: Path, keys: KeyStore) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(agent_header="bot@lab@jetson-7"))
    assert (caller.agent_id, caller.device) == ("bot@lab", "jetson-7")


def test_key_agent_at_device_is_split(tmp_path: Path, keys: KeyStore) -> None:
    _, secret = keys.create(namespace="team-a", agent="gemini-cli@desktop")
    caller = Resolver(secured_settings(tmp_path), keys).resolve(http(secret))
    assert (caller.agent_id, caller.device) == ("gemini-cli", "desktop")


def test_engram_agent_id_at_device_is_split_for_stdio(tmp_path: Path, keys: KeyStore) -> None:
    resolver = Resolver(dev_settings(tmp_path, agent_id="robot@jetson-7", device="ignored"), keys, stdio=True)
    caller = resolver.resolve(RequestIdentity())
    assert (caller.agent_id, caller.device) == ("robot", "jetson-7")


def test_bad_device_part_of_an_agent_id_is_refused_naming_the_header(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(InvalidArgument) as info:
        Resolver(dev_settings(tmp_path), keys).resolve(http(agent_header="alice@" + "d" * 65))
    assert info.value.field == "X-Engram-Agent-ID"
    assert "device part" in str(info.value)


# --- device resolution order -------------------------------------------------------------------------------


def test_device_header_wins_over_key_device_and_agent_device(tmp_path: Path, keys: KeyStore) -> None:
    _, secret = keys.create(namespace="team-a", agent="alice@from-agent", device="from-key")
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(secret, device="from-header", peer="127.0.0.1")).device == "from-header"


def test_key_device_wins_over_agent_device(tmp_path: Path, keys: KeyStore) -> None:
    _, secret = keys.create(namespace="team-a", agent="alice@from-agent", device="from-key")
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(secret, agent_header="alice@from-header-agent")).device == "from-key"


def test_agent_device_wins_over_the_local_host(tmp_path: Path, keys: KeyStore) -> None:
    resolver = Resolver(dev_settings(tmp_path, device="gateway-host"), keys)
    assert resolver.resolve(http(agent_header="alice@laptop", peer="127.0.0.1")).device == "laptop"
    stdio = Resolver(dev_settings(tmp_path, device="this-host"), keys, stdio=True)
    assert stdio.resolve(RequestIdentity(client_name="cursor@laptop")).device == "laptop"


def test_a_device_the_request_names_for_the_keys_agent_wins_over_the_keys_agent_device(
    tmp_path: Path, keys: KeyStore
) -> None:
    _, secret = keys.create(namespace="team-a", agent="alice@key-device")
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(secret, agent_header="alice@phone")).device == "phone"
    assert resolver.resolve(http(secret, agent_header="alice")).device == "key-device"


def test_stdio_device_is_engram_device_defaulting_to_the_host_name(tmp_path: Path, keys: KeyStore) -> None:
    assert Resolver(dev_settings(tmp_path, device="jetson-7"), keys, stdio=True).resolve(RequestIdentity()).device == (
        "jetson-7"
    )
    assert Resolver(dev_settings(tmp_path), keys, stdio=True).resolve(RequestIdentity()).device == socket.gethostname()


@pytest.mark.parametrize("peer", ["127.0.0.1", "127.5.0.1", "::1", "::ffff:127.0.0.1", "localhost"])
def test_http_caller_on_the_same_machine_gets_the_host_name(tmp_path: Path, keys: KeyStore, peer: str) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(agent_header="alice", peer=peer))
    assert caller.device == socket.gethostname()


@pytest.mark.parametrize("peer", ["192.168.1.20", "10.0.0.7", "2001:db8::1", "testclient", None])
def test_http_caller_from_elsewhere_has_no_device_unless_it_says(
    tmp_path: Path, keys: KeyStore, peer: str | None
) -> None:
    resolver = Resolver(dev_settings(tmp_path, device="gateway-host"), keys)
    assert resolver.resolve(http(agent_header="alice", peer=peer)).device == ""
    assert resolver.resolve(http(agent_header="alice", peer=peer, device="laptop")).device == "laptop"


@pytest.mark.parametrize("device", ["my laptop", "a@b", "-x", "d" * 65])
def test_bad_device_header_is_refused_naming_it(tmp_path: Path, keys: KeyStore, device: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        Resolver(dev_settings(tmp_path), keys).resolve(http(device=device))
    assert info.value.field == "X-Engram-Device"
    assert "invalid device" in str(info.value)


def test_bad_engram_device_is_refused_naming_it(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(InvalidArgument, match="ENGRAM_DEVICE"):
        Resolver(dev_settings(tmp_path, device="my laptop"), keys, stdio=True).resolve(RequestIdentity())


def test_from_request_reads_headers_query_and_peer() -> None:
    from starlette.requests import Request

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"agent_id=q-agent",
        "headers": [(b"x-engram-device", b"laptop"), (b"x-engram-team", b"auth"), (b"authorization", b"Bearer k")],
        "client": ("127.0.0.1", 50000),
    }
    identity = RequestIdentity.from_request(Request(scope), "cursor")
    assert identity == RequestIdentity(
        authorization="Bearer k", agent_query="q-agent", client_name="cursor", device_header="laptop",
        team_header="auth", client_host="127.0.0.1",
    )  # fmt: skip
    assert RequestIdentity.from_request(None, "cursor") == RequestIdentity(client_name="cursor")


# --- team resolution order ---------------------------------------------------------------------------------


def test_team_header_wins_over_key_team(tmp_path: Path, keys: KeyStore) -> None:
    _, secret = keys.create(namespace="team-a", agent="alice", team="from-key")
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(secret, team="from-header")).team == "from-header"
    assert resolver.resolve(http(secret)).team == "from-key"


def test_key_team_wins_over_the_stdio_team(tmp_path: Path, keys: KeyStore) -> None:
    _, secret = keys.create(namespace="team-a", agent="alice", team="from-key")
    resolver = Resolver(secured_settings(tmp_path, api_key=secret, team="from-env"), keys, stdio=True)
    assert resolver.resolve(RequestIdentity()).team == "from-key"


def test_http_callers_never_get_the_gateways_own_team(tmp_path: Path, keys: KeyStore) -> None:
    # ENGRAM_TEAM and ~/.claude/teams describe the machine the gateway runs on, not its HTTP callers.
    claude = claude_dir(tmp_path, [("auth", {})])
    local = LocalTeam("gateway-team", environ={"CLAUDE_TEAM_NAME": "x"}, claude_dir=claude)
    resolver = Resolver(dev_settings(tmp_path, team="gateway-team"), keys, local_team=local)
    assert resolver.resolve(http(agent_header="alice", peer="127.0.0.1")).team == ""


def test_stdio_team_order_engram_team_then_claude_team_name_then_claude_code_teams(tmp_path: Path) -> None:
    claude = claude_dir(tmp_path, [("from-config", {})])
    environ = {"CLAUDE_TEAM_NAME": "from-variable"}
    assert LocalTeam("from-setting", environ=environ, claude_dir=claude)() == "from-setting"
    assert LocalTeam(None, environ=environ, claude_dir=claude)() == "from-variable"
    assert LocalTeam(None, environ={"CLAUDE_CODE_TEAM_NAME": "teammate"}, claude_dir=claude)() == "teammate"
    assert LocalTeam("", environ={}, claude_dir=claude)() == "from-config"
    assert LocalTeam(None, environ={}, claude_dir=None)() == ""


def test_an_unusable_claude_team_name_is_skipped(tmp_path: Path) -> None:
    claude = claude_dir(tmp_path, [("from-config", {})])
    assert LocalTeam(None, environ={"CLAUDE_TEAM_NAME": "not a team"}, claude_dir=claude)() == "from-config"


def test_bad_team_header_or_engram_team_is_refused_naming_it(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(InvalidArgument) as info:
        Resolver(dev_settings(tmp_path), keys).resolve(http(team="auth.v2"))
    assert info.value.field == "X-Engram-Team"
    assert "invalid team" in str(info.value)
    with pytest.raises(InvalidArgument, match="ENGRAM_TEAM"):
        Resolver(dev_settings(tmp_path, team="a b"), keys, stdio=True).resolve(RequestIdentity())


def test_stdio_team_is_detected_once_per_process(tmp_path: Path) -> None:
    claude = claude_dir(tmp_path, [("first", {})])
    team = LocalTeam(None, environ={}, claude_dir=claude)
    assert team() == "first"
    write_team(claude, "second", {}, mtime=2_000_000_000)
    assert team() == "first"  # cached: the files are not read again
    assert LocalTeam(None, environ={}, claude_dir=claude)() == "second"


def test_stdio_server_finds_claude_code_teams_where_claude_code_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = claude_dir(tmp_path / "elsewhere", [("moved", {})])
    monkeypatch.delenv("CLAUDE_TEAM_NAME", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_TEAM_NAME", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved))
    assert claude_code_team(dev_settings(tmp_path))() == "moved"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    claude_dir(tmp_path / "home", [("at-home", {})], name=".claude")
    assert claude_code_team(dev_settings(tmp_path))() == "at-home"
    assert claude_code_team(dev_settings(tmp_path, team="configured"))() == "configured"


# --- ~/.claude/teams detection -----------------------------------------------------------------------------


def write_team(claude: Path, name: str, config: dict[str, object] | str, *, mtime: float) -> Path:
    path = claude / "teams" / name / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else json.dumps({"name": name, **config}))
    os.utime(path, (mtime, mtime))
    return path


def claude_dir(root: Path, teams: list[tuple[str, dict[str, object] | str]], *, name: str = "claude") -> Path:
    """A Claude Code config dir with ``teams`` written oldest first (one second apart)."""
    claude = root / name
    (claude / "teams").mkdir(parents=True, exist_ok=True)
    for i, (team, config) in enumerate(teams):
        write_team(claude, team, config, mtime=1_700_000_000 + i)
    return claude


LEAD = {"agentId": "team-lead@x", "name": "team-lead", "agentType": "team-lead"}


def member(name: str, **fields: object) -> dict[str, object]:
    return {"agentId": f"{name}@x", "name": name, "agentType": "general-purpose", **fields}


def test_newest_team_wins(tmp_path: Path) -> None:
    claude = claude_dir(tmp_path, [("old", {"members": [LEAD]}), ("auth", {"members": [LEAD]}), ("mid", {})])
    write_team(claude, "auth", {"members": [LEAD, member("worker-1")]}, mtime=1_800_000_000)  # a member joined
    assert newest_claude_team(claude) == "auth"


def test_broken_or_foreign_configs_are_skipped(tmp_path: Path) -> None:
    claude = claude_dir(
        tmp_path,
        [
            ("good", {"members": [LEAD]}),
            ("half-written", '{"name": "half-written", "members": ['),
            ("not-an-object", "[1, 2]"),
            ("binary", ""),
            ("bad.name", {"members": [LEAD]}),
        ],
    )
    (claude / "teams" / "binary" / "config.json").write_bytes(b"\xff\xfe{")
    os.utime(claude / "teams" / "binary" / "config.json", (1_700_000_003, 1_700_000_003))
    (claude / "teams" / "no-config").mkdir()
    assert newest_claude_team(claude) == "good"


def test_team_name_comes_from_the_config_else_the_directory(tmp_path: Path) -> None:
    claude = claude_dir(tmp_path, [("dir-name", '{"members": []}')])
    assert newest_claude_team(claude) == "dir-name"
    write_team(claude, "other-dir", {"name": "named-team"}, mtime=1_800_000_000)
    assert newest_claude_team(claude) == "named-team"


def test_a_team_whose_members_all_stopped_is_skipped(tmp_path: Path) -> None:
    stopped = {"members": [{**LEAD, "isActive": False}, member("worker-1", isActive=False)]}
    running = {"members": [LEAD, member("worker-1", isActive=False)]}  # the lead carries no flag while it runs
    claude = claude_dir(tmp_path, [("running", running), ("stopped", stopped)])
    assert newest_claude_team(claude) == "running"


def test_no_teams_means_no_team(tmp_path: Path) -> None:
    assert newest_claude_team(tmp_path / "missing") == ""
    assert newest_claude_team(claude_dir(tmp_path, [])) == ""


def test_only_the_newest_few_configs_are_read(tmp_path: Path) -> None:
    usable = [("usable", {})]
    broken: list[tuple[str, dict[str, object] | str]] = [(f"broken-{i}", "{") for i in range(CLAUDE_TEAMS_READ)]
    assert newest_claude_team(claude_dir(tmp_path, [*usable, *broken])) == ""


def test_an_oversized_config_is_not_a_team(tmp_path: Path) -> None:
    huge = json.dumps({"name": "huge", "description": "x" * 300_000})
    claude = claude_dir(tmp_path, [("small", {}), ("huge", huge)])
    assert newest_claude_team(claude) == "small"


# --- refusing unnamed callers outside dev mode -------------------------------------------------------------


def test_shared_key_caller_that_names_nobody_is_refused_with_how_to_name_itself(tmp_path: Path, keys: KeyStore) -> None:
    _, shared = keys.create(namespace="team-a")
    with pytest.raises(InvalidArgument) as info:
        Resolver(secured_settings(tmp_path), keys).resolve(http(shared))
    message = str(info.value)
    assert info.value.code == "invalid_argument"  # the key is valid: not a 401
    for how in ("X-Engram-Agent-ID", "?agent_id=", "clientInfo.name", "--agent"):
        assert how in message


def test_shared_key_stdio_caller_is_told_about_engram_agent_id(tmp_path: Path, keys: KeyStore) -> None:
    _, shared = keys.create(namespace="team-a")
    with pytest.raises(InvalidArgument) as info:
        Resolver(secured_settings(tmp_path, api_key=shared), keys, stdio=True).resolve(RequestIdentity())
    for how in ("ENGRAM_AGENT_ID", "clientInfo.name", "--agent"):
        assert how in str(info.value)


def test_shared_key_caller_that_names_itself_is_let_in(tmp_path: Path, keys: KeyStore) -> None:
    _, shared = keys.create(namespace="team-a", device="ci", team="auth")
    resolver = Resolver(secured_settings(tmp_path), keys)
    for request in (
        http(shared, agent_header="alice"),
        http(shared, agent_query="alice"),
        http(shared, client="alice"),
    ):
        caller = resolver.resolve(request)
        assert (caller.namespace, caller.agent_id, caller.device, caller.team) == ("team-a", "alice", "ci", "auth")
    stdio = Resolver(secured_settings(tmp_path, api_key=shared, agent_id="alice"), keys, stdio=True)
    assert stdio.resolve(RequestIdentity()).agent_id == "alice"


def test_unusable_client_name_with_a_shared_key_is_refused_outside_dev_mode(tmp_path: Path, keys: KeyStore) -> None:
    _, shared = keys.create(namespace="team-a")
    with pytest.raises(InvalidArgument, match="X-Engram-Agent-ID"):
        Resolver(secured_settings(tmp_path), keys).resolve(http(shared, client="***"))


def test_dev_mode_keeps_anonymous_for_a_shared_key(tmp_path: Path, keys: KeyStore) -> None:
    _, shared = keys.create(namespace="team-a")
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(shared))
    assert (caller.namespace, caller.agent_id) == ("team-a", ANONYMOUS_AGENT)


# --- keys, dev mode, namespaces --------------------------------------------------------------------------


def test_dev_mode_lets_keyless_callers_into_default_namespace_with_read_write(tmp_path: Path, keys: KeyStore) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(agent_header="bob"), default_source=MCP_SOURCE)
    assert (caller.namespace, caller.agent_id, caller.source) == (DEV_NAMESPACE, "bob", MCP_SOURCE)
    assert caller.scopes == frozenset({"read", "write", "packs"})


def test_invalid_key_is_rejected_even_in_dev_mode(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    wrong = alice_key[:-4] + ("AAAA" if not alice_key.endswith("AAAA") else "BBBB")
    resolver = Resolver(dev_settings(tmp_path), keys)
    for secret in (wrong, "not-a-key"):
        with pytest.raises(Unauthenticated, match="engram keys create"):
            resolver.resolve(http(secret))


def test_revoked_key_is_rejected(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(http(alice_key)).namespace == "team-a"
    keys.revoke(keys.list()[0].key_id)
    with pytest.raises(Unauthenticated):
        resolver.resolve(http(alice_key))


def test_without_dev_mode_a_key_is_required_and_the_error_says_how_to_create_one(
    tmp_path: Path, keys: KeyStore
) -> None:
    with pytest.raises(Unauthenticated) as info:
        Resolver(secured_settings(tmp_path), keys).resolve(http(agent_header="bob"))
    assert "engram keys create --namespace N --agent A" in str(info.value)


def test_public_bind_is_never_dev_mode(tmp_path: Path, keys: KeyStore) -> None:
    settings = Settings(home=tmp_path, host="0.0.0.0", dev_mode=True)
    with pytest.raises(Unauthenticated):
        Resolver(settings, keys).resolve(http())


def test_stdio_acts_with_engram_api_key(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    resolver = Resolver(secured_settings(tmp_path, api_key=alice_key), keys, stdio=True)
    caller = resolver.resolve(RequestIdentity(client_name="cursor"), default_source=MCP_SOURCE)
    assert (caller.namespace, caller.agent_id, caller.source) == ("team-a", "alice", "cursor")


def test_stdio_without_key_outside_dev_mode_names_engram_api_key(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(Unauthenticated, match="ENGRAM_API_KEY"):
        Resolver(secured_settings(tmp_path), keys, stdio=True).resolve(RequestIdentity())


def test_namespace_comes_only_from_the_key(tmp_path: Path, keys: KeyStore, shared_key: str) -> None:
    headers = Headers({"Authorization": f"Bearer {shared_key}", "X-Engram-Namespace": "team-b"})
    request = RequestIdentity.from_http(headers, {"namespace": "team-b", "agent_id": "mallory"})
    caller = Resolver(secured_settings(tmp_path), keys).resolve(request)
    assert caller.namespace == "team-a"
    assert caller.agent_id == "mallory"


def test_key_scopes_are_carried_to_the_caller(tmp_path: Path, keys: KeyStore) -> None:
    _, reader = keys.create(namespace="team-a", agent="reader", scopes=("read",))
    assert Resolver(secured_settings(tmp_path), keys).resolve(http(reader)).scopes == frozenset({"read"})


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Token abc"])
def test_authorization_other_than_bearer_is_rejected(header: str) -> None:
    with pytest.raises(Unauthenticated, match="Bearer"):
        bearer_token(header)


def test_bearer_scheme_is_case_insensitive() -> None:
    assert bearer_token("bearer  engram_x ") == "engram_x"
    assert bearer_token(None) is None
    assert bearer_token("  ") is None


# --- scopes ------------------------------------------------------------------------------------------------


def test_read_only_key_cannot_write_and_is_told_which_scope_it_needs() -> None:
    reader = Caller("team-a", "reader", scopes=frozenset({"read"}))
    require_scope(reader, "read")
    with pytest.raises(PermissionDenied) as info:
        require_scope(reader, "write")
    assert "'write' scope" in str(info.value)


def test_write_only_key_cannot_read() -> None:
    with pytest.raises(PermissionDenied, match="read memories"):
        require_scope(Caller("team-a", "writer", scopes=frozenset({"write"})), "read")


def test_admin_implies_read_and_write() -> None:
    admin = Caller("team-a", "root", scopes=frozenset({"admin"}))
    require_scope(admin, "read")
    require_scope(admin, "write")


# --- bind check --------------------------------------------------------------------------------------------


def test_public_bind_without_keys_is_refused_with_what_to_do(tmp_path: Path, keys: KeyStore) -> None:
    with pytest.raises(SettingsError) as info:
        check_bind(Settings(home=tmp_path, host="0.0.0.0"), keys)
    message = str(info.value)
    assert "0.0.0.0" in message
    assert "engram keys create --namespace N --agent A" in message
    assert "127.0.0.1" in message


def test_public_bind_with_a_key_is_allowed(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    check_bind(Settings(home=tmp_path, host="0.0.0.0"), keys)


def test_loopback_bind_without_keys_is_allowed(tmp_path: Path, keys: KeyStore) -> None:
    check_bind(Settings(home=tmp_path, host="127.0.0.1"), keys)
    check_bind(Settings(home=tmp_path, host="localhost", dev_mode=False), keys)


# --- what a relaying `engram mcp` sends of its stdio settings: X-Engram-Default-* -----------------------------------


def relayed(key: str | None = None, *, client: str | None = None, **headers: str) -> RequestIdentity:
    """An HTTP request as `engram mcp` relays it, with X-Engram-Default-<Name> headers from ``headers``."""
    sent = {f"X-Engram-Default-{name.capitalize()}": value for name, value in headers.items()}
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return RequestIdentity.from_http(Headers(sent), {}, client, client_host="127.0.0.1")


def test_a_relayed_default_agent_comes_after_the_client_name_as_engram_agent_id_does(
    tmp_path: Path, keys: KeyStore, shared_key: str
) -> None:
    resolver = Resolver(secured_settings(tmp_path), keys)
    assert resolver.resolve(relayed(shared_key, agent="robot-7")).agent_id == "robot-7"
    assert resolver.resolve(relayed(shared_key, client="cursor", agent="robot-7")).agent_id == "cursor"
    assert resolver.resolve(relayed(shared_key, client="***", agent="robot-7@desk")).agent_id == "robot-7"
    named = http(shared_key, agent_query="alice")
    request = RequestIdentity.from_http(
        Headers({"Authorization": f"Bearer {shared_key}", "X-Engram-Default-Agent": "robot-7"}), {"agent_id": "alice"}
    )
    assert resolver.resolve(named).agent_id == resolver.resolve(request).agent_id == "alice"


def test_a_relayed_default_agent_never_moves_a_bound_key(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    # No more power than ?agent_id=: a key created with --agent acts as its agent, whatever the header says.
    caller = Resolver(secured_settings(tmp_path), keys).resolve(relayed(alice_key, agent="mallory"))
    assert (caller.agent_id, caller.agent_from_key) == ("alice", True)


def test_a_relayed_default_device_comes_after_what_the_request_and_its_key_name(tmp_path: Path, keys: KeyStore) -> None:
    _, keyed = keys.create(namespace="team-a", agent="alice", device="ci")
    resolver = Resolver(dev_settings(tmp_path, device="gateway-host"), keys)
    assert resolver.resolve(relayed(device="desk")).device == "desk"  # over the gateway's own host name
    assert resolver.resolve(relayed(keyed, device="desk")).device == "ci"
    assert resolver.resolve(relayed(agent="bob@phone", device="desk")).device == "phone"
    with pytest.raises(InvalidArgument, match="X-Engram-Default-Device"):
        resolver.resolve(relayed(device="not a device"))


def test_a_relayed_default_team_comes_after_the_team_header_and_the_keys_team(tmp_path: Path, keys: KeyStore) -> None:
    _, keyed = keys.create(namespace="team-a", agent="alice", team="from-key")
    resolver = Resolver(dev_settings(tmp_path), keys)
    assert resolver.resolve(relayed(team="fleet")).team == "fleet"
    assert resolver.resolve(relayed(keyed, team="fleet")).team == "from-key"
    headers = Headers({"X-Engram-Team": "from-header", "X-Engram-Default-Team": "fleet"})
    assert resolver.resolve(RequestIdentity.from_http(headers, {})).team == "from-header"
    with pytest.raises(InvalidArgument, match="X-Engram-Default-Team"):
        resolver.resolve(relayed(team="no spaces allowed"))
