"""The node's supervisor with real child processes standing in for the node: a node that dies of a memory fault is
started again with its search indexes set aside (they are rebuilt from the log), a node that keeps dying is given
up with a message, and the node's own exit code (a stop, a refused start) is the supervisor's."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from engram.services.node import supervisor as supervisor_module
from engram.services.node.supervisor import MAX_RESTARTS, Inherited, Supervisor

pytestmark = pytest.mark.integration


class Scripted(Supervisor):
    """A supervisor whose node is a short Python program per start (instead of `engram serve`)."""

    def __init__(self, home: Path, programs: list[str]) -> None:
        super().__init__(["serve"], home, Inherited(-1, -1))
        self.programs = programs
        self.started: list[bool] = []  # quiet, per start

    def _spawn(self, *, quiet: bool) -> subprocess.Popen[bytes]:
        self.started.append(quiet)
        program = self.programs[min(len(self.started), len(self.programs)) - 1]
        return subprocess.Popen([sys.executable, "-c", program])


SIGBUS = "import os, signal; os.kill(os.getpid(), signal.SIGBUS)"


@pytest.fixture(autouse=True)
def no_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor_module, "RESTART_DELAY_SECONDS", 0.01)


def _indexes(home: Path) -> None:
    for name in ("index", "index-versions"):
        (home / name).mkdir(parents=True)
        (home / name / "segment").write_text("x")


def test_a_node_dead_of_sigbus_is_started_again_with_its_indexes_set_aside(tmp_path: Path) -> None:
    _indexes(tmp_path)
    (tmp_path / "node.json").write_text("{}")
    supervisor = Scripted(tmp_path, [SIGBUS, "raise SystemExit(0)"])
    assert supervisor.run() == 0
    assert supervisor.started == [False, True]  # the restart is quiet: the URL is the same, no second banner
    assert not (tmp_path / "index").exists() and (tmp_path / "index.damaged" / "segment").exists()
    assert (tmp_path / "index-versions.damaged").is_dir()
    assert not (tmp_path / "node.json").exists()  # its gRPC address died with it


def test_a_node_killed_by_the_kernel_is_started_again_with_its_index_kept(tmp_path: Path) -> None:
    _indexes(tmp_path)
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    supervisor = Scripted(tmp_path, [kill, "raise SystemExit(0)"])
    assert supervisor.run() == 0 and len(supervisor.started) == 2
    assert (tmp_path / "index" / "segment").exists()


def test_a_node_that_keeps_dying_is_given_up_with_a_message(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    supervisor = Scripted(tmp_path, [SIGBUS])
    with caplog.at_level(logging.WARNING):
        assert supervisor.run() == 1
    assert len(supervisor.started) == MAX_RESTARTS + 1
    assert "not starting it again" in caplog.text and f"free space and the files of {tmp_path}" in caplog.text


@pytest.mark.parametrize(("program", "code"), [("raise SystemExit(1)", 1), ("raise SystemExit(0)", 0)])
def test_the_nodes_exit_code_is_the_supervisors(tmp_path: Path, program: str, code: int) -> None:
    supervisor = Scripted(tmp_path, [program])
    assert supervisor.run() == code and len(supervisor.started) == 1


def test_a_node_ended_by_a_signal_sent_on_purpose_is_not_started_again(tmp_path: Path) -> None:
    supervisor = Scripted(tmp_path, ["import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert supervisor.run() == 128 + 15 and len(supervisor.started) == 1
