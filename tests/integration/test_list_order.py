"""Listing by last change (issue 24): order=updated on REST, list_memories and `engram list --order updated` puts a
memory changed just now before newer ones it was created before. A real node (NATS, Qdrant Edge, ONNX)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from engram import cli
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client
from tests.helpers.rest import assert_problem, unique

pytestmark = pytest.mark.integration


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def old_changed_and_new(api: httpx.Client, tag: str) -> tuple[str, str, int]:
    """Saves an old and a newer memory tagged ``tag``, then changes the old one: its id, the newer one's, the seq."""
    old = api.post("/v1/memories", json={"content": f"The deploy window is Tuesday {tag}", "tags": [tag]}).json()
    new = api.post("/v1/memories", json={"content": f"Releases are tagged vX.Y.Z {tag}", "tags": [tag]}).json()
    changed = api.patch(f"/v1/memories/{old['id']}", json={"content": f"The deploy window is Thursday {tag}"})
    assert changed.status_code == 200, changed.text
    return old["id"], new["id"], changed.json()["seq"]


def listed(api: httpx.Client, tag: str, seq: int, **params: Any) -> list[str]:
    page = api.get("/v1/memories", params={"tags": tag, "min_seq": seq, **params})
    assert page.status_code == 200, page.text
    return [memory["id"] for memory in page.json()["memories"]]


def test_rest_order_updated_puts_a_just_changed_old_memory_first(api: httpx.Client) -> None:
    tag = unique()
    old, new, seq = old_changed_and_new(api, tag)
    assert listed(api, tag, seq, order="updated") == [old, new]
    assert listed(api, tag, seq, order="created") == listed(api, tag, seq) == [new, old]


def test_rest_pages_by_update_continue_in_that_order(api: httpx.Client) -> None:
    tag = unique()
    old, new, seq = old_changed_and_new(api, tag)
    first = api.get("/v1/memories", params={"tags": tag, "min_seq": seq, "order": "updated", "limit": 1}).json()
    token = first["next_page_token"]
    second = api.get("/v1/memories", params={"tags": tag, "order": "updated", "limit": 1, "page_token": token})
    assert [m["id"] for m in first["memories"]] == [old]
    assert [m["id"] for m in second.json()["memories"]] == [new]


def test_an_unknown_order_is_a_400_naming_the_orders(api: httpx.Client) -> None:
    problem = assert_problem(api.get("/v1/memories", params={"order": "oldest"}), 400)
    assert "order" in problem["detail"] and "'created'" in problem["detail"] and "'updated'" in problem["detail"]


@pytest.mark.anyio
async def test_list_memories_order_updated_over_mcp(node: NodeHandle, api: httpx.Client) -> None:
    tag = unique()
    old, new, seq = old_changed_and_new(api, tag)
    listed_first = listed(api, tag, seq, order="updated")  # waits for the change to be listed
    async with http_client(node.mcp_url) as client:
        answer = await call(client, "list_memories", tags=[tag], order="updated")
    assert [m["id"] for m in answer["memories"]] == listed_first == [old, new]


def test_engram_list_order_updated(node: NodeHandle, api: httpx.Client, capsys: pytest.CaptureFixture[str]) -> None:
    tag = unique()
    old, new, seq = old_changed_and_new(api, tag)
    listed(api, tag, seq)  # waits for the change to be listed
    code = cli.main(["list", "--tag", tag, "--order", "updated", "--json", "--url", node.http_url])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert [m["id"] for m in json.loads(out)["memories"]] == [old, new]
    assert cli.main(["list", "--tag", tag, "--order", "updated", "--full-ids", "--url", node.http_url]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[3] == "UPDATED" and table[1].startswith(old) and table[2].startswith(new)
