"""One data dir has exactly one owner: an exclusive lock on node.lock, held for as long as a node runs on it."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from engram.process.nodeinfo import read_node_info

LOCK_FILE = "node.lock"


class NodeRunningError(RuntimeError):
    """Another process already owns this data dir."""


@contextlib.contextmanager
def owner_lock(home: Path) -> Iterator[IO[str]]:
    """Holds the data dir's lock until the context exits; raises NodeRunningError, naming the running node, when
    another process holds it. A child given the open file (the supervised node) shares the lock."""
    home.mkdir(parents=True, exist_ok=True)
    handle = open(home / LOCK_FILE, "a+")  # noqa: SIM115 - held until the context exits
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as e:
        handle.close()
        running = read_node_info(home)
        where = f" (pid {running.pid}, MCP at {running.mcp_url})" if running else ""
        raise NodeRunningError(
            f"An Engram node already runs for {home}{where}. Use it, stop it, or pass --home for another data dir."
        ) from e
    try:
        yield handle
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
