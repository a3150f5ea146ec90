"""The REST API under /v1 (used by the CLI and the web console): one router per group, and its HTTP problems."""
