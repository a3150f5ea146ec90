"""The argparse classes of the `engram` parser, apart from engram.cli.common so that a command line parsed without
argparse (engram.cli.quick) does not import it."""

from __future__ import annotations

import argparse

from engram.cli.common import terminal_columns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, as wide as argparse makes it, without its import of shutil (terminal_columns)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(
            prog, indent_increment, max_help_position, terminal_columns(80) - 2 if width is None else width
        )


class Unfilled(argparse.ArgumentParser):
    """The parser of a command that this command line does not run (another of its group): named by the root parser
    as before (its usage, help and choices), but never built: an argparse parser costs ~1 ms (gettext lookups) and
    each option ~0.2 ms more (a help formatter), and a group's other commands add dozens."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # never parses: nothing to set up
        pass

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def add_mutually_exclusive_group(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def add_subparsers(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def add_parser(self, *args: Any, **kwargs: Any) -> Any:  # what add_subparsers returned is asked for parsers
        return self

    def set_defaults(self, *args: Any, **kwargs: Any) -> None:
        return None


class VersionAction(argparse.Action):
    """--version, which reads the version only when asked (importlib.metadata costs ~20 ms on every command)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, default=argparse.SUPPRESS, help="the version")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from engram.cli import print_version

        print_version(with_name=True)
        parser.exit()
