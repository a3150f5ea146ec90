"""Consolidation: background and on-demand jobs."""
