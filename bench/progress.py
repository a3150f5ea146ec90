"""A one-line progress display on stderr for the long benchmark phases."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self, TextIO

TTY_INTERVAL = 0.2
PIPE_INTERVAL = 15.0  # when stderr is a file, print a line now and then instead of redrawing


class Progress:
    """``with Progress("import", total) as p: p.advance(n)``.

    On a terminal this is Engram's own bar (``engram.progress``) when the installed version has it; on a pipe
    (or without it) a line ``label done/total rate elapsed eta`` now and then, so logs stay readable. Either
    way the last line gives the rate.
    """

    def __init__(self, label: str, total: int, *, unit: str = "", stream: TextIO | None = None) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.done = 0
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._began = self._shown = time.monotonic()
        self._bar: Any = None
        if self._tty:
            with contextlib.suppress(ImportError):
                from engram.progress import progress_bar

                self._bar = progress_bar(total, f"  {label}", unit=unit or "items", stream=self._stream)

    def __enter__(self) -> Self:
        if self._bar is None:
            self._draw(force=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()
            self._tty = False  # the summary line below goes on a line of its own
        self._draw(force=True, final=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(n)
        else:
            self._draw()

    def _draw(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._shown < (TTY_INTERVAL if self._tty else PIPE_INTERVAL):
            return
        self._shown = now
        elapsed = now - self._began
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 and self.total else 0.0
        unit = f" {self.unit}" if self.unit else ""
        line = f"  {self.label}: {self.done}/{self.total}{unit}  {rate:.1f}/s  {elapsed:.0f}s"
        if not final and self.done < self.total and rate > 0:
            line += f"  eta {eta:.0f}s"
        if self._tty:
            self._stream.write(f"\r\x1b[K{line}" + ("\n" if final else ""))
        else:
            self._stream.write(line + "\n")
        self._stream.flush()


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
