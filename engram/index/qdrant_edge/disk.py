"""A Qdrant Edge shard's files: the names beside the index, copies, the room they take, markers, setting one aside."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

from engram.index import DENSE, QUESTIONS
from engram.process.health import MIB

log = logging.getLogger(__name__)

CONFIG_FILE = "edge_config.json"  # where the shard keeps the configuration it was created or last loaded with
# Files a load reads whole and the searches after it hardly touch: the payload indexes (an appendable segment's,
# 78 MiB of files per shard whatever it holds, are read into memory) and the WAL's closed segment (replayed).
# Their pages would stay mapped after the load, so they are handed back at once (docs/benchmarks.md: about 200
# MiB less after a restart at 50k memories, the same search latency).
LOADED_ONLY = ("/payload_index/", "/wal/closed-")
# A load reads the vectors kept in RAM into memory: on a tmpfs that allocates the holes of their sparse files (a
# restart at 15k memories allocated 25 MiB for the dense vectors' 24 MiB of holes), and a mapped page that cannot be
# allocated kills the process (SIGBUS). So a start needs that much room, plus this for the small files a load fills
# (payload index flags, id trackers: 1-4 MiB measured).
LOAD_MARGIN = 16 * MIB
# A flush writes the shard's dirty pages and small files; with less room than this it is left to the WAL (which
# replays at the next load): a flush on a full tmpfs died with SIGBUS.
FLUSH_ROOM = 32 * MIB
# Deleted points stay in the shard's files (the WAL, the segments' payload and vector storage) until they are
# rewritten, and no setting of Qdrant Edge rewrites the WAL in place (removing its files loses later updates:
# measured). So after a purge the shard is copied into a fresh one without them (erase_deleted): this marker,
# written before the delete, says a copy is due, so a crash in between is caught by the next call.
ERASE_PENDING = "erase-pending"
REWRITING = ".rewriting"  # the fresh copy while it is written (a leftover is incomplete: removed at open)
ERASING = ".erasing"  # the old shard between the swap and its removal (removed at open)
DAMAGED = ".damaged"  # a damaged shard moved aside for inspection (move_aside)
# BUILDING is a copy while its vector index is built (swap.py); it is then renamed to a LOADED name,
# under which it is loaded and keeps its files open: after the swap that name stays as a symbolic link to the
# shard's own name (Qdrant Edge names its files by the path it was loaded from), removed once that shard is closed.
# REPLACED is the old shard after the swap. Any of them left over by a crash is removed at open.
BUILDING = ".building"
LOADED = ".loaded-"
REPLACED = ".replaced"
# An empty shard with its payload indexes, kept beside the index and copied where a shard starts over (a rebuild
# from the log, an erasure's fresh copy): creating its 20 payload indexes anew took 0.7-5 s, each holding the GIL
# (a 10k rebuild spent 5 s of its 14 there with two indexes, measured). EMPTY_KIND in it names the settings it was
# made with; a copy made otherwise is not used.
EMPTY = ".empty"
EMPTY_KIND = "engram-empty.json"


def sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def remove_leftovers(path: Path) -> None:
    """Removes what a crash left beside the shard at ``path``: an erasure's or a build's copies, a swap's links."""
    for leftover in (REWRITING, ERASING, BUILDING, REPLACED):
        shutil.rmtree(sibling(path, leftover), ignore_errors=True)
    for loaded in path.parent.glob(f"{path.name}{LOADED}*"):
        remove(loaded)


def remove(path: Path) -> None:
    """Removes a directory, or a symbolic link (not what it points to)."""
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def copy_tree(source: Path, target: Path) -> None:
    """Copies a flushed shard; its sparse files stay sparse where cp can do it (the vector storages are mostly
    holes: copied whole they would take several times the disk)."""
    try:
        subprocess.run(["cp", "-a", "--sparse=always", str(source), str(target)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)


def load_room(path: Path) -> int:
    """Disk space a load of the shard at ``path`` may take (0 when there is none): the holes of the vector files
    it reads into memory, those of the vectors it keeps in RAM as its config file records them (see
    LOAD_MARGIN), plus LOAD_MARGIN."""
    try:
        stored = json.loads((path / CONFIG_FILE).read_text()).get("vectors") or {}
    except (OSError, ValueError):
        stored = {}
    if not path.is_dir():
        return 0
    in_ram = [name for name in (DENSE, QUESTIONS) if ((stored.get(name) or {}).get("memory") or "cached") != "cold"]
    holes = sum(
        max(0, stat.st_size - stat.st_blocks * 512)
        for name in in_ram
        for file in path.glob(f"segments/*/vector_storage-{name}/**/*")
        if file.is_file() and (stat := file.stat())
    )
    return holes + LOAD_MARGIN


def allocated(path: Path) -> int:
    """Bytes the files under ``path`` take on disk."""
    return sum(file.stat().st_blocks * 512 for file in path.rglob("*") if file.is_file())


def copy_room(path: Path) -> int:
    """What a copy of the shard at ``path`` takes, loaded and flushed: its files, what its load allocates, a flush."""
    return allocated(path) + load_room(path) + FLUSH_ROOM


def write_marker(path: Path) -> None:
    """Creates an empty file, durably (it must survive a crash that the change it announces survives)."""
    with open(path, "wb") as handle:
        os.fsync(handle.fileno())
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def move_aside(path: Path) -> Path | None:
    """Renames a damaged index to <name>.damaged (replacing an older one), so a rebuild starts clean. One that
    still holds purged data (its erasure was interrupted) is removed instead: a purge leaves no copy behind."""
    if not path.exists():
        return None
    if (path / ERASE_PENDING).exists():
        shutil.rmtree(path)
        log.warning("removed the old index %s (it still held purged memories)", path)
        return None
    aside = path.with_name(f"{path.name}{DAMAGED}")
    shutil.rmtree(aside, ignore_errors=True)
    path.rename(aside)
    log.warning("moved the old index aside to %s", aside)
    return aside
