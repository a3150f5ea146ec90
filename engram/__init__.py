"""Engram: shared memory layer for AI agents."""

import importlib.metadata

try:
    __version__ = importlib.metadata.version("engram")
except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0.0.0+unknown"
