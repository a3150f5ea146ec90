"""Expert packs on Engram's memory: the seed's pack tools (list_engrams, load_engram, capture_memory, ...) over
memories of the caller's namespace.

Storage. Every file of a pack is one or more memories of type ``pack-file`` (a long file is cut at its headings, so
a search finds the section it needs); metadata names the pack, the path, the part and the whitespace around it, so
``read_engram_file`` gives the file back exactly. ``meta.json`` is one such memory, tagged ``pack-meta``. What a pack
captures of its user (``capture_memory``) is an ordinary memory with ``metadata.pack`` and ``metadata.category``:
versioned, searchable, synced and seen by every agent of the namespace. The seed's ``memory/`` files (the hot index
of the latest 50, the full index, one file per category, ``-archive`` and ``-expired``) are rendered from those
memories on demand: consolidation archives with a merged-into relation, expiry is the lifecycle's expiry.

One module per role: ``service`` (PackService, the operations the MCP tools and REST share, and who may do them),
``storage`` (a file as memories and back), ``render`` (the seed's memory files, indexes and prompt, from memories),
``errors`` (what the service refuses). The transports import the service from here.
"""

from engram.services.gateway.operations.packs.service import PackService

__all__ = ["PackService"]
