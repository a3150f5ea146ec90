"""Tests for engram.keys and engram.names: hashed storage, verification, scopes, validation, concurrency."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from engram.keys import SCOPES, ApiKey, KeyStore, KeyStoreError, validate_scopes
from engram.names import (
    is_valid_agent,
    is_valid_namespace,
    split_agent,
    validate_agent,
    validate_device,
    validate_namespace,
    validate_team,
)
from engram.scrub import scrub_text


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "home" / "keys.json"


def test_create_verify_round_trip(path: Path) -> None:
    store = KeyStore(path)
    record, secret = store.create(namespace="team-a", agent="claude@laptop")
    assert record.key_id.startswith("k_")
    assert secret.startswith("engram_" + record.key_id.removeprefix("k_") + "_")
    assert record.namespace == "team-a"
    assert record.agent == "claude@laptop"
    assert record.scopes == frozenset({"read", "write"})
    assert record.created_at > 0
    assert store.verify(secret) == record
    assert store.verify(f"  {secret}\n") == record  # header values often carry whitespace
    assert KeyStore(path).verify(secret) == record  # a fresh process sees it too
    assert len(store) == 1
    assert store.list() == [record]


def test_plaintext_never_written(path: Path) -> None:
    store = KeyStore(path)
    _, secret = store.create(namespace="ns", agent="a")
    raw = path.read_text()
    assert secret not in raw
    # engram_<key id>_<random>: the random part may itself contain "_", so split at the second underscore only.
    assert secret.split("_", 2)[2] not in raw
    entry = json.loads(raw)["keys"][0]
    assert set(entry) == {"key_id", "sha256", "namespace", "agent", "device", "team", "scopes", "created_at"}
    assert len(entry["sha256"]) == 64
    for leftover in path.parent.iterdir():  # no temp file with the secret left behind either
        assert secret not in leftover.read_text()


def test_secrets_are_unique_and_scrubbed(path: Path) -> None:
    store = KeyStore(path)
    secrets_ = {store.create(namespace="ns", agent="a")[1] for _ in range(20)}
    assert len(secrets_) == 20
    assert len({r.key_id for r in store.list()}) == 20
    for secret in secrets_:  # engram.scrub recognises Engram's own keys
        assert scrub_text(f"my key is {secret}").text == "my key is [REDACTED:engram_key]"


def test_wrong_secret_is_rejected(path: Path) -> None:
    store = KeyStore(path)
    _, secret = store.create(namespace="ns", agent="a")
    last = secret[-1]
    tampered = secret[:-1] + ("A" if last != "A" else "B")
    assert store.verify(tampered) is None
    other_id = secret.replace(secret[7:15], "00000000" if secret[7:15] != "00000000" else "11111111")
    assert store.verify(other_id) is None
    for bad in ("", "engram_", "Bearer x", secret[:-1], secret + "x", secret.upper()):
        assert store.verify(bad) is None
    assert store.verify(None) is None  # type: ignore[arg-type]


def test_revoke(path: Path) -> None:
    store = KeyStore(path)
    keep, keep_secret = store.create(namespace="ns", agent="a")
    gone, gone_secret = store.create(namespace="ns", agent="b")
    assert store.revoke(gone.key_id) is True
    assert store.verify(gone_secret) is None
    assert store.verify(keep_secret) == keep
    assert store.list() == [keep]
    assert store.revoke(gone.key_id) is False
    assert store.revoke("k_nothere") is False
    assert len(store) == 1


def test_scopes_and_admin_implies_all(path: Path) -> None:
    store = KeyStore(path)
    reader, _ = store.create(namespace="ns", agent="r", scopes=["read"])
    writer, _ = store.create(namespace="ns", agent="w", scopes=("read", "write"))
    admin, _ = store.create(namespace="ns", agent="root", scopes=["admin"])
    assert (reader.allows("read"), reader.allows("write"), reader.allows("admin")) == (True, False, False)
    assert (writer.allows("read"), writer.allows("write"), writer.allows("admin")) == (True, True, False)
    assert all(admin.allows(s) for s in SCOPES)
    assert admin.scopes == frozenset({"admin"})
    with pytest.raises(ValueError, match="allowed scopes: read, write, admin"):
        admin.allows("delete")
    # Scopes survive the file round trip.
    assert {r.agent: r.scopes for r in KeyStore(path).list()} == {
        "r": frozenset({"read"}),
        "w": frozenset({"read", "write"}),
        "root": frozenset({"admin"}),
    }


def test_validate_scopes() -> None:
    assert validate_scopes("read, write") == frozenset({"read", "write"})
    assert validate_scopes(["admin", "admin"]) == frozenset({"admin"})
    with pytest.raises(ValueError, match=r"'owner'.*allowed scopes: read, write, admin"):
        validate_scopes(["read", "owner"])
    with pytest.raises(ValueError, match="at least one scope"):
        validate_scopes([])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace": "team.a", "agent": "a"}, "invalid namespace"),
        ({"namespace": "team@a", "agent": "a"}, "invalid namespace"),
        ({"namespace": "", "agent": "a"}, "invalid namespace"),
        ({"namespace": "-ns", "agent": "a"}, "invalid namespace"),
        ({"namespace": "ns\n", "agent": "a"}, "invalid namespace"),
        ({"namespace": "n" * 65, "agent": "a"}, "invalid namespace"),
        ({"namespace": "ns", "agent": "has space"}, "invalid agent"),
        ({"namespace": "ns", "agent": "a" * 129}, "invalid agent"),
        ({"namespace": "ns", "agent": "a", "scopes": ["read", "sudo"]}, "allowed scopes"),
        ({"namespace": "ns", "agent": "a@-laptop"}, "device part"),
        ({"namespace": "ns", "device": "my laptop"}, "invalid device"),
        ({"namespace": "ns", "device": "a@b"}, "invalid device"),
        ({"namespace": "ns", "device": "d" * 65}, "invalid device"),
        ({"namespace": "ns", "team": "auth.v2"}, "invalid team"),
        ({"namespace": "ns", "team": "-auth"}, "invalid team"),
    ],
)
def test_create_validates(path: Path, kwargs: dict[str, object], message: str) -> None:
    store = KeyStore(path)
    with pytest.raises(ValueError, match=message):
        store.create(**kwargs)  # type: ignore[arg-type]
    assert not path.exists()


def test_names() -> None:
    for ok in ("ns", "Team_A-1", "n" * 64):
        assert validate_namespace(ok) == ok
        assert is_valid_namespace(ok)
    for ok in ("claude@laptop", "ci.bot-1", "A", "a" * 128):
        assert validate_agent(ok) == ok
        assert is_valid_agent(ok)
    for bad in ("a.b", "a@b", "a b", "_x", "ns*", "ns>", "é", 5, None):
        assert not is_valid_namespace(bad)
    for bad in (".x", "@x", "a b", "a/b", "a\n", "", 5):
        assert not is_valid_agent(bad)
    with pytest.raises(ValueError, match=r"1-64 characters from A-Z a-z 0-9 '_' '-'"):
        validate_namespace("a.b")
    with pytest.raises(ValueError, match=r"1-128 characters from A-Z a-z 0-9 '_' '-' '\.' '@'"):
        validate_agent("a b")


def test_device_and_team_names() -> None:
    for ok in ("laptop", "jetson-7.lab", "Johns-MacBook-Pro.local", "d" * 64):
        assert validate_device(ok) == ok
    for bad in ("", ".x", "a@b", "a b", "d" * 65, 5):
        with pytest.raises(ValueError, match="invalid device"):
            validate_device(bad)
    for ok in ("auth", "team_1", "t" * 64):
        assert validate_team(ok) == ok
    for bad in ("", "a.b", "a b", "_x", "t" * 65, None):
        with pytest.raises(ValueError, match=r"invalid team .*1-64 characters"):
            validate_team(bad)


def test_agent_ids_split_at_the_last_at_sign() -> None:
    assert split_agent("claude-code@laptop") == ("claude-code", "laptop")
    assert split_agent("claude-code") == ("claude-code", "")
    assert split_agent("ci.bot@host@jetson-1") == ("ci.bot@host", "jetson-1")
    assert split_agent("alice@") == ("alice", "")
    with pytest.raises(ValueError, match=r"device part must use 1-64 characters"):
        split_agent("alice@" + "d" * 65)
    with pytest.raises(ValueError, match="invalid agent id"):
        split_agent("a b@laptop")


def test_shared_key_with_device_and_team_round_trips(path: Path) -> None:
    store = KeyStore(path)
    record, secret = store.create(namespace="ns", device="jetson-7", team="auth", scopes=["read"])
    assert (record.agent, record.device, record.team) == ("", "jetson-7", "auth")
    assert KeyStore(path).verify(secret) == record
    entry = json.loads(path.read_text())["keys"][0]
    assert (entry["agent"], entry["device"], entry["team"]) == ("", "jetson-7", "auth")
    plain, _ = store.create(namespace="ns", agent="claude@laptop")
    assert (plain.agent, plain.device, plain.team) == ("claude@laptop", "", "")


def test_key_file_from_before_devices_and_teams_still_loads(path: Path) -> None:
    # The format written before keys had a device and a team (or could be shared).
    store = KeyStore(path)
    _, secret = store.create(namespace="ns", agent="claude-code")
    data = json.loads(path.read_text())
    for entry in data["keys"]:
        del entry["device"], entry["team"]
    path.write_text(json.dumps(data))
    record = KeyStore(path).verify(secret)
    assert record is not None
    assert (record.agent, record.device, record.team) == ("claude-code", "", "")


@pytest.mark.parametrize(("field", "value"), [("device", "a b"), ("team", "a.b"), ("agent", None)])
def test_a_bad_device_team_or_agent_in_the_file_is_corrupt(path: Path, field: str, value: object) -> None:
    store = KeyStore(path)
    store.create(namespace="ns", agent="a")
    data = json.loads(path.read_text())
    data["keys"][0][field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(KeyStoreError, match="corrupt"):
        KeyStore(path).list()


def test_missing_file_means_no_keys(path: Path) -> None:
    store = KeyStore(path)
    assert len(store) == 0
    assert store.list() == []
    assert store.verify("engram_00000000_" + "A" * 43) is None
    assert not path.exists()  # reading never creates the file


def test_reload_after_another_instance_writes(path: Path) -> None:
    server = KeyStore(path)
    assert len(server) == 0  # cached "no file"
    cli = KeyStore(path)
    record, secret = cli.create(namespace="ns", agent="a")
    assert server.verify(secret) == record  # picked up without a restart
    second, second_secret = cli.create(namespace="ns", agent="b")
    assert server.verify(second_secret) == second
    assert cli.revoke(record.key_id)
    assert server.verify(secret) is None
    assert server.list() == [second]
    path.unlink()
    assert len(server) == 0
    assert server.verify(second_secret) is None


def test_file_modes(path: Path) -> None:
    KeyStore(path).create(namespace="ns", agent="a")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lock = path.with_name(path.name + ".lock")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["keys.json", "keys.json.lock"]


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"keys": 5}', '{"keys": [{"key_id": "k_1"}]}', '{"format": 9, "keys": []}'],
)
def test_corrupt_file_names_the_path(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(content)
    store = KeyStore(path)
    with pytest.raises(KeyStoreError, match=str(path)):
        len(store)
    with pytest.raises(KeyStoreError, match="corrupt"):
        store.create(namespace="ns", agent="a")
    assert path.read_text() == content  # not overwritten


def test_api_key_has_no_secret() -> None:
    record = ApiKey("k_0123abcd", "ns", "a", frozenset({"read"}), 1.0)
    assert "engram_" not in repr(record)
    assert [f.name for f in dataclasses.fields(record)] == [
        "key_id",
        "namespace",
        "agent",
        "scopes",
        "created_at",
        "device",
        "team",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.agent = "other"  # type: ignore[misc]


def _create_many(path: str, worker: int, count: int) -> list[str]:
    store = KeyStore(Path(path))
    return [store.create(namespace="ns", agent=f"worker-{worker}")[1] for _ in range(count)]


def test_concurrent_processes_keep_all_keys(path: Path) -> None:
    workers, per_worker = 4, 15
    # spawn: a fresh interpreter per worker, like separate `engram keys create` invocations.
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        results = pool.starmap(_create_many, [(str(path), w, per_worker) for w in range(workers)])
    secrets_ = [s for batch in results for s in batch]
    store = KeyStore(path)
    assert len(store) == workers * per_worker
    assert len({store.verify(s).key_id for s in secrets_}) == workers * per_worker  # type: ignore[union-attr]
    assert {r.agent for r in store.list()} == {f"worker-{w}" for w in range(workers)}
    assert not [p for p in os.listdir(path.parent) if p.endswith(".tmp")]


# --- the `engram keys` command -------------------------------------------------------------------------------


def test_cli_creates_a_shared_key_with_device_and_team_and_lists_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    home = ["--home", str(tmp_path)]
    assert main(["keys", "create", *home, "--namespace", "ns", "--device", "jetson-7", "--team", "auth"]) == 0
    created = capsys.readouterr()
    record = KeyStore(tmp_path / "keys.json").verify(created.out.strip())
    assert record is not None
    assert (record.agent, record.device, record.team) == ("", "jetson-7", "auth")
    assert "shared (each caller names itself" in created.err
    assert "device 'jetson-7', team 'auth'" in created.err
    assert main(["keys", "create", *home, "--namespace", "ns", "--agent", "claude@laptop", "--scopes", "read"]) == 0
    assert "agent 'claude@laptop', scopes read." in capsys.readouterr().err
    assert main(["keys", "list", *home]) == 0
    header, *rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert header == ["KEY_ID", "NAMESPACE", "AGENT", "SCOPES", "DEVICE", "TEAM"]
    assert [row[1:] for row in rows] == [
        ["ns", "-", "read,write", "jetson-7", "auth"],
        ["ns", "claude@laptop", "read", "-", "-"],
    ]


def test_cli_refuses_a_bad_team_saying_what_is_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engram.cli import main

    assert main(["keys", "create", "--home", str(tmp_path), "--namespace", "ns", "--team", "auth.v2"]) == 1
    assert "invalid team 'auth.v2'" in capsys.readouterr().err
    assert not (tmp_path / "keys.json").exists()


def test_a_sync_key_names_the_agents_of_its_device_and_only_a_sync_key_names_several(path: Path) -> None:
    store = KeyStore(path)
    device_key, secret = store.create(namespace="robots", agent="robot,planner", device="jetson-1", scopes=["sync"])
    agent_key, _ = store.create(namespace="robots", agent="claude-code")
    shared_key, _ = store.create(namespace="robots")

    assert device_key.agents == ("robot", "planner") and KeyStore(path).verify(secret) == device_key
    assert (agent_key.agents, shared_key.agents) == (("claude-code",), ())
    with pytest.raises(ValueError, match="only a device's sync key names several agents"):
        store.create(namespace="robots", agent="robot,planner", scopes=["read", "write"])
    with pytest.raises(ValueError, match="invalid agent id"):
        store.create(namespace="robots", agent="robot,,x y", scopes=["sync"])
