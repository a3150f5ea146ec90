"""The composition root: the `engram` command and the embedded node, which wire the services together.

The kernel (engram/) never imports a service; this package and each service's own __main__ do.
"""
