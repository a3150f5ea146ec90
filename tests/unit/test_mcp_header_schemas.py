"""The Mcp-Param header check of the streamable HTTP transport gets a tool's input schema only when the schema routes
an argument into a header (x-mcp-header); Engram's tools route none, so no call walks its schema for nothing."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.services.gateway.mcp.server import EngramMCPServer


def test_only_a_tool_that_routes_an_argument_into_a_header_has_its_schema_checked() -> None:
    server = EngramMCPServer(name="headers")

    async def plain(query: str) -> str:
        return query

    async def routed(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return region

    server.add_tool(plain)
    server.add_tool(routed)
    lookup = server._lowlevel_server.get_tool_input_schema  # what the transport calls before each tools/call
    assert lookup is not None
    assert lookup("plain") is None
    assert lookup("plain") is None  # decided once, then remembered
    schema = lookup("routed")
    assert schema is not None and schema["properties"]["region"]["x-mcp-header"] == "Region"
    assert lookup("no_such_tool") is None
