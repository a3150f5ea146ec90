"""The embedder's default thread count follows the container's CPU quota, not the host's core count."""

from __future__ import annotations

import os
from pathlib import Path

from engram.embed.embedder import usable_cpus

CORES = len(os.sched_getaffinity(0))


def test_a_cgroup_v2_quota_caps_the_threads(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs
    assert usable_cpus(str(tmp_path)) == min(CORES, 2)


def test_no_quota_means_every_core_of_the_affinity(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(str(tmp_path)) == CORES
    assert usable_cpus(str(tmp_path / "absent")) == CORES


def test_a_cgroup_v1_quota_caps_the_threads(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(str(tmp_path)) == 1
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert usable_cpus(str(tmp_path)) == CORES
