"""python -m engram.services.consolidation: runs this service alone (same as `engram run consolidation`)."""

import sys

from engram.cli import main

sys.exit(main(["run", "consolidation", *sys.argv[1:]]))
