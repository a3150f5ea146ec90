"""The data dir's capture worker (issue 35): takes the inbox's events in order, captures each with the settings its
hook ran with, delivers the spool, and waits a moment for the next burst before it ends (engram.hooks.inbox)."""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from engram.config import Settings
from engram.hooks import inbox
from engram.hooks.capture import capture, deliver
from engram.hooks.limits import payload
from engram.hooks.payloads import parse
from engram.hooks.target import applied

IDLE_SECONDS = 2.0  # an agent's next tool call usually comes sooner: one worker takes a whole turn's events
POLL_SECONDS = 0.05


def run(folder: str, lock: int, home: Path, note: Callable[[str], None], *, idle: float = IDLE_SECONDS) -> None:
    """Captures until the inbox stays empty for ``idle`` seconds, then lets go of the worker lock (``lock``). An event
    appended while it let go finds the lock free and starts a worker, or is seen here and taken again."""
    held: int | None = lock
    while held is not None:
        _drain(folder, home, note, idle=idle)
        os.close(held)
        held = inbox.claim(folder) if inbox.waiting(folder) else None


def drain_now(home: Path, note: Callable[[str], None]) -> bool:
    """Captures at once what waits in the inbox (`engram hooks flush`: a worker that died left events, and no hook
    has run since); False when a worker is running (it captures them)."""
    folder = inbox.folder(str(home / "hooks"))
    lock = inbox.claim(folder)
    if lock is None:
        return False
    run(folder, lock, home, note, idle=0.0)
    return True


def waiting(home: Path) -> int:
    """How many events wait in the inbox (`engram hooks status`)."""
    folder = str(home / "hooks" / inbox.FOLDER)
    count = 0
    for name in (inbox.TAKING, inbox.EVENTS):
        try:
            data = (Path(folder) / name).read_bytes()
        except FileNotFoundError:
            continue
        offset = inbox.taken(folder) if name == inbox.TAKING else 0
        count += sum(1 for _ in inbox.events(data, offset))
    return count


def _drain(folder: str, home: Path, note: Callable[[str], None], *, idle: float) -> None:
    known: dict[bytes, Settings] = {}
    idle_since = time.monotonic()
    while True:
        data, offset = inbox.take(folder)
        if not data:
            if time.monotonic() - idle_since >= idle:
                return
            time.sleep(POLL_SECONDS)
            continue
        last = None
        for end, agent, name, env, raw, total in inbox.events(data, offset):
            if env not in known:
                known[env] = applied(Settings.from_env(inbox.variables(env), home=home))
            last = known[env]
            try:
                capture(parse(agent, name, payload(raw, total)), last)
            except Exception:  # one event that cannot be captured does not hold up the others
                note(traceback.format_exc(limit=20)[-8000:])
            inbox.mark(folder, end)
        inbox.finish(folder)
        if last is not None:
            try:
                deliver(last, wait=False)
            except Exception:  # the captures stay in the spool for the next delivery
                note(traceback.format_exc(limit=20)[-8000:])
        idle_since = time.monotonic()
