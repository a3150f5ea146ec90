"""MCP SDK clients for tests: streamable HTTP (with auth headers) and stdio (`engram mcp`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from engram.services.gateway.mcp.profiles import FULL


@contextlib.asynccontextmanager
async def http_client(
    url: str,
    *,
    key: str | None = None,
    agent: str | None = None,
    name: str = "pytest",
    mode: str = "auto",
    headers: dict[str, str] | None = None,
    tools: str | None = FULL,
) -> AsyncIterator[Client]:
    """An SDK client of ``url``, listing the ``tools`` profile (every tool, unless the URL or the headers ask for
    one; None: the server's default)."""
    headers = dict(headers or {})
    if tools and "tools=" not in url and not any(name.lower() == "x-engram-tools" for name in headers):
        headers["X-Engram-Tools"] = tools
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if agent:
        headers["X-Engram-Agent-ID"] = agent
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name=name, version="1.0"),
            mode=mode,  # type: ignore[arg-type]
        ) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def stdio_client(
    home: Path, env: dict[str, str], *, name: str = "pytest-stdio", args: Sequence[str] = ()
) -> AsyncIterator[Client]:
    """`engram mcp --home HOME [args]` spawned by the SDK's stdio client, listing every tool unless ``args`` or
    ``env`` name a profile."""
    if "--tools" not in args and "ENGRAM_MCP_TOOLS" not in env:
        args = (*args, "--tools", FULL)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram.services.node", "mcp", "--home", str(home), *args], env=env
    )
    async with Client(params, client_info=Implementation(name=name, version="1.0")) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Calls a tool and returns its structured content, failing the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise AssertionError(f"{tool} failed: {result.content}")
    assert result.structured_content is not None
    return result.structured_content


async def tool_error(client: Client, tool: str, **arguments: Any) -> str:
    """Calls a tool that must fail and returns the error text the agent sees."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    return " ".join(getattr(part, "text", "") for part in result.content)
