"""REST helpers for tests that drive a real node over HTTP."""

from __future__ import annotations

import httpx


def list_all_ids(client: httpx.Client, min_seq: int) -> list[str]:
    """Every memory id of the caller's namespace, page by page; min_seq makes the first page wait for the index."""
    ids: list[str] = []
    token = None
    while True:
        params: dict[str, object] = {"limit": 100, "min_seq": min_seq}
        if token:
            params["page_token"] = token
        page = client.get("/v1/memories", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        ids += [m["id"] for m in body["memories"]]
        token = body["next_page_token"]
        if not token:
            return ids
