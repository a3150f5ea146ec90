"""python -m engram.services.gateway: runs this service alone (same as `engram run gateway`)."""

import sys

from engram.cli import main

sys.exit(main(["run", "gateway", *sys.argv[1:]]))
