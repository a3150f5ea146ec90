"""The `engram` command: each group module registers its sub-commands, and each sub-command names the function
that runs it (``func``); main parses, reads the settings once, calls it, and turns the expected errors into one line.

The entry points (the `engram` script, ``python -m engram.services.node`` and each service's ``__main__``) are the
only importers of this package: the commands only parse and call the work where it lives (the node and the
services under engram.services, the formats in the kernel)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from engram.cli import coordination, find, hooks, index, keys, memories, models, node, packs, sync, vault
from engram.config import Settings, SettingsError

GROUPS = (
    node,
    find,
    sync,
    keys,
    vault,
    models,
    memories,
    coordination,
    packs,
    hooks,
    index,
)  # the order of `engram --help`


def build_parser() -> argparse.ArgumentParser:
    from engram import __version__

    parser = argparse.ArgumentParser(prog="engram", description="Engram: shared memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(subparsers)
    subparsers.add_parser("version", help="print the version").set_defaults(func=_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # serve and edge hand their own command line to the node's supervisor
    try:
        settings = _settings(args)
    except SettingsError as e:
        print(f"engram: {e}", file=sys.stderr)
        return 2
    try:
        code: int = args.func(args, settings)
        sys.stdout.flush()  # a reader gone (`engram list | head`) shows here, not in the interpreter's last flush
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except Exception as e:  # the top of the process: one clear line, details in the log
        return _failed(e)


def _reader_gone() -> int:
    """The reader of the output closed it (`engram list --json | head`): it took what it wanted, so exit 0 quietly;
    what is still buffered goes nowhere, else the interpreter's last flush would fail again and say so."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def _failed(error: Exception) -> int:
    """The exit code of an error a user can act on, said in one line (exit 2: a usage problem like a bad flag, such
    as a port in use; exit 1: the rest); anything else is a bug and raised."""
    from engram.embed.embedder import ModelMissing
    from engram.errors import EngramError
    from engram.process.launcher import NodeStartError
    from engram.process.natsd import NatsServerError
    from engram.process.ports import PortInUse
    from engram.services.node.owner import NodeRunningError

    expected = (EngramError, ModelMissing, NodeRunningError, NodeStartError, NatsServerError, SettingsError, ValueError)
    if not isinstance(error, (PortInUse, *expected)):
        raise error
    print(f"engram: {error}", file=sys.stderr)
    return 2 if isinstance(error, PortInUse) else 1


def _settings(args: argparse.Namespace) -> Settings:
    """The settings, with what the command line says over the environment."""
    overrides: dict[str, Any] = {
        "home": getattr(args, "home", None),
        "host": getattr(args, "host", None),
        "port": getattr(args, "port", None),
        "nats_url": getattr(args, "nats_url", None),
        "grpc_listen": getattr(args, "listen", None),
        "ingest_addr": getattr(args, "ingest_addr", None),
        "search_addr": getattr(args, "search_addr", None),
        "consolidation_addr": getattr(args, "consolidation_addr", None),
        "sync_addr": getattr(args, "sync_addr", None),
        "upstream": getattr(args, "upstream", None),
        "upstream_key": getattr(args, "key", None),
        "mcp_tools": getattr(args, "tools", None) if args.command == "mcp" else None,
        "device": getattr(args, "device", None) if args.command == "edge" else None,  # keys create --device: the key's
    }
    return Settings.from_env(**overrides)


def _version(args: argparse.Namespace, settings: Settings) -> int:
    from engram import __version__

    print(__version__)
    return 0
