"""Engram's benchmark harness: retrieval quality and speed against a real node, through the public API."""
