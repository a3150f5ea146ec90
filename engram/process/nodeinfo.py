"""What a running node records in its data dir (node.json), read by clients that find or start it."""

from __future__ import annotations

import os

from engram import plainjson  # not json, nor pathlib below: an `engram search` reads node.json without them (issue 34)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

NODE_FILE = "node.json"
SPAWN_LOCK = "spawn.lock"  # held by whoever looks for the node to start it, so exactly one process starts it
ATTACH_SOCKET = "run/attach.sock"  # held open by the node's local clients (services/node/node.py NodeControl)
MAX_SOCKET_PATH = 104  # sun_path holds 108 bytes on Linux, 104 on macOS (with the final NUL)


class NodeInfo:
    """What node.json says about the running node of a data dir (a plain class: dataclasses cost a CLI command ~10 ms
    of its start, and every `engram` command that finds the node reads this)."""

    __slots__ = ("dev", "grpc_address", "home", "http_url", "nats_url", "pid")

    def __init__(
        self, pid: int, http_url: str, grpc_address: str, home: str, nats_url: str = "", dev: bool = True
    ) -> None:
        self.pid, self.http_url, self.grpc_address, self.home = pid, http_url, grpc_address, home
        self.nats_url, self.dev = nats_url, dev

    def _fields(self) -> tuple[int, str, str, str, str, bool]:
        return (self.pid, self.http_url, self.grpc_address, self.home, self.nats_url, self.dev)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeInfo) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "NodeInfo(pid={!r}, http_url={!r}, grpc_address={!r}, home={!r}, nats_url={!r}, dev={!r})".format(
            *self._fields()
        )

    @property
    def mcp_url(self) -> str:
        return f"{self.http_url}/mcp"


def read_node_info(home: Path | str) -> NodeInfo | None:
    """The node recorded for this data dir, if its process is still alive."""
    try:
        with open(os.path.join(home, NODE_FILE)) as file:  # as Path.read_text, without pathlib
            data = plainjson.loads(file.read())
        info = NodeInfo(
            int(data["pid"]), data["http_url"], data["grpc_address"], data["home"], data.get("nats_url", ""),
            bool(data.get("dev", False)),
        )  # fmt: skip
    except (OSError, ValueError, KeyError):
        return None
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return info


def attach_socket_path(home: Path) -> Path | None:
    """Where the node of ``home`` counts its local clients, or None when the path is too long for a Unix socket."""
    path = home.resolve() / ATTACH_SOCKET
    return path if len(os.fsencode(path)) < MAX_SOCKET_PATH else None
