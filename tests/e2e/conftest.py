"""End-to-end fixtures: a small disk the tests can fill."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MIB = 1024 * 1024


@dataclass
class SmallDisk:
    """A file system the test can fill: a tmpfs mounted for the test when it may mount one (root), else the
    temp dir with a reserve set just under its free space (so filling a few hundred MiB crosses it)."""

    path: Path
    reserve_mb: int
    mounted: bool
    filler: Path = field(init=False)

    def __post_init__(self) -> None:
        self.filler = self.path / "filler"

    def free(self) -> int:
        return shutil.disk_usage(self.path).free

    def fill(self, leave_mib: int) -> None:
        """Allocates a file so that only leave_mib MiB stay free."""
        size = self.free() - leave_mib * MIB
        with open(self.filler, "ab") as handle:
            try:
                os.posix_fallocate(handle.fileno(), os.fstat(handle.fileno()).st_size, size)
            except OSError as e:
                # The node wrote meanwhile, so less is free than was asked for: the disk is full now anyway;
                # with leave_mib=0 make sure of it by writing until nothing more fits.
                if e.errno != errno.ENOSPC:
                    raise
                if leave_mib == 0:
                    with contextlib.suppress(OSError):
                        while True:
                            handle.write(b"\0" * 65536)
                            handle.flush()

    def release(self) -> None:
        self.filler.unlink(missing_ok=True)


def mount_tmpfs(mount: Path, size_mb: int) -> bool:
    """Mounts a tmpfs of size_mb MiB at mount; False where this process may not mount one."""
    try:
        return subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(mount)], capture_output=True, timeout=30
        ).returncode == 0  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = mount_tmpfs(mount, 400)  # else not allowed to mount here: the reserve-based stand-in below
    if mounted:
        disk = SmallDisk(mount, 120, mounted=True)
    else:
        disk = SmallDisk(mount, max(200, shutil.disk_usage(mount).free // MIB - 300), mounted=False)
    try:
        yield disk
    finally:
        disk.release()
        if mounted:
            subprocess.run(["umount", "-l", str(mount)], check=False)
