"""Sync: edge devices push and pull changes."""
