"""Engram: shared memory layer for AI agents."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed package's metadata when first asked for: importing
    importlib.metadata costs ~20 ms, which every `python -m engram.hooks` (an agent's hook) would pay."""
    if name != "__version__":
        raise AttributeError(f"module 'engram' has no attribute {name!r}")
    import importlib.metadata

    try:
        version = importlib.metadata.version("engram")
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        version = "0.0.0+unknown"
    globals()["__version__"] = version
    return version
