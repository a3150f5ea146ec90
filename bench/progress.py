"""A one-line progress display on stderr for the long benchmark phases."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import TextIO

from engram.progress import ProgressBar

PIPE_INTERVAL = 15.0  # when stderr is a file, write a line now and then instead of redrawing


class Progress(ProgressBar):
    """``with Progress("import", total) as p: p.advance(n)``: Engram's own bar (``engram.progress``) with the rate and
    the time left; on a terminal it redraws, on a pipe it writes a line every PIPE_INTERVAL seconds, so logs stay
    readable. Either way the last line gives the rate."""

    def __init__(self, label: str, total: int, *, unit: str = "", stream: TextIO | None = None) -> None:
        super().__init__(total, f"  {label}", unit=unit or "items", stream=stream, rate=True, log_every=PIPE_INTERVAL)


def note(message: str) -> None:
    """A status line on stderr."""
    print(message, file=sys.stderr, flush=True)


class Phases:
    """Wall time per named phase, announced on stderr: ``with phases("speed/10000/import"): ...``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.load: dict[str, float] = {}  # 1-minute load average at the end of each phase (is the box busy?)

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        note(f"[{name}] ...")
        began = time.monotonic()
        try:
            yield
        finally:
            elapsed = time.monotonic() - began
            self.seconds[name] = round(self.seconds.get(name, 0.0) + elapsed, 3)
            with contextlib.suppress(OSError):
                self.load[name] = round(os.getloadavg()[0], 2)
            note(f"[{name}] {elapsed:.1f}s")
