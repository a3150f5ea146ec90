"""The `engram` command: each group module registers its sub-commands, and each sub-command names the function
that runs it (``func``); main parses, reads the settings once, calls it, and turns the expected errors into one line.

The entry points (the `engram` script, ``python -m engram.services.node`` and each service's ``__main__``) are the
only importers of this package: the commands only parse and call the work where it lives (the node and the
services under engram.services, the formats in the kernel)."""

from __future__ import annotations

import os
import sys

# typing stays out of a command's start (PEP 563 annotations, for mypy), and so do argparse, functools and
# collections when engram.cli.quick parses the command line (save, search, list, get).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from engram.config import Settings

# Each group module (engram.cli.<group>) and the commands it registers, in the order of `engram --help`. A command
# imports its group alone: `engram search` never loads what `engram models` or `engram serve` need (a unit test keeps
# this table equal to what each group registers, and another keeps heavy modules out of these imports).
GROUPS: dict[str, tuple[str, ...]] = {
    "node": ("serve", "edge", "mcp", "run", "status"),
    "find": ("save", "search", "list", "get"),
    "sync": ("sync",),
    "keys": ("keys",),
    "vault": ("import", "export"),
    "models": ("models",),
    "memories": ("update", "delete", "supersede", "unsupersede", "history", "at", "stats", "admin"),
    "coordination": ("agents", "teams", "consolidate", "contradictions", "handoffs", "context", "pin", "unpin"),
    "packs": ("packs",),
    "hooks": ("hooks",),
    "index": ("index",),
}
VERSION_FLAGS = ("--version", "version")
# The commands that read no setting but where the node is and the key to it: with no other ENGRAM_* variable set they
# read those three alone (engram.cli.common.NodeSettings) instead of engram.config's Settings, whose ~90 validated
# fields (and the dataclasses and typing they import) were a fifth of `engram search`'s start.
NODE_ONLY_COMMANDS = ("save", "search", "list", "get")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `engram` parser: every group's commands, or only those of the group of ``command`` (when it names one), in
    which only ``command`` is built (the others are named, as the root's usage and help list them)."""
    import argparse
    import importlib

    from engram.cli.argparsing import HelpFormatter, VersionAction
    from engram.cli.common import add_parser

    parser = argparse.ArgumentParser(
        prog="engram", description="Engram: shared memory for AI agents.", formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action=VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True)
    owners = [group for group, commands in GROUPS.items() if command in commands]
    if owners:  # the group's other commands are listed but not filled in (engram.cli.common.sub)
        setattr(subparsers, "engram_only", command)  # noqa: B010  # an attribute of ours on argparse's action
    for group in owners or GROUPS:
        importlib.import_module(f"engram.cli.{group}").register(subparsers)
    add_parser(subparsers, "version", help="print the version").set_defaults(func=_version)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command an ``engram`` command line names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 1 and argv[0] in VERSION_FLAGS:  # answered before any group is imported
        return _answered(lambda: print_version(with_name=argv[0] == "--version"))
    if not argv:  # `engram` alone: what it can do, not argparse's one line about a missing argument
        from engram.cli.common import EXIT_USAGE

        build_parser().print_help()
        return EXIT_USAGE
    args = _quickly_parsed(argv) or build_parser(command_of(argv)).parse_args(argv)
    args.argv = argv  # serve and edge hand their own command line to the node's supervisor
    try:
        settings = _settings(args)
    except ValueError as e:
        from engram.config import SettingsError  # here: a command that reads no Settings does not import it

        if not isinstance(e, SettingsError):
            raise
        print(f"engram: {e}", file=sys.stderr)
        return 2
    return _answered(lambda: args.func(args, settings))


def run() -> NoReturn:
    """The `engram` script (pyproject's entry point): main() as the whole process. An everyday command (save, search,
    list, get) runs with the cyclic garbage collector off and leaves without the interpreter's teardown: it lives a
    few milliseconds and makes no cycles worth collecting, and collections during its imports and the teardown of its
    modules were ~4 ms of an installed `engram search`'s ~28 (issue 34). Its atexit handlers still run and its output
    is flushed first; every other command ends through sys.exit, as before."""
    if len(sys.argv) < 2 or sys.argv[1] not in NODE_ONLY_COMMANDS:
        sys.exit(main())
    import atexit
    import gc

    gc.disable()
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105  # not contextlib.suppress: contextlib is not loaded, and this is the fast path
            stream.flush()
        except (OSError, ValueError):  # the reader is gone, or the stream was closed: nothing left to say
            pass
    os._exit(code)


def _quickly_parsed(argv: list[str]) -> argparse.Namespace | None:
    """The command line of save, search, list or get as argparse parses it, parsed without argparse (engram.cli.quick);
    None for any other, and for one that asks for help or is not right (argparse says what)."""
    if not argv or argv[0] not in NODE_ONLY_COMMANDS:
        return None
    from engram.cli.quick import parse

    parsed: argparse.Namespace | None = parse(argv)  # type: ignore[assignment]  # what the commands read of one
    return parsed


def _answered(command: Callable[[], int]) -> int:
    """Runs a parsed command: its exit code, or that of the expected error it raised, said in one line."""
    try:
        code = command()
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
    from engram.config import SettingsError
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
    from engram.cli.common import NodeSettings  # here: `engram --version` imports no group and not this

    if args.command in NODE_ONLY_COMMANDS and NodeSettings.enough(os.environ):
        light: Settings = NodeSettings.from_env(os.environ, home=args.home)  # type: ignore[assignment]  # all they read
        return light
    from engram.config import Settings

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
    return print_version(with_name=False)


def print_version(*, with_name: bool) -> int:
    from engram import __version__

    print(f"engram {__version__}" if with_name else __version__)
    return 0
