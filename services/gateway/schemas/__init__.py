"""The gateway's published shapes: argument types, requests and results, shared by the MCP tools and REST."""
