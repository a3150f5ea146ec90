"""The composition root: the `engram` command and the embedded node, which wire the services together.

The kernel (engram/) never imports a service; this package and each service's own __main__ do.
"""

# Read by the `engram` command's parser (engram.cli.node), which must not load the node to build itself.
SERVICES = ("ingest", "search", "consolidation", "sync", "gateway")  # what `engram run <service>` runs
SUPERVISED_FLAG = "--supervised"  # hidden: given to the node child, with the descriptors it inherits
