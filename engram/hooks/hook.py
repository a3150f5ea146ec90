"""The hook process: what `python -m engram.hooks AGENT EVENT [--home DIR] [PAYLOAD]` (engram/hooks/__main__.py) and
`engram-hook` run for an agent's hook.

It answers first and works after: the payload is read (stdin, or the last argument for Codex's notify), the answer
printed (only a session start has one: the session context), and the event put in the data dir's inbox
(engram.hooks.inbox). When no capture worker is running for the data dir the process forks one and exits at once;
the worker, detached from the agent's pipes, extracts, scrubs, spools and delivers every event the inbox receives
until it stays empty a moment (engram.hooks.worker), so a burst of events costs one worker, not one process each.
Until then only the standard library is imported, so the agent waits about as long as the interpreter takes to
start. The installed command runs engram/hooks/__main__.py by its path under `python -S` (no site-packages to set
up: ~15 ms less); the work sets them up. The code is here, not in that file, because a script run by its path is
compiled at every start (~6 ms on a loaded machine) while an imported module's bytecode is cached."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself is not imported: it costs the hook ~2 ms
if TYPE_CHECKING:
    from typing import Any

CODEX = "codex"
MAX_ERRORS_BYTES = 256 * 1024  # errors.log keeps its newest lines within this


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    home = None
    if "--home" in args:
        at = args.index("--home")
        home = args[at + 1] if at + 1 < len(args) else None
        del args[at : at + 2]
    agent = args[0] if args else "claude-code"
    name = args[1] if len(args) > 1 else ""
    raw, total = _input(agent, args)
    if name == "SessionStart":
        try:
            _answer(agent, name, payload(raw, total), home)
        except Exception:  # the hook never breaks the agent: the session starts without Engram's context
            _note(home, _traceback())
            if agent == "gemini-cli":
                sys.stdout.write("{}\n")  # Gemini CLI reads the hook's stdout as JSON
    sys.stdout.flush()
    lock = _queue(agent, name, raw, total, home)
    if lock is None:  # a worker is capturing for this data dir: it takes this event too
        return 0
    folder, held = lock
    if _detached():
        code = 0
        try:
            work(folder, held, home)
        except Exception:  # the top of the background process: note it where `engram hooks status` shows it
            code = 1
            _note(home, _traceback())
        finally:
            os._exit(code)
    os.close(held)  # the worker holds the lock now
    return 0


def _queue(agent: str, name: str, raw: bytes, total: int, home: str | None) -> tuple[str, int] | None:
    """Puts the event in the data dir's inbox (engram.hooks.inbox); the inbox and the worker lock's descriptor when
    no worker holds it (this process starts one), else None."""
    from engram.hooks import inbox

    try:
        folder = inbox.folder(os.path.join(home_dir(home), "hooks"))
        if not inbox.put(folder, inbox.record(agent, name, raw, total, inbox.engram_env())):
            _note(home, f"the inbox is full ({inbox.MAX_INBOX_BYTES} bytes): a {agent} {name} event was dropped")
        held = inbox.claim(folder)
    except OSError:  # the data dir cannot be written: nothing can be captured, and the agent goes on
        _note(home, _traceback())
        return None
    return (folder, held) if held is not None else None


def home_dir(home: str | None) -> str:
    """The data dir as engram.config.Settings finds it (--home, else ENGRAM_HOME, else ~/.engram), known before
    anything but the standard library is imported (the hook reads the variable itself for that reason)."""
    return os.path.expanduser(home or os.environ.get("ENGRAM_HOME") or os.path.join("~", ".engram"))


def _input(agent: str, args: list[str]) -> tuple[bytes, int]:
    """The payload's bytes (at most engram.hooks.limits.MAX_INPUT_BYTES of them) and its whole size."""
    from engram.hooks.limits import MAX_INPUT_BYTES, read_input

    if len(args) > 2:
        raw = args[2].encode(errors="replace")
        return raw[: MAX_INPUT_BYTES + 1], len(raw)
    try:
        return read_input(sys.stdin.buffer) if agent != CODEX else (b"", 0)
    except (OSError, ValueError, AttributeError):  # no stdin (closed: sys.stdin is None): no payload
        return b"", 0


def payload(raw: bytes, total: int | None = None) -> dict[str, Any]:
    """The hook's JSON object ({} for anything else), bounded (engram.hooks.limits); parsed after the fork but at a
    session start (json imports re: milliseconds)."""
    from engram.hooks.limits import payload as bounded_payload

    return bounded_payload(raw, total)


def _answer(agent: str, name: str, payload: dict[str, Any], home: str | None) -> None:
    """Prints the session context for a session start (nothing when paused or no node answers)."""
    from engram.hooks.capture import Paths, node_url
    from engram.hooks.context import output, session_context
    from engram.hooks.payloads import parse
    from engram.hooks.privacy import paused

    settings = _settings(home)
    context = "" if paused(Paths.of(settings).hooks) else session_context(parse(agent, name, payload), settings,
                                                                           node_url(settings))  # fmt: skip
    text = output(agent, name, context)
    if text:
        sys.stdout.write(text + "\n")


def _detached() -> bool:
    """True in the background child; False in the parent, which returns. Where processes cannot fork, the work is
    done before returning (the answer was already flushed)."""
    if not hasattr(os, "fork"):
        return True
    try:
        pid = os.fork()
    except OSError:
        return True
    if pid:
        return False
    os.setsid()  # out of the agent's process group: a timeout that kills the hook does not kill the work
    try:  # noqa: SIM105 (contextlib is not imported in the hook process)
        os.nice(19)  # the agent's processes (the next hooks of a burst too) go first on a busy machine
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # the agent waits for its pipes to close: the child keeps none of them
    return True


def work(folder: str, lock: int, home: str | None) -> None:
    """The capture worker (engram.hooks.worker): captures what the inbox holds, this event first, and delivers."""
    from engram.hooks.inbox import settle

    settle(folder)
    _site()
    from pathlib import Path

    from engram.hooks.worker import run

    run(folder, lock, Path(home_dir(home)), lambda text: _note(home, text))


def _settings(home: str | None) -> Any:
    _site()
    from engram.config import Settings
    from engram.hooks.target import applied

    return applied(Settings.from_env(home=home))


def _site() -> None:
    """Sets up site-packages when the interpreter started without them (`python -S`)."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def _traceback() -> str:
    import traceback

    return traceback.format_exc(limit=20)[-8000:]  # a RecursionError's traceback would be thousands of lines


def _note(home: str | None, text: str) -> None:
    import time

    try:
        from engram.hooks.files import append_bounded, private_dir

        settings = _settings(home)
        folder = private_dir(settings.home / "hooks")
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}".replace("\n", "\n  ") + "\n"
        append_bounded(folder / "errors.log", line.encode(), MAX_ERRORS_BYTES)
    except Exception:
        pass
