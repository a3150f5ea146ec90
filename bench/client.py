"""Engram's public API as the benchmark uses it: REST bulk import and MCP tools over streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

DEFAULT_CHUNK = 1000
DEFAULT_INDEX_TIMEOUT = 3600.0
AGENT_ID = "bench"
CLIENT_NAME = "engram-bench"
NOT_CAUGHT_UP = "not caught up"  # the search service's message when min_seq is not applied in time


class ToolCallError(RuntimeError):
    """An MCP tool answered with is_error; the message is the tool's text."""

    def __init__(self, tool: str, text: str) -> None:
        super().__init__(f"{tool}: {text}")
        self.tool, self.text = tool, text


class ImportFailed(RuntimeError):
    """The import endpoint answered with an HTTP error."""


@dataclass(slots=True)
class ImportResult:
    """What a chunked import did: counts, rejections (absolute line numbers), the last log sequence, timing."""

    sent: int = 0
    imported: int = 0
    last_seq: int = 0
    seconds: float = 0.0  # wall time of the HTTP requests only
    requests: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.imported / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for item in self.rejected:
            reasons[str(item.get("reason", ""))] = reasons.get(str(item.get("reason", "")), 0) + 1
        return {
            "sent": self.sent,
            "imported": self.imported,
            "rejected": len(self.rejected),
            "rejected_reasons": reasons,
            "rejected_examples": self.rejected[:5],
            "last_seq": self.last_seq,
            "requests": self.requests,
            "request_seconds": round(self.seconds, 3),
            "memories_per_second": round(self.per_second, 1),
        }


class EngramClient:
    """One REST client and one MCP session against a node, both acting as agent ``bench``."""

    def __init__(self, http_url: str, mcp_url: str) -> None:
        self.http_url, self.mcp_url = http_url, mcp_url
        self._stack = contextlib.AsyncExitStack()
        self._rest: httpx.AsyncClient | None = None
        self._mcp: Client | None = None
        self._tool_params: dict[str, set[str]] = {}

    async def __aenter__(self) -> EngramClient:
        headers = {"X-Engram-Agent-ID": AGENT_ID}
        timeout = httpx.Timeout(60, read=1800)
        self._rest = await self._stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=timeout))
        mcp_http = await self._stack.enter_async_context(  # every tool: the bench calls update_memory too
            httpx2.AsyncClient(headers=headers | {"X-Engram-Tools": "full"}, timeout=httpx2.Timeout(60, read=600))
        )
        self._mcp = await self._stack.enter_async_context(
            Client(
                streamable_http_client(self.mcp_url, http_client=mcp_http),
                client_info=Implementation(name=CLIENT_NAME, version="1.0"),
            )
        )
        tools = (await self._mcp.list_tools()).tools
        self._tool_params = {t.name: set((t.input_schema or {}).get("properties", {})) for t in tools}
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def accepts(self, tool: str, parameter: str) -> bool:
        """Whether the node's tool publishes ``parameter`` in its input schema."""
        return parameter in self._tool_params.get(tool, set())

    # --- REST -----------------------------------------------------------------------------------------------

    async def import_records(
        self,
        records: Sequence[dict[str, Any]],
        *,
        chunk: int = DEFAULT_CHUNK,
        on_chunk: Callable[[int], None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ImportResult:
        """POSTs the records as NDJSON in chunks to /v1/memories:import (with ``headers``, e.g. a key's); times the
        requests only."""
        assert self._rest is not None
        result = ImportResult()
        for start in range(0, len(records), chunk):
            part = records[start : start + chunk]
            body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part).encode()
            began = time.perf_counter()
            response = await self._rest.post(
                f"{self.http_url}/v1/memories:import",
                content=body,
                params={"first_line": start + 1},
                headers={"Content-Type": "application/x-ndjson", **(headers or {})},
            )
            result.seconds += time.perf_counter() - began
            result.requests += 1
            result.sent += len(part)
            if response.status_code != 200:
                raise ImportFailed(
                    f"POST /v1/memories:import (lines {start + 1}-{start + len(part)}) answered "
                    f"{response.status_code}: {response.text[:2000]}"
                )
            answer = response.json()
            result.imported += int(answer.get("imported", 0))
            result.rejected.extend(answer.get("rejected") or [])
            result.last_seq = max(result.last_seq, int(answer.get("last_seq") or 0))
            result.ids.extend(str(item.get("id")) for item in answer.get("items") or [])
            if on_chunk:
                on_chunk(len(part))
        return result

    # --- MCP ------------------------------------------------------------------------------------------------

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        """Calls an MCP tool; raises ToolCallError when the tool reports an error."""
        assert self._mcp is not None
        result = await self._mcp.call_tool(name, {k: v for k, v in arguments.items() if v is not None})
        if result.is_error:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            raise ToolCallError(name, text)
        if result.structured_content is None:
            raise ToolCallError(name, "no structured content in the answer")
        content: dict[str, Any] = result.structured_content
        return content

    async def search(self, query: str, **arguments: Any) -> dict[str, Any]:
        """search_memory's full answer (hits as {score, memory}): the benches read fields a compact hit leaves out
        (metadata, reranked), and nodes without the ``detail`` argument answer this shape anyway."""
        if self.accepts("search_memory", "detail"):
            arguments.setdefault("detail", "full")
        return await self.tool("search_memory", query=query, **arguments)

    async def rest_search(self, query: str, **arguments: Any) -> dict[str, Any]:
        """POST /v1/memories:search with the same arguments as ``search`` (REST answers in full); raises on an HTTP
        error."""
        assert self._rest is not None
        body = {"query": query, **{k: v for k, v in arguments.items() if v is not None}}
        response = await self._rest.post(f"{self.http_url}/v1/memories:search", json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    async def save(self, content: str, **arguments: Any) -> dict[str, Any]:
        return await self.tool("save_memory", content=content, **arguments)

    async def wait_indexed(self, seq: int, *, timeout: float = DEFAULT_INDEX_TIMEOUT, **filters: Any) -> float:
        """Blocks until the index has applied ``seq`` (search with min_seq, retried); returns the seconds waited."""
        began = time.monotonic()
        while True:
            try:
                await self.search("index catch-up probe", limit=1, min_seq=seq, rerank=False, **filters)
                return time.monotonic() - began
            except ToolCallError as e:
                if NOT_CAUGHT_UP not in e.text or time.monotonic() - began > timeout:
                    raise


@contextlib.asynccontextmanager
async def connect(http_url: str, mcp_url: str) -> AsyncIterator[EngramClient]:
    async with EngramClient(http_url, mcp_url) as client:
        yield client
