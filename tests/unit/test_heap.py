"""The C heap controls on glibc: freed memory piles up in malloc's arenas and is handed back when it passes the
threshold; the settings that drive them are validated."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
from pathlib import Path

import pytest

from engram.config import Settings, SettingsError
from engram.heap import Heap

BLOCK = 64 * 1024  # below glibc's mmap threshold: served from an arena, kept there when freed
BLOCKS = 1600  # 100 MiB


def test_freed_memory_above_the_threshold_is_handed_back() -> None:
    heap = Heap.glibc()
    assert heap is not None  # the tests run on Linux with glibc, as the edge devices do
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    heap.trim()
    before = heap.free_bytes()
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        libc.memset(block, 1, BLOCK)  # touched, so the pages are really the process's
    for block in blocks[:-1]:  # the last one keeps the others from merging into the top, which free() trims itself
        libc.free(block)
    assert heap.free_bytes() - before > BLOCK * BLOCKS // 2

    held = resident_bytes()

    async def trimmed() -> None:
        task = asyncio.create_task(heap.keep_trimmed(BLOCK * 16, interval=0.01))
        try:
            async with asyncio.timeout(10):
                while held - resident_bytes() < BLOCK * BLOCKS // 2:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(trimmed())
    libc.free(blocks[-1])


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_heap_settings_are_read_and_checked() -> None:
    settings = Settings.from_env({"ENGRAM_MALLOC_ARENAS": "0", "ENGRAM_MALLOC_TRIM_MB": "16"})
    assert (settings.malloc_arenas, settings.malloc_trim_mb) == (0, 16)
    assert Settings.from_env({}).malloc_arenas == 2
    with pytest.raises(SettingsError, match="ENGRAM_MALLOC_ARENAS and ENGRAM_MALLOC_TRIM_MB must be >= 0"):
        Settings.from_env({"ENGRAM_MALLOC_TRIM_MB": "-1"})
    assert Settings.from_env({"ENGRAM_INDEX_VECTORS": "disk"}).index_vectors == "disk"
    with pytest.raises(SettingsError, match="ENGRAM_INDEX_VECTORS must be 'ram' or 'disk'"):
        Settings.from_env({"ENGRAM_INDEX_VECTORS": "ssd"})
