"""What every child process of the node shares: it dies with its parent."""

from __future__ import annotations

import contextlib
import ctypes
import signal

PR_SET_PDEATHSIG = 1  # prctl option, from Linux's prctl.h


def die_with_parent() -> None:
    """Asks the kernel to kill this process when its parent dies, even by SIGKILL (Linux; elsewhere nothing).

    Called in a child, either before exec (a preexec_fn) or first thing in a Python child's main."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
