"""What every child process of the node shares: it dies with its parent, and a Python child imports Engram from
where it is installed, never from the current directory."""

from __future__ import annotations

import contextlib
import signal
import sys

PR_SET_PDEATHSIG = 1  # prctl option, from Linux's prctl.h


def die_with_parent() -> None:
    """Asks the kernel to kill this process when its parent dies, even by SIGKILL (Linux; elsewhere nothing).

    Called in a child, either before exec (a preexec_fn) or first thing in a Python child's main."""
    import ctypes  # here: python_module's callers (the CLI) need not load it

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def python_module(module: str) -> list[str]:
    """The command that runs ``python -m module`` in this interpreter. -P (Python 3.11+): the current directory is not
    put first on the import path, so a folder named `engram` where the user (or an agent) started Engram is never
    imported in place of the installed package; the same for any other package the child imports."""
    return [sys.executable, "-P", "-m", module]
