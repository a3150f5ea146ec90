"""`engram serve` and `engram edge` run the embedded node as a child process and start it again when a crash ends it.

A memory-mapped index file truncated while the node runs, or one that grows on a full disk, kills the process that
touches it with SIGBUS, which no Python code can catch. So the process the user started only supervises: it holds
what must outlive one node process (the data dir's lock, and the gateway's listening socket, so the node's URL
stays the same and connections wait in its backlog meanwhile), and when the node dies of a memory fault (SIGBUS,
SIGSEGV) it moves the search indexes aside (derived data: the next node rebuilds them from the log) and starts
the node again. A node that keeps dying is not restarted for ever: at most MAX_RESTARTS times within
CRASH_WINDOW_SECONDS, then the supervisor stops and says what to check. Any other end of the node (a stop, a
refused start) is the end of the supervisor too, with the node's exit code.

The supervisor runs for as long as the node, so it is a lean process of its own: `engram serve` replaces itself
(same pid) with `python -m engram.services.node.supervisor`, which imports only this module and the standard
library (18 MiB resident; the `engram` command with its parsers loaded is 78 MiB).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import NoReturn

from engram.process.children import die_with_parent, python_module
from engram.process.nodeinfo import NODE_FILE
from engram.process.ports import PortInUse, listen_socket
from engram.services.node import SUPERVISED_FLAG
from engram.services.node.owner import NodeRunningError, owner_lock

log = logging.getLogger("engram.services.node.supervisor")  # also when run as __main__

# Memory faults: what a truncated or unbacked memory-mapped file raises. The index is set aside before a restart.
MEMORY_FAULTS = frozenset({signal.SIGBUS, signal.SIGSEGV})
# Deaths worth a restart: native crashes, and SIGKILL (the kernel's out-of-memory killer). A node ended by any
# other signal was ended on purpose.
RESTARTED = MEMORY_FAULTS | {signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGKILL}
MAX_RESTARTS = 3
CRASH_WINDOW_SECONDS = 600.0
RESTART_DELAY_SECONDS = 1.0  # doubled after each crash in the window
INDEXES = ("index", "index-versions")  # the data dir's search indexes (engram.services.search.server.open_index)


@dataclass(frozen=True, slots=True)
class Inherited:
    """What the supervised node inherits: the data dir's lock (already held) and the gateway's bound socket."""

    lock_fd: int
    socket_fd: int

    def flag(self) -> str:
        return f"{self.lock_fd}:{self.socket_fd}"

    @classmethod
    def parse(cls, value: str) -> Inherited:
        lock_fd, _, socket_fd = value.partition(":")
        return cls(int(lock_fd), int(socket_fd))


def supervise(argv: Sequence[str], *, home: Path, host: str, port: int, log_level: str) -> NoReturn:
    """Becomes the supervisor of `engram <argv>` (the same process, a lean program: see the module docstring)."""
    lean = [*python_module(__name__), "--home", str(home), "--host", host, "--port", str(port)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [*lean, "--log-level", log_level, "--", *argv])


def main(args: Sequence[str] | None = None) -> int:
    """python -m engram.services.node.supervisor: the supervisor itself, as `supervise` starts it."""
    parser = argparse.ArgumentParser(prog="engram")
    for name in ("--home", "--host", "--port", "--log-level"):
        parser.add_argument(name, required=True)
    parser.add_argument("argv", nargs="+")
    options = parser.parse_args(args)
    logging.basicConfig(
        level=options.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return run(options.argv, Path(options.home), options.host, int(options.port))
    except PortInUse as e:  # as the engram command reports it
        print(f"engram: {e}", file=sys.stderr)
        return 2
    except NodeRunningError as e:
        print(f"engram: {e}", file=sys.stderr)
        return 1


def run(argv: Sequence[str], home: Path, host: str, port: int) -> int:
    """Runs `engram <argv>` as the supervised node until it ends; returns the exit code to leave with."""
    with owner_lock(home) as lock:
        sock = listen_socket(host, port)  # bound before anything starts: a taken port is one line
        try:
            return Supervisor(argv, home, Inherited(lock.fileno(), sock.fileno())).run()
        finally:
            sock.close()


class Supervisor:
    """Starts the node, forwards SIGINT/SIGTERM to it, and restarts it after a crash (see the module docstring)."""

    def __init__(self, argv: Sequence[str], home: Path, inherited: Inherited) -> None:
        self._argv = list(argv)
        self._home = home
        self._inherited = inherited
        self._child: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self.crashes: list[float] = []  # monotonic times of the crashes in the window

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._supervise()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _supervise(self) -> int:
        restarts = 0
        while True:
            self._child = self._spawn(quiet=restarts > 0)
            code = self._child.wait()
            self._child = None
            if code >= 0:
                return code  # stopped, or a start refused with a message: the node said why
            (self._home / NODE_FILE).unlink(missing_ok=True)  # its gRPC address is gone with it
            try:
                fault = signal.Signals(-code)
            except ValueError:  # a signal without a name (real-time): sent on purpose
                return 128 - code
            if self._stopping:
                log.error("the node died of %s while stopping; its search index is checked on the next start",
                          fault.name)  # fmt: skip
                return 1
            if fault not in RESTARTED:
                log.warning("the node was ended by %s; stopping", fault.name)
                return 128 + fault.value
            now = time.monotonic()
            self.crashes = [t for t in self.crashes if now - t < CRASH_WINDOW_SECONDS] + [now]
            if len(self.crashes) > MAX_RESTARTS:
                log.error(_giving_up(fault, len(self.crashes), self._home))
                return 1
            delay = RESTART_DELAY_SECONDS * 2 ** (len(self.crashes) - 1)
            log.error("the node died of %s (%s); starting it again in %.0fs (restart %d of at most %d in %.0f min)",
                      fault.name, _cause(fault), delay, len(self.crashes), MAX_RESTARTS,
                      CRASH_WINDOW_SECONDS / 60)  # fmt: skip
            if fault in MEMORY_FAULTS:
                _set_indexes_aside(self._home)
                log.warning("the search indexes were moved aside: the node rebuilds them from the log")
            if self._sleep(delay):
                return 0  # asked to stop meanwhile
            restarts += 1

    def _spawn(self, *, quiet: bool) -> subprocess.Popen[bytes]:
        argv = [*python_module("engram.services.node"), *self._argv, SUPERVISED_FLAG, self._inherited.flag()]
        if quiet and "--quiet" not in argv:
            argv.append("--quiet")  # the URL has not changed: no second banner
        return subprocess.Popen(
            argv,
            pass_fds=(self._inherited.lock_fd, self._inherited.socket_fd),
            preexec_fn=die_with_parent,  # one thread here (preexec_fn is unsafe with threads)
        )

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True
        if self._child is not None and self._child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._child.send_signal(signal.SIGTERM)

    def _sleep(self, seconds: float) -> bool:
        """Sleeps unless asked to stop; True when asked to stop."""
        deadline = time.monotonic() + seconds
        while not self._stopping and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))
        return self._stopping


def _set_indexes_aside(home: Path) -> None:
    """Moves the search indexes aside (to <name>.damaged): the restarted node rebuilds them from the log."""
    from engram.index.qdrant_edge import move_aside  # only after a crash: the supervisor stays small

    for name in INDEXES:
        move_aside(home / name)


def _cause(fault: signal.Signals) -> str:
    if fault in MEMORY_FAULTS:
        return "a memory-mapped file was truncated or could not grow: is the disk full?"
    if fault == signal.SIGKILL:
        return "killed, e.g. by the kernel when memory ran out"
    return "a native crash"


def _giving_up(fault: signal.Signals, crashes: int, home: Path) -> str:
    return (
        f"the node died {crashes} times within {CRASH_WINDOW_SECONDS / 60:.0f} minutes (last: {fault.name}, "
        f"{_cause(fault)}); not starting it again. Check the free space and the files of {home} (the log above "
        "names what failed), then start it again."
    )


if __name__ == "__main__":
    sys.exit(main())
