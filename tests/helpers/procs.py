"""Process helpers for end-to-end tests: wait for a ready line, wait for a pid to be gone."""

from __future__ import annotations

import os
import selectors
import subprocess
import time


def wait_line(process: subprocess.Popen[str], marker: str, timeout: float = 120.0) -> str:
    """Reads the process's stdout until a line containing marker arrives; returns that line."""
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        if not selector.select(timeout=0.2):
            if process.poll() is not None:
                break
            continue
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if marker in line:
            return line.strip()
    raise AssertionError(f"no line with {marker!r} within {timeout}s; exit={process.poll()}; output={''.join(seen)}")


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
