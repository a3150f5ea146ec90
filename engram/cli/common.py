"""What the `engram` commands share: their common options, the node they talk to, one REST call and its answer."""

from __future__ import annotations

import io
import os
import sys

from engram import plainjson
from engram.vocab import IMPORTANCES, SAVABLE_TYPES

# Neither typing nor engram.config (nor dataclasses below) is imported to run a command: together they were about a
# third of `engram search`'s start; the annotations are strings (PEP 563), read by mypy only. Nor are argparse (with
# re, enum and gettext, ~10 ms), json, urllib.parse and pathlib when the command line is parsed by engram.cli.quick.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import IO, Any

    from engram.config import Settings

    # What each sub-command sets as `func` (set_defaults): it runs the parsed command and returns the exit code.
    Command = Callable[[argparse.Namespace, Settings], int]

EXIT_OK = 0
EXIT_REFUSED = 1  # the node answered with an error
EXIT_USAGE = 2  # nothing was sent: no node answers, or the command is incomplete
DEFAULT_TIMEOUT = 30.0
HOME_HELP = "data dir (ENGRAM_HOME, default ~/.engram)"
# A memory id argument's help: engram.cli.shortids makes a short one whole (imported by the commands that take ids).
ID_HELP = "the memory's id: whole, or the last 8 characters tables show (any unique end or start of it)"
URL_HELP = "gateway URL (default: the running node of --home, else http://127.0.0.1:8765)"
_PREVIEW_CHARS = 200


class NodeSettings:
    """What the commands that only talk to the node read of the settings (the data dir, to find its node; the port;
    the key), read as engram.config's Settings reads them, with its messages, when no other ENGRAM_* variable is set
    (``enough``); anything else goes through Settings, which validates every variable."""

    __slots__ = ("_home", "api_key", "data_dir", "port")
    VARIABLES = ("ENGRAM_HOME", "ENGRAM_PORT", "ENGRAM_API_KEY")

    def __init__(self, data_dir: str, port: int, api_key: str | None, home: Path | None = None) -> None:
        self.data_dir, self.port, self.api_key = data_dir, port, api_key  # data_dir: home, as a str
        self._home = home

    @property
    def home(self) -> Path:
        """The data dir as Settings gives it (a Path: pathlib is imported when asked, ~1.5 ms of a command's start)."""
        if self._home is None:
            from pathlib import Path

            self._home = Path(self.data_dir)
        return self._home

    @classmethod
    def enough(cls, env: Mapping[str, str]) -> bool:
        """True when env sets no ENGRAM_* variable but these (an empty one is not set, as for Settings)."""
        others = (name for name, value in env.items() if value and name not in cls.VARIABLES)
        return not any(name.startswith("ENGRAM_") for name in others)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, home: str | None = None) -> NodeSettings:
        """The three settings from env and --home; raises engram.config's SettingsError as Settings.from_env does."""
        port = 8765  # engram.config.DEFAULT_PORT (a unit test compares them)
        if raw := env.get("ENGRAM_PORT"):
            try:
                port = int(raw)
            except ValueError as e:
                raise _settings_error(f"ENGRAM_PORT={raw!r} is not a valid int") from e
            if not 0 <= port <= 65535:
                raise _settings_error(f"ENGRAM_PORT must be 0-65535, got {port}")
        given = home if home is not None else env.get("ENGRAM_HOME") or None
        where = os.path.expanduser("~/.engram" if given is None else given)  # Path(given).expanduser()'s folder
        if where.startswith("~"):  # no home folder to expand to: Path says so (RuntimeError), as Settings does
            from pathlib import Path

            path = Path(given).expanduser() if given is not None else Path.home() / ".engram"
            return cls(str(path), port, env.get("ENGRAM_API_KEY") or None, path)
        return cls(where, port, env.get("ENGRAM_API_KEY") or None)


def _settings_error(message: str) -> Exception:
    from engram.config import SettingsError

    return SettingsError(message)


