"""The vector index built off the serving path: a child process builds it on a copy of the shard, and the built copy
is loaded and caught up beside the shard in service, then swapped in.

optimize() holds the GIL for its whole run (27 s for 50k memories on 2 cores, measured; nothing else in the process
runs meanwhile), so it runs in a child process (build.py) on a copy of the flushed shard, while the
shard goes on serving and taking writes. The writes are recorded; once the child has ended, a thread of its own loads
the built copy and replays them on it, and the lock is held only for the last few writes and the swap itself (the
load, 0.3 s at 50k, and the replay once held it or stopped the indexer: seconds, measured). With the shard in a
process of its own (process.py), the built copy is loaded by a new such process: the load holds only
that process's GIL (0.5-1.6 s at 50k, during which the node's calls stalled when it loaded in the node).
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.index.qdrant_edge.disk import (
    BUILDING,
    LOADED,
    REPLACED,
    copy_room,
    copy_tree,
    remove,
    sibling,
)
from engram.index.qdrant_edge.process import InProcess, ShardProcess
from engram.index.qdrant_edge.settings import ShardSettings
from engram.process.children import python_module

log = logging.getLogger(__name__)

SWAP_TAIL = 32  # the swap takes the lock once no more than this many writes made during the build wait
# ... or after this many catch-up rounds: a writer as fast as the replay (the same writes, in another process) keeps
# the backlog from shrinking (a test's writer with no pause did, for minutes); the rest is replayed under the lock.
SWAP_ROUNDS = 4
CLOSE_WAIT = 30.0  # seconds a close waits for a swap under way to drop its copy

Shard = InProcess | ShardProcess
Write = bytes  # a write as the shard's method and its arguments, pickled (replayed on a built copy: ShardCore.apply)


@dataclass(slots=True)
class ShardBuild:
    """A vector index build in a child process (engram.index.qdrant_edge.build) on a copy of the shard at ``path``."""

    path: Path
    process: subprocess.Popen[bytes]
    points: int  # the points it indexes that were not indexed before
    started: float = field(default_factory=time.monotonic)
    written: list[Write] = field(default_factory=list)  # writes since the copy, replayed on it
    swapper: threading.Thread | None = None  # the thread swapping the built copy in, once the child has ended

    @classmethod
    def start(cls, path: Path, settings: ShardSettings, *, points: int) -> ShardBuild:
        command = [*python_module("engram.index.qdrant_edge.build"), str(path), *settings.arguments()]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        return cls(path, process, points)

    def ended(self) -> bool:
        return self.process.poll() is not None

    def cancel(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.swapper is None:  # otherwise the swapper has the copy open, and removes it
            shutil.rmtree(self.path, ignore_errors=True)


class SwapBuilds:
    """The build-and-swap half of EdgeIndex: what it holds of builds, and the calls that start, swap and drop them.

    The index's writer is its only writer: it calls maintain() when idle and set_applied_seq() after each batch,
    which swaps a finished build in."""

    _lock: threading.Lock
    _shard: Shard
    _optimize_after: int

    def __init__(self, path: Path, settings: ShardSettings, *, process: bool) -> None:
        self._path = path
        self._settings = settings
        self._process = process  # whether each shard is loaded in a process of its own
        self._unindexed = 0
        self._build: ShardBuild | None = None  # a vector index build under way in a child process, or its swap
        self._alias: Path | None = None  # the LOADED link the shard was loaded from, if it was swapped in
        self._swapper: threading.Thread | None = None  # the latest swap's thread (closing waits for it)
        self._swaps = 0

    def _start(self, path: Path) -> Shard:
        """The shard at ``path``, loaded (or created) where this index keeps its shards."""
        opener = ShardProcess if self._process else InProcess
        return opener.start(path, self._settings, beside=self._path)

    def _update(self, method: str, *args: Any) -> None:
        """Applies a write (the lock held), and records it for the build under way, if any.

        A recorded write is kept pickled, as the replay sends it: one bytes object, where the write's points, vectors
        and payloads were some ten containers per point that every full collection of the node walked (56-125 ms
        holding the GIL during a swap at 30k, measured) and that the replay then pickled in one go, holding the GIL.
        Pickled once, it crosses to the shard's process as it is."""
        if self._build is None:
            self._shard.call(method, *args)
            return
        write = pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL)
        self._shard.call("apply", [write])
        self._build.written.append(write)

    @property
    def building(self) -> bool:
        """Whether a vector index build is under way (its child process running, or its copy being swapped in)."""
        return self._build is not None

    def maintain(self) -> None:
        """Builds the vector index of the points written since the last build, in a child process on a copy of the
        shard (see BUILDING); a later call (or write) swaps the built copy in once the child has ended."""
        if self._build is not None:
            self._swap_if_built()
            return
        started = time.monotonic()
        with self._lock:
            if self._unindexed < self._optimize_after:
                return
            self._shard.call("flush")
            building = sibling(self._path, BUILDING)
            if shutil.disk_usage(self._path).free < copy_room(self._path):
                self._optimize_here()  # no room for a copy: the old way, where the shard is loaded
                return
        flushed = time.monotonic()
        # Without the lock: reads go on; the caller (the indexer, the only writer) does not write meanwhile.
        shutil.rmtree(building, ignore_errors=True)
        copy_tree(self._path, building)
        copied = time.monotonic()
        with self._lock:
            build = self._build = ShardBuild.start(building, self._settings, points=self._unindexed)
            self._unindexed = 0
        log.info("building the vector index of %d points in a child process: flushed in %.3fs holding the lock, "
                 "copied in %.2fs, started in %.3fs", build.points, flushed - started, copied - flushed,
                 time.monotonic() - copied)  # fmt: skip

    def finish_build(self, timeout: float | None = None) -> None:
        """Waits for a build under way to end and be swapped in (for a caller that must see it done: tests)."""
        build = self._build
        if build is not None:
            build.process.wait(timeout)
            self._swap_if_built()
        if self._swapper is not None:
            self._swapper.join(timeout)

    def _optimize_here(self) -> None:
        started = time.monotonic()
        self._shard.call("optimize")
        log.info("indexed %d new points in %.1fs", self._unindexed, time.monotonic() - started)
        self._unindexed = 0

    def _swap_if_built(self) -> None:
        """Once the build's child has ended, starts swapping the built copy in (see _swap); a failed build is
        dropped and its points wait for the next one. Called by the index's writer between its writes."""
        build = self._build
        if build is None or build.swapper is not None or not build.ended():
            return
        if build.process.returncode != 0:
            log.warning("building the vector index failed (exit code %s); retried at the next maintenance",
                        build.process.returncode)  # fmt: skip
            self._drop_build(build)
            return
        build.swapper = self._swapper = threading.Thread(
            target=self._swap, args=(build,), name="index-swap", daemon=True
        )
        build.swapper.start()

    def _swap(self, build: ShardBuild) -> None:
        """Loads the built copy, replays on it the writes made since the copy (reads and writes go on at this shard
        meanwhile), and replaces this shard with it holding the lock only for the last SWAP_TAIL writes and the
        renames. A copy that cannot be loaded is dropped: this shard serves on and its points wait."""
        started = time.monotonic()
        self._swaps += 1
        loaded_as = sibling(self._path, f"{LOADED}{os.getpid()}-{self._swaps}")
        remove(loaded_as)
        try:
            build.path.rename(loaded_as)
            build.path = loaded_as
            built = self._start(loaded_as)
        except Exception:
            log.exception("loading the built vector index failed; keeping the index as it is")
            self._drop_build(build)
            return
        replayed, rounds = 0, 0
        try:
            while len(build.written) - replayed > SWAP_TAIL and rounds < SWAP_ROUNDS and self._build is build:
                rounds += 1
                pending = len(build.written)  # the writer appends meanwhile (under the lock): a snapshot
                built.call("apply", build.written[replayed:pending])
                replayed = pending
            built.call("flush")
        except Exception:
            log.exception("replaying writes on the built vector index failed; keeping the index as it is")
            built.close()
            self._drop_build(build)
            return
        caught_up = time.monotonic()
        with self._lock:
            if self._build is not build:  # cancelled meanwhile (a reset, an erasure, a close)
                built.close()
                remove(build.path)
                return
            tail = len(build.written) - replayed
            try:
                built.call("apply", build.written[replayed:])
            except Exception:
                log.exception("replaying writes on the built vector index failed; keeping the index as it is")
                built.close()
                self._build = None
                self._unindexed += build.points
                remove(build.path)
                return
            self._build = None
            old, self._shard = self._shard, built  # reads and writes go to the built copy from here on
            alias, self._alias = self._alias, None
        swapped = time.monotonic()
        old.close()  # not holding the lock: a close takes 0.4-0.5 s (measured); the old files are still in place
        if alias is not None:
            remove(alias)
        self._rename_swapped(built, loaded_as)
        log.info("indexed %d points in a child process in %.1fs; loaded and replayed %d writes made meanwhile in "
                 "%.2fs, then %d more and swapped in %.3fs holding the lock", build.points, started - build.started,
                 replayed, caught_up - started, tail, swapped - caught_up)  # fmt: skip

    def _rename_swapped(self, built: Shard, loaded_as: Path) -> None:
        """Gives the swapped-in shard the index's name; the name it was loaded from stays as a link to it."""
        replaced = sibling(self._path, REPLACED)
        with self._lock:
            if self._shard is not built:  # reset or closed meanwhile: it dropped the built copy too
                remove(loaded_as)
                return
            shutil.rmtree(replaced, ignore_errors=True)
            self._path.rename(replaced)
            loaded_as.rename(self._path)
            loaded_as.symlink_to(self._path.name)  # the built shard's files, by the path it was loaded from
            self._alias = loaded_as
        try:
            built.call("page_out", self._path)  # what the load read whole, now mapped under the index's name
        except Exception:  # closed meanwhile: nothing mapped to hand back
            log.debug("no pages handed back after the swap of %s", self._path, exc_info=True)
        shutil.rmtree(replaced, ignore_errors=True)

    def _drop_build(self, build: ShardBuild) -> None:
        with self._lock:
            if self._build is build:
                self._build = None
                self._unindexed += build.points
        remove(build.path)

    def _cancel_build(self) -> None:
        """Stops a build under way and drops its copy (before the shard is closed, replaced or reset); a copy being
        swapped in is dropped by its swap, which finds the build gone."""
        if self._build is not None:
            self._unindexed += self._build.points
            self._build.cancel()
            self._build = None

    def _drop_alias(self) -> None:
        """Removes the link a swapped-in shard was loaded from (once that shard is closed)."""
        if self._alias is not None:
            remove(self._alias)
            self._alias = None

    def _join_swapper(self) -> None:
        if self._swapper is not None:
            self._swapper.join(CLOSE_WAIT)
