"""Ingest: every write — validate, scrub secrets, embed, append to the log."""
