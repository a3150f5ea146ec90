"""python -m engram.services.node: the `engram` command (engram.cli), as the node's supervisor starts the node."""

import sys

from engram.cli import main

sys.exit(main())
