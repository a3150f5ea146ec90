"""The hooks' local files (spool, session state, notes) are private: files 0600, folders 0700, rewrites atomic.

They hold what agents did (commands, errors, prompts): only their user may read them. A file or folder left with
another mode by an older version is set right when it is next touched."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """The folder, created 0700 (with the missing folders above it), its mode set right when it exists."""
    missing = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=DIR_MODE)
    _mode(path, DIR_MODE)
    return path


def open_private(path: Path, flags: int) -> int:
    """A descriptor of the file (created 0600 when missing; an existing one set to 0600)."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    with contextlib.suppress(OSError):
        if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    return fd


def append_private(path: Path, data: bytes) -> None:
    fd = open_private(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def append_bounded(path: Path, data: bytes, max_bytes: int) -> int:
    """Appends, then keeps the file within ``max_bytes`` by dropping its oldest lines (down to three quarters of the
    bound, so that it is not rewritten at every append); returns how many lines were dropped. The caller holds the
    lock that guards the file."""
    append_private(path, data)
    if path.stat().st_size <= max_bytes:
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    keep, size = len(lines), 0
    while keep and size + len(lines[keep - 1]) <= max_bytes * 3 // 4:
        keep -= 1
        size += len(lines[keep])
    write_private(path, b"".join(lines[keep:]))
    return keep


def write_private(path: Path, data: bytes) -> None:
    """Replaces the file's content atomically (a temporary file renamed over it), keeping it 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _mode(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):  # not ours to change (another user's folder): leave it
        if stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)
