"""`engram agents|teams|consolidate|handoffs`: who works in the shared memory and what they hand over, from a shell,
through the node's REST API (to be filled in)."""

from __future__ import annotations

import argparse
from typing import Any

COMMANDS: frozenset[str] = frozenset()


def add_parsers(subparsers: Any) -> None:
    """Registers the coordination commands on the ``engram`` sub-command parsers."""


def run(args: argparse.Namespace, url: str, *, api_key: str | None) -> int:
    raise NotImplementedError(args.command)
