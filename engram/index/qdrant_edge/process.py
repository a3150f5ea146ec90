"""A Qdrant Edge shard in a process of its own, beside the node: the node's calls cross a socket pair, so nothing the
shard does holds the node's GIL.

qdrant-edge-py holds the GIL for the whole of every call (no call releases it: its source has no allow_threads), and
loading a built copy at 50k memories took 0.5-1.6 s (docs/benchmarks.md): the gateway and every service stopped
meanwhile. In a process of its own, a load stops only that process, and the node serves from the shard it has until
the new one is loaded (engram.index.qdrant_edge.swap). Searches pay a round trip and the pickling of what crosses.

Run as ``python -m engram.index.qdrant_edge.process FD PATH --dim ...``: it loads (or creates) the shard at PATH, says
"ready" on the socket FD, then answers calls ((method, args, kwargs) -> ("ok", result) or ("error", kind, message))
one at a time until it is told to close or the node goes away.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import subprocess
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from engram.index import IndexDamaged
from engram.index.qdrant_edge.settings import VECTOR_STORAGES, ShardSettings
from engram.index.qdrant_edge.shard import ShardCore
from engram.process.children import python_module

log = logging.getLogger(__name__)

CLOSE_WAIT = 30.0  # seconds a closing shard process may take to flush and exit before it is killed
ENDED_WAIT = 5.0  # seconds to learn how a shard process whose socket closed ended


class IndexProcessEnded(RuntimeError):
    """The shard's process went away (killed, or it crashed): the index cannot answer until it is opened again."""


class InProcess:
    """A shard loaded in the node's own process (the way before ShardProcess; tests and the build's child use it)."""

    def __init__(self, core: ShardCore) -> None:
        self.path = core.path
        self.core = core

    @classmethod
    def start(cls, path: Path, settings: ShardSettings, *, beside: Path | None = None) -> InProcess:
        return cls(ShardCore(path, settings, beside=beside))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.core, method)(*args, **kwargs)

    def close(self) -> None:
        self.core.close()


class ShardProcess:
    """The node's side of a shard in a process of its own: ``call`` crosses to it; thread-safe (one call at a time)."""

    def __init__(self, path: Path, process: subprocess.Popen[bytes], connection: Connection) -> None:
        self.path = path
        self._process = process
        self._connection = connection
        self._lock = threading.Lock()

    @classmethod
    def start(cls, path: Path, settings: ShardSettings, *, beside: Path | None = None) -> ShardProcess:
        """Starts the process and waits until it has loaded (or created) the shard; raises IndexDamaged as a load
        in this process would."""
        ours, theirs = socket.socketpair()
        module = "engram.index.qdrant_edge.process"
        command = [*python_module(module), str(theirs.fileno()), str(path), *settings.arguments()]
        if beside is not None:
            command += ["--beside", str(beside)]
        try:
            # A session of its own: a terminal's Ctrl-C (or a signal to the node's process group) reaches the node,
            # which closes its shards in order; a shard killed by it first would look like a crash and take the node
            # down with it. The process ends with its socket if the node dies.
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), start_new_session=True
            )
        finally:
            theirs.close()
        shard = cls(path, process, Connection(ours.detach()))
        try:
            shard._answer()  # "ready", or why the shard cannot be opened
        except BaseException:  # including an interrupt: the process is not left behind
            shard.kill()
            raise
        return shard

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            try:
                self._connection.send((method, args, kwargs))
            except OSError as e:
                raise self._ended() from e
            return self._answer()

    def _answer(self) -> Any:
        try:
            reply = self._connection.recv()
        except (EOFError, OSError) as e:
            raise self._ended() from e
        if reply[0] == "ok":
            return reply[1]
        _, kind, message, reason = reply
        if kind == "IndexDamaged":
            raise IndexDamaged(str(self.path), reason)
        raise RuntimeError(message)  # what the shard raised (the Rust side reports any failure as a plain Exception)

    def _ended(self) -> IndexProcessEnded:
        """What to raise once the process is gone. One killed by a signal takes this process with it, by the same
        signal: with the shard in the node's process, a truncated index file (SIGBUS) or the kernel's out-of-memory
        kill ended the node, and its supervisor (engram.services.node.supervisor) restarts it, setting the indexes
        aside after a memory fault; a node left running without its index would answer nothing until restarted."""
        try:
            code = self._process.wait(ENDED_WAIT)  # the socket closes just before the exit status is known
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            log.critical("the index process of %s died of %s; the node stops the same way so that it is restarted",
                         self.path, signal.Signals(-code).name)  # fmt: skip
            with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler; only the main thread sets one
                signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        return IndexProcessEnded(f"the index process of {self.path} ended (exit code {code}); restart the node")

    def close(self) -> None:
        """Asks the process to flush and close the shard, and waits for it to exit."""
        try:
            self.call("close")
        except (IndexProcessEnded, RuntimeError) as e:
            log.warning("closing the index process of %s: %s", self.path, e)
        self._connection.close()
        try:
            self._process.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._connection.close()


def serve(connection: Connection, core: ShardCore) -> None:
    """Answers the node's calls on ``core`` until told to close (or the node goes away)."""
    while True:
        try:
            method, args, kwargs = connection.recv()
        except (EOFError, OSError):
            core.close()  # the node went away without closing: flushed as a close would
            return
        try:
            result = getattr(core, method)(*args, **kwargs)
        except Exception as e:  # any failure is the caller's to handle, as it would be in its own process
            connection.send(("error", type(e).__name__, str(e), getattr(e, "reason", str(e))))
            continue
        connection.send(("ok", result))
        if method == "close":
            return


def main() -> None:
    # Not die_with_parent: the kernel sends that signal when the *thread* that started the process ends, and a swap
    # starts it from a thread of its own. The node's end closes the socket instead, which ends serve().
    parser = argparse.ArgumentParser(description="A Qdrant Edge shard served to the node over a socket pair.")
    parser.add_argument("fd", type=int, help="the socket the node talks on")
    parser.add_argument("path", type=Path)
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--vectors", choices=VECTOR_STORAGES, required=True)
    parser.add_argument("--segments", required=True, help="the optimizer's segment count, segment KB, indexing KB")
    parser.add_argument("--beside", type=Path, help="the index whose empty copy a new shard starts from")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    connection = Connection(args.fd)
    settings = ShardSettings.from_arguments(args.dim, args.vectors, args.segments)
    try:
        core = ShardCore(args.path, settings, beside=args.beside)
    except IndexDamaged as e:
        connection.send(("error", "IndexDamaged", str(e), e.reason))
        return
    connection.send(("ok", None))
    serve(connection, core)


if __name__ == "__main__":
    main()
