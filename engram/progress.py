"""A dependency-free, single-line text progress bar for the command line."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Self, TextIO

DEFAULT_WIDTH = 30  # characters of bar, so label + bar + numbers fit an 80-column terminal
DEFAULT_MIN_INTERVAL = 0.1  # seconds between redraws: enough to look live, cheap on slow terminals
_BYTE_UNITS = ("B", "KB", "MB", "GB", "TB")


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KB' (powers of 1024, one decimal from KB up)."""
    for unit in _BYTE_UNITS:
        if abs(n) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


class ProgressBar:
    """Redraws one line (``\\r``) on ``stream``: label, bar, percentage and counts.

    With an unknown total it shows only the count. ``close`` draws the final state and ends the
    line; it is also what leaving a ``with`` block does. When the stream is not a terminal (a log file, a pipe),
    where a carriage return does not redraw, only that final line is written.
    """

    def __init__(
        self,
        total: int | None,
        label: str,
        *,
        unit: str = "B",
        stream: TextIO | None = None,
        width: int = DEFAULT_WIDTH,
        min_interval: float = DEFAULT_MIN_INTERVAL,
        live: bool | None = None,
        rate: bool = False,
        log_every: float | None = None,
    ) -> None:
        """``unit="B"`` formats counts as bytes (KB, MB, ...); any other unit is printed after the count. ``live``:
        redraw while it runs (default: when the stream is a terminal). ``rate``: add the rate, the time so far and,
        while it runs, the time left. ``log_every``: when not live, write the line every so many seconds (a long
        run's log then shows where it is)."""
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._width = width
        self._min_interval = min_interval
        self._last_draw = float("-inf")
        self._last_len = 0
        self._closed = False
        self._live = _is_terminal(self._stream) if live is None else live
        self._rate, self._log_every = rate, log_every
        self._began = time.monotonic()

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count done so far (and the total, if it became known); redraws at most every min_interval."""
        if self._closed:  # the line has ended; drawing again would start a stray one
            return
        self.done = done
        if total is not None:
            self.total = total
        now = time.monotonic()
        finished = self.total is not None and done >= self.total
        if self._live and (finished or now - self._last_draw >= self._min_interval):
            self._draw()
            self._last_draw = now
        elif not self._live and self._log_every is not None and now - self._last_draw >= self._log_every:
            if self._last_draw != float("-inf"):  # the first interval starts now, not at the epoch
                self._stream.write(self.render() + "\n")
                self._stream.flush()
            self._last_draw = now

    def advance(self, n: int = 1) -> None:
        """Add ``n`` to the count done (for item counts rather than byte offsets)."""
        self.update(self.done + n)

    def close(self) -> None:
        """Draw the final state and end the line; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._draw()
        self._stream.write("\n")
        self._stream.flush()

    def _count(self, n: int) -> str:
        return format_bytes(n) if self.unit == "B" else f"{n} {self.unit}".rstrip()

    def render(self) -> str:
        """The line as it is drawn now, without the leading carriage return."""
        if not self.total:  # unknown (or zero) total: no bar to fill
            return f"{self.label} {self._count(self.done)}" + self._timing()
        fraction = min(max(self.done / self.total, 0.0), 1.0)
        filled = int(fraction * self._width)
        bar = "#" * filled + "." * (self._width - filled)
        line = f"{self.label} [{bar}] {fraction:4.0%} {self._count(self.done)}/{self._count(self.total)}"
        return line + self._timing()

    def _timing(self) -> str:
        if not self._rate:
            return ""
        elapsed = time.monotonic() - self._began
        rate = self.done / elapsed if elapsed > 0 else 0.0
        shown = f"  {format_bytes(rate)}/s" if self.unit == "B" else f"  {rate:.1f}/s"
        shown += f"  {elapsed:.0f}s"
        if not self._closed and self.total and rate > 0 and self.done < self.total:
            shown += f"  eta {(self.total - self.done) / rate:.0f}s"
        return shown

    def _draw(self) -> None:
        line = self.render()
        # Pad with spaces so a shorter line fully covers the previous one.
        self._stream.write("\r" + line.ljust(self._last_len))
        self._stream.flush()
        self._last_len = len(line)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_bar(total: int | None, label: str, *, unit: str = "B", stream: TextIO | None = None) -> ProgressBar:
    """A single-line progress bar on stderr (or ``stream``); call ``update``/``advance``, then ``close``."""
    return ProgressBar(total, label, unit=unit, stream=stream)
