"""Engram: shared memory layer for AI agents."""

# The one place the version is written (pyproject.toml reads it, [tool.setuptools.dynamic]): `engram --version` prints
# it without importlib.metadata, whose lookup of the installed distribution took ~60 ms of an installed tool's 78.
__version__ = "0.1.0"
