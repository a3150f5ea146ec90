"""The C heap controls on glibc: freed memory stays resident in malloc's arenas until it is handed back, which
happens once the process grew past the threshold; the settings that drive them are validated."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
from pathlib import Path

import pytest

from engram.config import Settings, SettingsError
from engram.process.heap import Heap, freeze_startup_objects, resident_bytes

BLOCK = 64 * 1024  # below glibc's mmap threshold: served from an arena, kept there when freed
BLOCKS = 1600  # 100 MiB


def test_freed_memory_is_handed_back_once_the_process_grew_past_the_threshold() -> None:
    heap = Heap.glibc()
    assert heap is not None  # the tests run on Linux with glibc, as the edge devices do
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

    async def grow_free_and_wait_for_the_trim() -> None:
        task = asyncio.create_task(heap.keep_trimmed(BLOCK * 16, interval=0.01))
        try:
            await asyncio.sleep(0.05)  # a first look (and trim) before the work
            blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
            for block in blocks:
                libc.memset(block, 1, BLOCK)  # touched, so the pages are really the process's
            held = resident_bytes()
            for block in blocks[:-1]:  # the last keeps the rest from merging into the top, which free() trims itself
                libc.free(block)
            assert resident_bytes() > held - BLOCK * 16  # freed, yet still resident: malloc keeps it
            async with asyncio.timeout(10):
                while held - resident_bytes() < BLOCK * BLOCKS // 2:
                    await asyncio.sleep(0.01)
            libc.free(blocks[-1])
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(grow_free_and_wait_for_the_trim())


def test_heap_settings_are_read_and_checked() -> None:
    settings = Settings.from_env({"ENGRAM_MALLOC_ARENAS": "0", "ENGRAM_MALLOC_TRIM_MB": "16"})
    assert (settings.malloc_arenas, settings.malloc_trim_mb) == (0, 16)
    assert Settings.from_env({}).malloc_arenas == 2
    with pytest.raises(SettingsError, match="ENGRAM_MALLOC_ARENAS and ENGRAM_MALLOC_TRIM_MB must be >= 0"):
        Settings.from_env({"ENGRAM_MALLOC_TRIM_MB": "-1"})
    assert Settings.from_env({"ENGRAM_INDEX_VECTORS": "disk"}).index_vectors == "disk"
    with pytest.raises(SettingsError, match="ENGRAM_INDEX_VECTORS must be 'ram' or 'disk'"):
        Settings.from_env({"ENGRAM_INDEX_VECTORS": "ssd"})


def test_a_serving_process_keeps_what_it_started_with_out_of_full_collections() -> None:
    """freeze_startup_objects: what the process holds when it starts serving moves to the collector's permanent
    generation, so a full collection during the work that follows (an import) walks only what was made since."""
    started_with = [[i, []] for i in range(1000)]  # containers of containers: tracked by the collector
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() >= len(started_with)
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in started_with)
        made_since: list[list[int]] = [[]]
        assert id(made_since) in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()  # the test's process goes on collecting as before


@pytest.mark.anyio
async def test_the_grpc_services_and_the_gateway_freeze_once_they_serve(tmp_path: Path) -> None:
    """Both places a process starts serving call it: the gRPC services (runtime.serve) and the HTTP gateway."""
    from fastapi import FastAPI

    from engram.process.runtime import Resources, serve
    from engram.services.gateway.server import start_http, stop_http

    try:
        gc.unfreeze()
        server = await serve([], "127.0.0.1:0", resources=Resources(Settings(home=tmp_path)))
        assert gc.get_freeze_count() > 0
        await server.stop(0)
        gc.unfreeze()
        http, task, _ = await start_http(FastAPI(), "127.0.0.1", 0)
        assert gc.get_freeze_count() > 0
        await stop_http(http, task)
    finally:
        gc.unfreeze()
