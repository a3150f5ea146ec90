"""Capture through agents' own hooks: events in, observations out, spooled and delivered after the answer.

Kept free of imports: `python -m engram.hooks` must start in milliseconds (engram/hooks/__main__.py)."""
