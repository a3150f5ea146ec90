"""Engram: shared memory layer for AI agents."""
