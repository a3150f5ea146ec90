"""The process's C heap: glibc malloc as the native code in it uses it (onnxruntime, Qdrant Edge, gRPC).

glibc gives each thread that allocates under contention an arena of its own and keeps what is freed in them for
later: after a bulk import of 50k memories the node held about 1 GiB of freed memory in its arenas (measured in
docs/benchmarks.md). Fewer arenas, and handing freed memory back once enough of it piles up, keep the node's
resident memory near what it uses. Where malloc is not glibc's (macOS, musl) every call here does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt parameter, from glibc's malloc.h
MADV_DONTNEED = 4  # madvise advices, from Linux's mman-common.h
MADV_PAGEOUT = 21  # Linux 5.4 and later
# Bulk work frees hundreds of MiB a second: checked every 2 s, an edge node importing 50k memories under a hard
# 600 MiB memory limit was killed (malloc held 540 MiB); every 0.5 s it finished (docs/benchmarks.md). A check
# reads /proc/self/statm.
DEFAULT_CHECK_SECONDS = 0.5


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                     "keepcost")
    ]  # fmt: skip


class Heap:
    """glibc's malloc controls: how many arenas it may create, how much freed memory it holds, and a trim."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._libc = libc
        libc.mallinfo2.restype = _MallInfo2
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]

    @classmethod
    def glibc(cls) -> Heap | None:
        """The process's glibc malloc, or None where there is none (or it is older than 2.33: no mallinfo2)."""
        name = ctypes.util.find_library("c")
        if name is None:
            return None
        try:
            libc = ctypes.CDLL(name)
            if not all(hasattr(libc, f) for f in ("mallinfo2", "mallopt", "malloc_trim")):
                return None
        except OSError:
            return None
        return cls(libc)

    def limit_arenas(self, count: int) -> None:
        """At most ``count`` arenas from now on (threads share them); 0 leaves glibc's default (8 per core)."""
        if count > 0 and not self._libc.mallopt(M_ARENA_MAX, count):
            log.warning("glibc refused to limit malloc arenas to %d", count)

    def trim(self) -> None:
        """Hands the arenas' free pages back to the system (malloc_trim)."""
        self._libc.malloc_trim(0)

    def release(self, files: Path | None = None) -> None:
        """Trims, and drops the second copies of the index files under ``files`` (see drop_sequential_copies)."""
        self.trim()
        if files is not None:
            drop_sequential_copies(files)

    async def keep_trimmed(
        self, threshold_bytes: int, *, interval: float = DEFAULT_CHECK_SECONDS, files: Path | None = None
    ) -> None:
        """Trims (and drops the second copies of the index files under ``files``) whenever the process's resident
        memory grew by more than ``threshold_bytes`` since the last trim, checking every ``interval`` seconds.

        Bulk work (an import, a graph build, a consolidation job) frees hundreds of MiB at once, which malloc keeps
        resident; a look every couple of seconds gives it back soon after. malloc's own count of free memory cannot
        say when: it still counts the pages a trim returned, and memory reused and freed again does not change it.
        Growth the process really uses costs one trim with nothing to return, then raises the mark.
        """
        mark = 0  # resident bytes right after the last trim (none yet); lowered when the process shrinks
        while True:
            await asyncio.sleep(interval)
            resident = resident_bytes()
            if resident - mark > threshold_bytes:
                await asyncio.to_thread(self.release, files)
                mark = resident_bytes()
            else:
                mark = min(mark, resident)


def freeze_startup_objects() -> None:
    """Moves what a started process holds into the collector's permanent generation (gc.freeze), after a collection.

    A started node holds about 190k objects (modules, classes, the web and gRPC frameworks, the tokenizer) that live
    as long as it does, and Python's full collection walked every one of them: 75-80 ms holding the GIL, every 6 s
    or so during a bulk import (measured, docs/benchmarks.md), and every search and save in flight waited as long.
    Frozen, a full collection walks only what was made since. Called once a process serves; calling it again (the
    embedded node's services, then its gateway) freezes what was added meanwhile.
    """
    gc.collect()
    gc.freeze()


def resident_bytes() -> int:
    """The process's resident set size (/proc/self/statm), 0 where there is no /proc."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def page_out(root: Path, parts: tuple[str, ...]) -> int:
    """Asks the kernel to reclaim now the pages of this process's shared file mappings under ``root`` whose path
    contains one of ``parts`` (madvise MADV_PAGEOUT): what memory pressure would do to them, done while they are
    known to be cold. Nothing is lost (a shared mapping's pages are the file's); a page used again is read back.
    The second copies of the files under ``root`` go too (drop_sequential_copies: what a load's check filled).
    Returns the bytes of the mappings advised; 0 where there is no /proc or the kernel does not know the advice.
    """
    try:
        maps, madvise = Path("/proc/self/maps").read_text(), _madvise()
    except OSError:
        return 0
    prefix, advised = str(root) + os.sep, 0
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith(prefix) or not fields[1].endswith("s"):
            continue
        if any(part in fields[5] for part in parts):
            start, end = (int(address, 16) for address in fields[0].split("-"))
            if madvise(start, end - start, MADV_PAGEOUT) != 0:
                break  # an older kernel: nothing more to page out
            advised += end - start
    return advised + drop_sequential_copies(root)


def drop_sequential_copies(root: Path) -> int:
    """Unmaps the resident pages of this process's read-only shared mappings under ``root`` that were opened for
    sequential reads (smaps VmFlags "sr"). Qdrant maps the stored vectors of each segment twice, once for random
    reads (searches) and once for sequential ones (scans, builds), and a load populates both: the same page-cache
    pages then count twice in the resident set (74 MiB more for the dense vectors of 50k memories, measured in
    docs/benchmarks.md). MADV_DONTNEED on a shared file mapping only drops this mapping's page-table entries: the
    pages stay in the page cache for the other mapping, and a sequential read maps them again. Returns the bytes of
    the mappings advised; 0 where there is no /proc.
    """
    try:
        smaps, madvise = Path("/proc/self/smaps").read_text(), _madvise()
    except OSError:
        return 0
    prefix, advised, mapping = str(root) + os.sep, 0, None
    for line in smaps.splitlines():
        fields = line.split(maxsplit=5)
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            ours = len(fields) == 6 and fields[5].startswith(prefix) and fields[1] == "r--s"
            mapping = fields[0] if ours else None
        elif mapping is not None and line.startswith("VmFlags:"):
            if "sr" in line.split()[1:]:
                start, end = (int(address, 16) for address in mapping.split("-"))
                if madvise(start, end - start, MADV_DONTNEED) == 0:
                    advised += end - start
            mapping = None
    return advised


def _madvise() -> Any:
    """libc's madvise(addr, length, advice); raises OSError where there is no libc to load."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc.madvise
