"""python -m engram.services.search: runs this service alone (same as `engram run search`)."""

import sys

from engram.cli import main

sys.exit(main(["run", "search", *sys.argv[1:]]))
