"""The Qdrant Edge adapter (qdrant-edge-py, the embedded vector index), one module per role: the port (adapter.py),
the shard's settings, payloads, the loaded shard, its process, the build and swap, the build's child, its files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram.index.qdrant_edge.disk import (
    BUILDING,
    CONFIG_FILE,
    EMPTY,
    EMPTY_KIND,
    ERASE_PENDING,
    ERASING,
    REWRITING,
    load_room,
    move_aside,
)
from engram.index.qdrant_edge.settings import VECTOR_STORAGES, VECTORS_DISK, VECTORS_RAM

if TYPE_CHECKING:
    from engram.index.qdrant_edge.adapter import EdgeIndex

# The names the search service, the node, the supervisor and the tests know this adapter by.
__all__ = [
    "BUILDING", "CONFIG_FILE", "EMPTY", "EMPTY_KIND", "ERASE_PENDING", "ERASING", "REWRITING", "VECTORS_DISK",
    "VECTORS_RAM", "VECTOR_STORAGES", "EdgeIndex", "load_room", "move_aside",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    """EdgeIndex, imported when first asked for: the shard's processes (``python -m engram.index.qdrant_edge.process``
    and ``.build``) import this package before they run their module, and an adapter imported here would import
    process.py once more (runpy warns: two copies of every class in it)."""
    if name == "EdgeIndex":
        from engram.index.qdrant_edge.adapter import EdgeIndex

        return EdgeIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
