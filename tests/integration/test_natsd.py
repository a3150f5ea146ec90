"""The embedded node's private nats-server as it is started: Go's soft memory limit set for it, unless the node's
environment sets one (GOMEMLIMIT), also when it is started again."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.process.natsd import NATS_MEMORY_LIMIT, NatsServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not Path("/proc/self/environ").exists(), reason="reads a process's environment in /proc (Linux)"
    ),
]


def _environment(server: NatsServer) -> list[bytes]:
    return Path(f"/proc/{server.process.pid}/environ").read_bytes().split(b"\0")


def test_the_private_nats_server_has_a_soft_memory_limit_unless_the_environment_sets_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    server = NatsServer.start(tmp_path / "default")
    try:
        assert f"GOMEMLIMIT={NATS_MEMORY_LIMIT}".encode() in _environment(server)
        server.stop()
        server.respawn()
        assert f"GOMEMLIMIT={NATS_MEMORY_LIMIT}".encode() in _environment(server)
    finally:
        server.stop()
    monkeypatch.setenv("GOMEMLIMIT", "300MiB")
    own = NatsServer.start(tmp_path / "own")
    try:
        assert b"GOMEMLIMIT=300MiB" in _environment(own)
    finally:
        own.stop()
