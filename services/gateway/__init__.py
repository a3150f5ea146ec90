"""Gateway: MCP (streamable HTTP and stdio), REST and health endpoints in front of the services."""
