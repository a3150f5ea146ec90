"""Small test utilities shared by the suites: free loopback ports, and loading a script of tools/ as a module."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def free_ports(count: int) -> list[int]:
    """Loopback ports free right now (bound and released together, so they are distinct)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    (port,) = free_ports(1)
    return port


def load_tool(name: str) -> ModuleType:
    """tools/<name>.py as the module ``name`` (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module
