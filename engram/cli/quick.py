"""`engram save|search|list|get` parsed without argparse: each command's options as its group registers them
(recorded, not built), and its command line read as argparse reads it. A command line that asks for help, holds a
mistake, or has a word argparse might read otherwise (an abbreviated option, --opt=value, --, a value that begins
with -) is not read here (None): argparse parses it and says what it says. argparse, with the re, enum and gettext it
imports and the parser it builds, was ~15 ms of an installed `engram search`'s ~50 (issue 34); a unit test checks
that both read every command line alike."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

_UNSET = object()
# What add_argument may be asked here; any other keyword (nargs="*", const, required options, ...) leaves the
# command to argparse.
_KEYWORDS = frozenset(("action", "choices", "default", "dest", "help", "metavar", "nargs", "type"))
_PARSER_KEYWORDS = frozenset(("description", "epilog", "formatter_class", "help"))


class Namespace:
    """argparse.Namespace, as the commands use it: the parsed values as attributes."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return "Namespace(" + ", ".join(f"{name}={value!r}" for name, value in vars(self).items()) + ")"


def parse(argv: Sequence[str]) -> Namespace | None:
    """argparse's answer for ``engram ARGV`` when ARGV[0] is a command recorded here and the rest reads one way
    only; None when argparse must parse it."""
    if not argv:
        return None
    options = recorded(argv[0])
    return None if options is None else options.parse(argv[1:])


def recorded(command: str) -> Recorder | None:
    """The options of ``command`` as its group registers them, or None when they are more than this parser reads."""
    from engram.cli import GROUPS

    group = next((group for group, commands in GROUPS.items() if command in commands), None)
    if group is None:
        return None
    recorder = Recorder(command)
    __import__(f"engram.cli.{group}", fromlist=("register",)).register(recorder)
    return recorder if recorder.found and recorder.readable else None


class _Option:
    """One add_argument: how it takes its value and where it puts it."""

    __slots__ = ("choices", "dest", "kind", "type")

    def __init__(self, kind: str, dest: str, type: Callable[[str], Any] | None, choices: Any) -> None:
        self.kind, self.dest, self.type, self.choices = kind, dest, type, choices

    def value(self, word: str) -> Any:
        """The option's value of ``word`` (its type, its choices), or _UNSET where argparse would refuse it."""
        try:
            value = word if self.type is None else self.type(word)
        except Exception:  # argparse's error (ArgumentTypeError, ValueError, TypeError) says why
            return _UNSET
        return _UNSET if self.choices is not None and value not in self.choices else value


class Recorder:
    """argparse's sub-command parsers and the parser of one command, as seen by a group's register(): what the
    command's options are (engram.cli.common.add_parser hands a recorder each parser, ``engram_records``), and
    whether this module reads them all (``readable``); another command of the group gets a parser that drops all."""

    engram_records = True

    def __init__(self, command: str) -> None:
        self.command = command
        self.found, self.readable = False, True
        self.options: dict[str, _Option] = {}  # by each option string
        self.positionals: list[tuple[_Option, bool]] = []  # and whether it may be left out (nargs="?")
        self.defaults: dict[str, Any] = {"command": command}  # what argparse's Namespace holds before parsing
        self.set: dict[str, Any] = {}  # set_defaults

    # --- what register() asks of argparse's objects ---

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name != self.command:
            return _Dropped()
        self.found = True
        self.readable &= set(kwargs) <= _PARSER_KEYWORDS
        return self

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        option = self._option(names, kwargs)
        if option is None:
            self.readable = False
            return
        default = kwargs.get("default", False if option.kind == "store_true" else None)
        self.readable &= option.dest not in self.set and not (isinstance(default, str) and option.type is not None)
        self.defaults.setdefault(option.dest, default)
        if not names[0].startswith("-"):
            optional = kwargs.get("nargs") == "?"
            self.readable &= not self.positionals and not (optional and (option.type or option.choices))
            self.positionals.append((option, optional))
            return
        for name in names:
            self.options[name] = option
            if option.kind == "boolean" and name.startswith("--"):
                self.options["--no-" + name[2:]] = option

    def _option(self, names: Sequence[str], kwargs: dict[str, Any]) -> _Option | None:
        """The option (or positional) add_argument(names, kwargs) adds, or None when this module cannot read it."""
        from engram.cli.common import boolean_optional

        if not names or not set(kwargs) <= _KEYWORDS:
            return None
        action = kwargs.get("action")
        kinds = {None: "store", "store": "store", "store_true": "store_true", "append": "append"}
        kind = kinds.get(action) if isinstance(action, str | None) else None
        if action is boolean_optional:
            kind = "boolean"
        positional = not names[0].startswith("-")
        if kind is None or (positional and (kind != "store" or len(names) != 1)):
            return None
        if kwargs.get("nargs") not in ((None, "?") if positional else (None,)):
            return None
        if kind == "append" and kwargs.get("default") is not None:
            return None
        longs = [name for name in names if name.startswith("--")]
        dest = kwargs.get("dest") or (names[0] if positional else (longs or names)[0].lstrip("-").replace("-", "_"))
        return _Option(kind, dest, kwargs.get("type"), kwargs.get("choices"))

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Recorder:
        return self

    def set_defaults(self, **kwargs: Any) -> None:
        self.readable &= not set(kwargs) & set(self.defaults)
        self.set.update(kwargs)

    def __getattr__(self, name: str) -> Any:  # anything else (a mutually exclusive group, sub-commands): argparse's
        if name.startswith("__"):
            raise AttributeError(name)
        self.readable = False
        return _Dropped()

    # --- the command line ---

    def parse(self, words: Sequence[str]) -> Namespace | None:
        """The Namespace argparse gives for ``engram COMMAND WORDS``, or None where it might not give this one."""
        values = dict(self.defaults)
        given: list[str] = []
        index = 0
        while index < len(words):
            word = words[index]
            index += 1
            if not _looks_optional(word):
                given.append(word)
                continue
            option = self.options.get(word)
            if option is None:  # help, an abbreviation, --opt=value, --, a negative number: argparse's to read
                return None
            if option.kind in ("store_true", "boolean"):
                values[option.dest] = not word.startswith("--no-")
                continue
            if index == len(words) or _looks_optional(words[index]):
                return None  # "expected one argument" (or a value argparse may read as an option)
            value = option.value(words[index])
            index += 1
            if value is _UNSET:
                return None
            values[option.dest] = [*(values[option.dest] or ()), value] if option.kind == "append" else value
        for option, optional in self.positionals:
            if given:
                value = option.value(given.pop(0))
                if value is _UNSET:
                    return None
                values[option.dest] = value
            elif not optional:
                return None  # "the following arguments are required"
        if given:
            return None  # "unrecognized arguments"
        return Namespace(**{**self.set, **values})


def _looks_optional(word: str) -> bool:
    """A word argparse may read as an option (its prefix character; "-" alone is a value)."""
    return word.startswith("-") and word != "-"


class _Dropped:
    """The parser of another command of the group (or an argparse object this module does not read): whatever is
    asked of it is dropped."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._drop

    def _drop(self, *args: Any, **kwargs: Any) -> _Dropped:
        return self
