"""`engram-hook AGENT EVENT`: the console script a project's hook settings run through PATH (engram/hooks/install.py).
The same work as engram/hooks/__main__.py (engram/hooks/hook.py), and the same quick exit once the answer is out."""

from __future__ import annotations

import os
import sys


def main() -> None:
    from engram.hooks.hook import main as hook

    code = hook()
    sys.stdout.flush()
    os._exit(code)  # no interpreter teardown for the agent to wait on
