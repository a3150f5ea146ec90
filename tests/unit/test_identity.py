"""Caller resolution of the gateway: keys, dev mode, agent resolution order, scopes and the bind check."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from engram.config import Settings, SettingsError
from engram.errors import InvalidArgument, PermissionDenied, Unauthenticated
from engram.keys import KeyStore
from engram.model import Caller
from engram.services.gateway.identity import (
    ANONYMOUS_AGENT,
    DEV_NAMESPACE,
    MCP_SOURCE,
    RequestIdentity,
    Resolver,
    bearer_token,
    check_bind,
    require_scope,
)


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    return KeyStore(tmp_path / "keys.json")


@pytest.fixture
def alice_key(keys: KeyStore) -> str:
    _, secret = keys.create(namespace="team-a", agent="alice")
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
) -> RequestIdentity:
    headers = {}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    if agent_header is not None:
        headers["X-Engram-Agent-ID"] = agent_header
    query = {"agent_id": agent_query} if agent_query is not None else {}
    return RequestIdentity.from_http(Headers(headers), query, client)


# --- agent resolution order --------------------------------------------------------------------------------


def test_agent_header_wins_over_query_key_and_client_name(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    resolver = Resolver(dev_settings(tmp_path), keys)
    caller = resolver.resolve(http(alice_key, agent_header="hdr-agent", agent_query="q-agent", client="cursor"))
    assert caller.agent_id == "hdr-agent"


def test_agent_query_parameter_wins_over_key_agent(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    resolver = Resolver(dev_settings(tmp_path), keys)
    assert resolver.resolve(http(alice_key, agent_query="q-agent", client="cursor")).agent_id == "q-agent"


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
    assert caller == Caller(DEV_NAMESPACE, ANONYMOUS_AGENT, "rest", frozenset({"read", "write"}))


def test_http_ignores_the_server_processes_own_agent_id_and_key(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    # ENGRAM_API_KEY / ENGRAM_AGENT_ID are for stdio clients; a gateway started with them set must not hand
    # that identity to every anonymous HTTP caller.
    resolver = Resolver(secured_settings(tmp_path, api_key=alice_key, agent_id="robot-7"), keys)
    with pytest.raises(Unauthenticated):
        resolver.resolve(http())
    dev = Resolver(dev_settings(tmp_path, api_key=alice_key, agent_id="robot-7"), keys)
    assert dev.resolve(http()) == Caller(DEV_NAMESPACE, ANONYMOUS_AGENT, "rest", frozenset({"read", "write"}))


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


# --- keys, dev mode, namespaces --------------------------------------------------------------------------


def test_dev_mode_lets_keyless_callers_into_default_namespace_with_read_write(tmp_path: Path, keys: KeyStore) -> None:
    caller = Resolver(dev_settings(tmp_path), keys).resolve(http(agent_header="bob"), default_source=MCP_SOURCE)
    assert (caller.namespace, caller.agent_id, caller.source) == (DEV_NAMESPACE, "bob", MCP_SOURCE)
    assert caller.scopes == frozenset({"read", "write"})


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


def test_namespace_comes_only_from_the_key(tmp_path: Path, keys: KeyStore, alice_key: str) -> None:
    headers = Headers({"Authorization": f"Bearer {alice_key}", "X-Engram-Namespace": "team-b"})
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
