"""`python -m engram.hooks AGENT EVENT [--home DIR] [PAYLOAD]`: the command an agent's hook runs (engram/hooks/hook.py).

Kept this small on purpose: the installed command runs this file by its path, and a script is compiled at every
start while the module it imports is read from its cached bytecode."""

import os
import sys

if not __package__:  # run by its path: the folder that holds the engram package comes first
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from engram.hooks.hook import main

if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the answer is out: no interpreter teardown for the agent to wait on
