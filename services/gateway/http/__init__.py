"""HTTP plumbing in front of every route: body checks, the host guard, the /mcp key check, metrics."""
