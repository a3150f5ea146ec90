"""python -m engram.services.sync: runs this service alone (same as `engram run sync`)."""

import sys

from engram.cli import main

sys.exit(main(["run", "sync", *sys.argv[1:]]))
