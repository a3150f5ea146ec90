"""The MCP server: the operations as tools, with resources and a prompt, over streamable HTTP and stdio."""
