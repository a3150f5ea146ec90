"""python -m engram.services.node: the `engram` command."""

import sys

from engram.services.node.cli import main

sys.exit(main())
