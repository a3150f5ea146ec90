"""python -m engram.services.ingest: runs this service alone (same as `engram run ingest`)."""

import sys

from engram.cli import main

sys.exit(main(["run", "ingest", *sys.argv[1:]]))
