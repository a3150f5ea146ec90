"""The child process that builds a Qdrant Edge shard copy's vector index, off the node's serving path."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from pathlib import Path

from engram.index.qdrant_edge.settings import VECTOR_STORAGES, ShardSettings
from engram.index.qdrant_edge.shard import ShardCore
from engram.process.children import die_with_parent


def _yield_to_the_node() -> None:
    """Runs this build only on CPU time the node leaves idle (Linux SCHED_IDLE; elsewhere the lowest nice value):
    on two cores a build at normal priority took one whole core from the node's searches, saves and imports for
    its 10-25 s (searches and saves issued every 100 ms waited up to 2.4 s meanwhile, measured). The node serves
    the points it has not indexed yet by brute force until the build ends."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.nice(19)


def build_vector_index(path: Path, settings: ShardSettings) -> None:
    """Loads the shard copy at ``path``, builds its vector index, flushes it and closes it."""
    core = ShardCore(path, settings)
    core.optimize()
    core.close()


def main() -> None:
    die_with_parent()  # elsewhere than Linux it runs to its end, and the node's next start removes its copy
    _yield_to_the_node()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path, help="the shard copy (engram.index.qdrant_edge.disk.BUILDING)")
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--vectors", choices=VECTOR_STORAGES, required=True)
    parser.add_argument("--segments", required=True, help="the optimizer's segment count, segment KB, indexing KB")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    build_vector_index(args.path, ShardSettings.from_arguments(args.dim, args.vectors, args.segments))


if __name__ == "__main__":
    main()
