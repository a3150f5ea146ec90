"""Process helpers for end-to-end tests: wait for a ready line, wait for a pid to be gone."""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time

_readers: dict[int, queue.Queue[str | None]] = {}
_threads: dict[int, threading.Thread] = {}


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """A queue of the process's stdout lines, filled by a daemon thread (None marks the end)."""
    if process.pid not in _readers:
        lines: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def pump() -> None:
            for line in stdout:
                lines.put(line)
            lines.put(None)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        _readers[process.pid] = lines
        _threads[process.pid] = thread
    return _readers[process.pid]


def wait_line(process: subprocess.Popen[str], marker: str, timeout: float = 120.0) -> str:
    """Reads the process's stdout until a line containing marker arrives; returns that line."""
    lines = _lines(process)
    deadline = time.monotonic() + timeout
    seen = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if marker in line:
            return line.strip()
    raise AssertionError(f"no line with {marker!r} within {timeout}s; exit={process.poll()}; output={''.join(seen)}")


def stop_process(process: subprocess.Popen[str], sig: int, timeout: float = 30.0) -> int:
    """Signals the process, waits for it, and closes its stdout pipe; returns its exit code."""
    if process.poll() is None:
        process.send_signal(sig)
    code = process.wait(timeout)
    thread = _threads.pop(process.pid, None)
    if thread is not None:
        thread.join(timeout)
    _readers.pop(process.pid, None)
    if process.stdout is not None:
        process.stdout.close()
    return code


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False
