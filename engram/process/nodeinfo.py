"""What a running node records in its data dir (node.json), read by clients that find or start it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

NODE_FILE = "node.json"


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What node.json says about the running node of a data dir."""

    pid: int
    http_url: str
    grpc_address: str
    home: str
    nats_url: str = ""
    dev: bool = True

    @property
    def mcp_url(self) -> str:
        return f"{self.http_url}/mcp"


def read_node_info(home: Path) -> NodeInfo | None:
    """The node recorded for this data dir, if its process is still alive."""
    try:
        data = json.loads((home / NODE_FILE).read_text())
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