def add_home(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The --home option of every command that works on a data dir."""
    parser.add_argument("--home", help=HOME_HELP)
    return parser


def node_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of every command that talks to the node: where it is, who acts, how to print."""
    add_home(parser)
    parser.add_argument("--url", help=URL_HELP)
    parser.add_argument(
        "--agent", help="act as this agent (X-Engram-Agent-ID) with a shared key; a key made with --agent is its agent"
    )
    parser.add_argument("--json", action="store_true", help="print the node's answer as JSON (for scripts)")
    return parser


def sub(subparsers: Any, name: str, text: str) -> argparse.ArgumentParser:
    """A sub-command parser whose description is its help, capitalised, formatted by HelpFormatter; left unfilled
    (_Unfilled) when the command line runs another command (build_parser sets ``engram_only``)."""
    description = text[:1].upper() + text[1:]
    return add_parser(subparsers, name, help=text, description=description, engram_format=True)


def add_parser(subparsers: Any, name: str, *, engram_format: bool = False, **kwargs: Any) -> argparse.ArgumentParser:
    """subparsers.add_parser(name, ...) (``engram_format``: with HelpFormatter); an _Unfilled stand-in when the command
    line runs another command (build_parser sets ``engram_only`` on the subparsers of the root). engram.cli.quick's
    recorder of a command's options stands for argparse's subparsers (``engram_records``): it takes each parser."""
    if getattr(subparsers, "engram_records", False):
        recorded: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
        return recorded
    from engram.cli.argparsing import HelpFormatter, Unfilled

    if engram_format:
        kwargs["formatter_class"] = HelpFormatter
    if getattr(subparsers, "engram_only", name) == name:
        parser: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
        return parser
    real, subparsers._parser_class = subparsers._parser_class, Unfilled
    try:
        unfilled: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
        return unfilled
    finally:
        subparsers._parser_class = real


def terminal_columns(fallback: int) -> int:
    """The terminal's width as shutil.get_terminal_size gives it (COLUMNS when set, else the width of the terminal
    stdout is, else ``fallback``), without shutil's imports (zlib, bz2, lzma: ~2.5 ms of a command's start)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
        return fallback
    return size.columns or fallback


if TYPE_CHECKING:
    boolean_optional = argparse.BooleanOptionalAction
else:

    def boolean_optional(**kwargs: Any) -> argparse.Action:
        """argparse.BooleanOptionalAction (--x and --no-x), as an option's ``action``: named without importing
        argparse (engram.cli.quick parses such an option itself)."""
        import argparse

        return argparse.BooleanOptionalAction(**kwargs)


def bad_value(message: str) -> Exception:
    """argparse.ArgumentTypeError(message), for an option's ``type`` to raise: argparse's error names the option."""
    import argparse

    return argparse.ArgumentTypeError(message)


def __getattr__(name: str) -> Any:
    """HelpFormatter and _Unfilled, the argparse classes of engram.cli.argparsing, as they were named here."""
    if name in ("HelpFormatter", "_Unfilled"):
        from engram.cli import argparsing

        return getattr(argparsing, name.removeprefix("_"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def node_url(given: str | None, settings: Settings) -> str:
    """The gateway to talk to: --url, else the running node of the data dir, else the default port."""
    if given:
        return given
    from engram.process.nodeinfo import read_node_info

    info = read_node_info(settings.data_dir if isinstance(settings, NodeSettings) else settings.home)
    return info.http_url if info else f"http://127.0.0.1:{settings.port}"


def no_node(base_url: str, error: Exception) -> str:
    """The line that says no node answers, and what to do."""
    return (
        f"engram: no Engram node answers at {base_url} ({type(error).__name__}). Start one with `engram serve`, "
        "or pass --url / --home."
    )


def preview(text: str) -> str:
    """The start of a text on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


class Call:
    """One REST request and how to show its answer."""

    __slots__ = ("body", "hint_403", "method", "params", "path", "render")

    def __init__(
        self, method: str, path: str, render: Callable[[dict[str, Any]], str], params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None, hint_403: str = "",
    ) -> None:  # fmt: skip
        self.method, self.path, self.render = method, path, render
        self.params, self.body = params, body
        self.hint_403 = hint_403  # added to a 403's detail

    def rendered_by(self, render: Callable[[dict[str, Any]], str]) -> Call:
        """The same request, its answer shown by ``render``."""
        return Call(self.method, self.path, render, self.params, self.body, self.hint_403)

    def __repr__(self) -> str:
        return f"Call({self.method!r}, {self.path!r}, params={self.params!r}, body={self.body!r})"


class UsageError(Exception):
    """The command cannot be sent as given; the message says what to add."""


def build_call(args: argparse.Namespace) -> Call:
    """The request a parsed command sends (its parser set `build`); raises UsageError when it cannot be sent."""
    call: Call = args.build(args)
    return call


def call_node(args: argparse.Namespace, settings: Settings) -> int:
    """A command that is one REST call: sent to the node of --url / --home, its answer printed."""
    return run_call(args, node_url(args.url, settings), api_key=settings.api_key)


def run_call(
    args: argparse.Namespace, base_url: str, *, api_key: str | None, out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:  # fmt: skip
    """Builds the command's call and sends it to the node at base_url; exit 0 done, 1 refused, 2 not sent.

    ``out`` and ``err`` default to the streams of the moment (not of import time)."""
    out, err = out or sys.stdout, err or sys.stderr
    if getattr(args, "id_fields", ()):
        from engram.cli.shortids import expand_ids  # here: it imports this module

        if (code := expand_ids(args, base_url, api_key=api_key, err=err)) != EXIT_OK:
            return code
    try:
        call = build_call(args)
    except UsageError as e:
        print(f"engram: {e}", file=err)
        return EXIT_USAGE
    return send(call, base_url, api_key=api_key, agent=args.agent, as_json=args.json, out=out, err=err)


def send(
    call: Call, base_url: str, *, api_key: str | None, agent: str | None, as_json: bool, out: IO[str], err: IO[str]
) -> int:
    """Sends one request to the node and prints its answer (rendered, or as JSON); exit 0, 1 refused, 2 not sent."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if agent:
        headers["X-Engram-Agent-ID"] = agent
    try:
        response = request(call, base_url, headers)
    except OSError as e:  # refused, unreachable, timed out
        print(no_node(base_url, e), file=err)
        return EXIT_USAGE
    answer = _json(response)
    if response.status >= 400:
        print(f"engram: {_problem(response, answer, call)}", file=err)
        return EXIT_REFUSED
    print(plainjson.dumps(answer, indent=2, ensure_ascii=False) if as_json else call.render(answer), file=out)
    return EXIT_OK


class Response:
    """The node's answer to one request."""

    __slots__ = ("reason", "status", "text")

    def __init__(self, status: int, reason: str, text: str) -> None:
        self.status, self.reason, self.text = status, reason, text


def request(call: Call, base_url: str, headers: dict[str, str]) -> Response:
    """One REST request: plain http on a raw socket (engram.plainhttp), https with the standard library's http.client.
    A command answers sooner without importing an HTTP client (httpx costs ~100 ms, urllib.request ~20 ms, http.client
    ~20 ms for its email parser: several times the request itself); an HTTP error status is an answer, not an
    exception. Raises OSError when the node cannot be reached."""
    from engram.cli.urls import split, urlencode

    url = split(base_url.rstrip("/") + call.path)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise OSError(f"{base_url!r} is not an http(s) URL")
    params = {name: value for name, value in (call.params or {}).items() if value is not None}
    target = (url.path or "/") + (f"?{urlencode(params)}" if params else "")
    data = None if call.body is None else plainjson.dumps(call.body).encode()
    headers = {**headers, "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if url.scheme == "http":
        from engram import plainhttp

        status, reason, text = plainhttp.request(
            call.method, url.hostname, url.port, target, headers=headers, body=data, timeout=DEFAULT_TIMEOUT
        )
        return Response(status, reason, text.decode("utf-8", "replace"))
    import http.client

    connection = http.client.HTTPSConnection(url.hostname, url.port, timeout=DEFAULT_TIMEOUT)
    try:
        connection.request(call.method, target, body=data, headers=headers)
        answer = connection.getresponse()
        return Response(answer.status, answer.reason, answer.read().decode("utf-8", "replace"))
    except http.client.HTTPException as e:  # a garbled or cut answer: as unreachable as no answer
        raise OSError(f"{type(e).__name__}: {e}") from e
    finally:
        connection.close()


def fetch(
    call: Call, base_url: str, *, api_key: str | None, agent: str | None, err: IO[str]
) -> tuple[int, dict[str, Any]]:
    """One request whose answer the command uses itself: the exit code and the answer (``{}`` unless 0); a refusal
    or an absent node is said on ``err`` as send says it."""
    answers: list[dict[str, Any]] = []

    def keep(answer: dict[str, Any]) -> str:
        answers.append(answer)
        return ""

    code = send(call.rendered_by(keep), base_url, api_key=api_key, agent=agent, as_json=False, out=io.StringIO(),
                err=err)  # fmt: skip
    return code, answers[0] if answers else {}


def _json(response: Response) -> dict[str, Any]:
    try:
        body = plainjson.loads(response.text)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _problem(response: Response, body: dict[str, Any], call: Call) -> str:
    """One line: the node's problem detail (it says what to do next), plus what the CLI knows to add."""
    detail = str(body.get("detail") or body.get("title") or response.text[:200] or response.reason)
    if response.status == 401:
        detail += " Set ENGRAM_API_KEY to the key."
    if response.status == 403 and call.hint_403 and "admin" in detail:
        detail = f"{detail} {call.hint_403}"
    if response.status == 403 and detail.startswith("Memory owned by"):
        detail += " From the CLI, act as the owner with --agent (or a key of that agent)."
    return f"{detail} (HTTP {response.status})"


# --- the fields of a memory a command gives (save, update, supersede --content) --------------------------------------

_EXPIRES_HELP = "expiry: an RFC 3339 time, or a duration from now: 30d, 12h, 45m, 90s, 2w"
_FIELDS = ("summary", "tags", "topics", "memory_type", "importance", "team", "project", "metadata", "expires_at")


def memory_fields(parser: argparse.ArgumentParser) -> None:
    """The fields a new version may change (update, and supersede --content), and a save may give."""
    parser.add_argument("--summary", help="one-line summary")
    parser.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="a tag (repeat for several)")
    parser.add_argument("--topic", action="append", dest="topics", metavar="TOPIC", help="a topic (repeatable)")
    parser.add_argument("--type", dest="memory_type", choices=SAVABLE_TYPES, help="kind of memory")
    parser.add_argument("--importance", choices=IMPORTANCES)
    parser.add_argument("--team")
    parser.add_argument("--project")
    parser.add_argument("--metadata", type=_json_object, help="metadata as a JSON object (replaces it whole)")
    parser.add_argument("--expires", dest="expires_at", metavar="WHEN", help=_EXPIRES_HELP)


def _json_object(text: str) -> dict[str, Any]:
    try:
        import json  # here: its errors say where the text goes wrong

        value = json.loads(text)
    except ValueError as e:
        raise bad_value(f"not JSON: {e}") from e
    if not isinstance(value, dict):
        raise bad_value('must be a JSON object, e.g. {"ticket": "ENG-12"}')
    return value


def given_fields(args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    """The memory fields the command line gives (memory_fields' and ``extra``), by their request names."""
    return {name: getattr(args, name) for name in (*extra, *_FIELDS) if getattr(args, name) is not None}
