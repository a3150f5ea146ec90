"""REST helpers for tests that drive a real node over HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

PROBLEM = "application/problem+json"


def unique(prefix: str = "t") -> str:
    """A name no other test uses (namespaces, tags, agents)."""
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def bearer(key: str, agent: str | None = None) -> dict[str, str]:
    """The headers of a request with ``key``, acting as ``agent`` when given."""
    headers = {"Authorization": f"Bearer {key}"}
    if agent:
        headers["X-Engram-Agent-ID"] = agent
    return headers


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The RFC 9457 problem document of an error answer with ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail"} <= set(body)
    return body


def list_all_ids(client: httpx.Client, min_seq: int) -> list[str]:
    """Every memory id of the caller's namespace, page by page; min_seq makes the first page wait for the index."""
    ids: list[str] = []
    token = None
    while True:
        params: dict[str, Any] = {"limit": 100, "min_seq": min_seq}
        if token:
            params["page_token"] = token
        page = client.get("/v1/memories", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        ids += [m["id"] for m in body["memories"]]
        token = body["next_page_token"]
        if not token:
            return ids
