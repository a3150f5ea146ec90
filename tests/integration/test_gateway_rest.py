"""The REST API, probes and OpenAPI document of the gateway against a real node."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import NodeHandle
from tests.helpers.rest import assert_problem

pytestmark = pytest.mark.integration

METADATA = {"n": 5, "nested": {"a": [1, 2]}}


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def secured(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- dev-mode node ------------------------------------------------------------------------------------------


def test_save_get_list_and_search_round_trip(api: httpx.Client) -> None:
    tag = unique()
    saved = api.post(
        "/v1/memories",
        json={
            "content": f"The user prefers dark mode in every editor {tag}",
            "tags": [tag],
            "metadata": METADATA,
        },
        headers={"X-Engram-Agent-ID": "console@web"},
    )
    assert saved.status_code == 201, saved.text
    body = saved.json()
    memory_id = body["id"]
    assert saved.headers["location"] == f"/v1/memories/{memory_id}"
    assert body["memory"]["metadata"] == METADATA
    assert body["memory"]["owner_agent"] == "console"  # "@web" is the device
    assert body["memory"]["source"] == "rest"
    assert body["seq"] > 0 and body["redactions"] == []

    got = api.get(f"/v1/memories/{memory_id}")
    assert got.status_code == 200 and got.json()["metadata"] == METADATA

    found = api.post(
        "/v1/memories:search", json={"query": "which theme does the user like?", "filters": {"tags": [tag]}}
    )
    assert found.status_code == 200, found.text
    [hit] = found.json()["hits"]
    assert hit["memory"]["id"] == memory_id and isinstance(hit["score"], float)
    assert found.json()["applied_seq"] >= body["seq"]

    second = api.post("/v1/memories", json={"content": f"Second memory {tag}", "tags": [tag]}).json()
    listed = api.get("/v1/memories", params={"tags": tag})
    assert listed.status_code == 200
    assert [m["id"] for m in listed.json()["memories"]] == [second["id"], memory_id]


def test_list_filters_by_several_types_and_owner(api: httpx.Client) -> None:
    tag = unique()
    fact = api.post("/v1/memories", json={"content": f"f {tag}", "tags": [tag], "memory_type": "fact"}).json()
    api.post("/v1/memories", json={"content": f"h {tag}", "tags": [tag], "memory_type": "history"})
    mine = api.post(
        "/v1/memories",
        json={"content": f"p {tag}", "tags": [tag], "memory_type": "preference"},
        params={"agent_id": "query-agent"},
    ).json()
    typed = api.get("/v1/memories", params=[("tags", tag), ("memory_type", "fact"), ("memory_type", "preference")])
    owned = api.get("/v1/memories", params={"tags": tag, "owner_agent": "query-agent"})
    assert {m["id"] for m in typed.json()["memories"]} == {fact["id"], mine["id"]}
    assert [m["id"] for m in owned.json()["memories"]] == [mine["id"]]
    assert mine["memory"]["owner_agent"] == "query-agent"


def test_paging_a_list_skips_no_memory_that_shares_a_timestamp(api: httpx.Client) -> None:
    """An import stores many memories in the same millisecond: every page boundary may cut a tie group."""
    tag = unique()
    lines = "\n".join(json.dumps({"content": f"imported {i} {tag}", "tags": [tag]}) for i in range(300))
    imported = api.post("/v1/memories:import", content=lines, headers={"Content-Type": "application/x-ndjson"})
    assert imported.status_code == 200 and imported.json()["imported"] == 300, imported.text
    min_seq = imported.json()["last_seq"]

    seen: dict[int, list[dict[str, str]]] = {}
    for limit in (100, 37, 7):
        memories, token = [], None
        while True:
            params = {"tags": tag, "limit": limit, "min_seq": min_seq, **({"page_token": token} if token else {})}
            page = api.get("/v1/memories", params=params)
            assert page.status_code == 200, page.text
            memories += page.json()["memories"]
            token = page.json()["next_page_token"]
            if not token:
                break
        seen[limit] = memories

    stored = {item["id"] for item in imported.json()["items"]}
    created = [m["created_at"] for m in seen[7]]
    assert len(set(created)) == 1, "one import's memories share its arrival time: every page boundary cuts a tie"
    for limit, memories in seen.items():
        ids = [m["id"] for m in memories]
        assert len(ids) == len(set(ids)) == 300 and set(ids) == stored, limit
        assert ids == [m["id"] for m in seen[100]], "every page size walks one total order"  # ties: by point id


def test_a_page_token_not_from_list_memories_is_a_400_saying_to_start_over(api: httpx.Client) -> None:
    for token in ("nope", "eyJ2IjoyfQ", "1e999", "x" * 300):
        body = assert_problem(api.get("/v1/memories", params={"page_token": token}), 400)
        assert "page_token" in str(body["detail"]) and "omit it to start over" in str(body["detail"])


def test_secrets_are_redacted_and_listed(api: httpx.Client) -> None:
    secret = "ghp_" + "A1b2C3d4E5" * 4
    saved = api.post("/v1/memories", json={"content": f"CI uses GITHUB_TOKEN {secret} {unique()}"})
    assert saved.status_code == 201
    assert secret not in saved.json()["memory"]["content"]
    assert saved.json()["redactions"] == [{"kind": "github_token", "count": 1}]


@pytest.mark.parametrize(
    ("method", "path", "payload", "field"),
    [
        ("post", "/v1/memories:search", {"query": "q", "limit": 1000}, "limit"),
        ("post", "/v1/memories", {"content": "x", "importance": "urgent"}, "importance"),
        ("post", "/v1/memories", {"content": "x", "expires_at": "tomorrow"}, "expires_at"),
        ("post", "/v1/memories", {"content": "   "}, "content"),
        ("post", "/v1/memories", {"text": "wrong field name"}, "content"),
        ("get", "/v1/memories?limit=0", None, "limit"),
    ],
)
def test_invalid_requests_are_400_problems_naming_the_field(
    api: httpx.Client, method: str, path: str, payload: dict[str, object] | None, field: str
) -> None:
    response = api.request(method, path, json=payload)
    body = assert_problem(response, 400)
    assert field in str(body["detail"])


def test_unknown_memory_is_a_404_problem(api: httpx.Client) -> None:
    body = assert_problem(api.get(f"/v1/memories/{uuid.uuid4()}"), 404)
    assert "search_memory" in str(body["detail"])


def test_bad_agent_id_is_a_400_problem(api: httpx.Client) -> None:
    body = assert_problem(api.get("/v1/memories", headers={"X-Engram-Agent-ID": "two words"}), 400)
    assert "X-Engram-Agent-ID" in str(body["detail"])


def test_openapi_documents_the_api(api: httpx.Client) -> None:
    doc = api.get("/openapi.json").json()
    paths = doc["paths"]
    assert {"post", "get"} <= set(paths["/v1/memories"])
    assert "get" in paths["/v1/memories/{memory_id}"]
    assert "post" in paths["/v1/memories:search"]
    # Invalid requests answer 400 problems, so FastAPI's default 422 must not be documented.
    assert "400" in paths["/v1/memories"]["post"]["responses"]
    assert all("422" not in op["responses"] for path in paths.values() for op in path.values())
    assert {"/healthz", "/readyz"} <= set(paths)
    assert "/mcp" not in paths
    schemas = doc["components"]["schemas"]
    assert {"SaveRequest", "SaveResult", "SearchRequest", "SearchResult", "MemoryOut", "Problem"} <= set(schemas)
    assert "bearer" in str(doc["components"]["securitySchemes"]).lower()
    assert api.get("/docs").status_code == 200


def test_the_api_docs_load_nothing_from_another_host_and_their_assets_answer(api: httpx.Client) -> None:
    """Offline, or behind a firewall, /docs and /redoc still work: every script, style and icon is the node's."""
    for page in ("/docs", "/redoc"):
        html = api.get(page)
        assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
        linked = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\s*:\s*["']([^"']+)["']""", html.text)
        urls = [u for pair in linked for u in pair if u]
        assert urls and not [u for u in urls if "//" in u], f"{page} links another host: {urls}"
        assert not re.search(r"https?://(?!127\.0\.0\.1|localhost)", html.text.replace("http://www.w3.org", "")), page
        for url in urls:
            if url.startswith("/docs/assets/"):
                asset = api.get(url)
                assert asset.status_code == 200 and len(asset.content) > 1000, url
    assert api.get("/docs/assets/../../etc/passwd").status_code == 404
    assert api.get("/docs/assets/nothing.js").status_code == 404


def test_the_nodes_address_opens_the_console(api: httpx.Client) -> None:
    answer = api.get("/", follow_redirects=False)
    assert answer.status_code == 307 and answer.headers["location"] == "/console"


def test_healthz_and_readyz(api: httpx.Client) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["rerank"] == "off"
    assert all(state == "serving" for state in ready.json()["services"].values())


def test_dev_mode_still_rejects_a_wrong_key(api: httpx.Client) -> None:
    response = api.get("/v1/memories", headers=bearer("engram_00000000_" + "A" * 43))
    assert_problem(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_foreign_host_and_origin_are_refused(api: httpx.Client) -> None:
    assert_problem(api.get("/v1/memories", headers={"Host": "attacker.example"}), 421)
    assert_problem(api.post("/v1/memories", json={"content": "x"}, headers={"Origin": "http://attacker.example"}), 403)
    # Another local page (another port) is not the node's: only its own pages get in (see test_host_guard.py).
    assert_problem(api.get("/v1/memories", headers={"Origin": "http://localhost:3000"}), 403)
    assert api.get("/v1/memories", headers={"Origin": str(api.base_url).rstrip("/")}).status_code == 200
    assert api.get("/healthz", headers={"Host": "10.1.2.3:8765"}).status_code == 200


# --- secured node (dev mode off) ----------------------------------------------------------------------------


def test_missing_key_is_401_with_how_to_create_one(secured: httpx.Client) -> None:
    for response in (
        secured.get("/v1/memories"),
        secured.post("/v1/memories", json={"content": "x"}),
        secured.post("/v1/memories:search", json={"query": "x"}),
        secured.get(f"/v1/memories/{uuid.uuid4()}"),
    ):
        body = assert_problem(response, 401)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "engram keys create" in str(body["detail"])


def test_probes_need_no_key(secured: httpx.Client) -> None:
    assert secured.get("/healthz").status_code == 200
    assert secured.get("/readyz").status_code == 200


def test_a_key_for_one_namespace_cannot_read_or_write_another(secured_node: NodeHandle, secured: httpx.Client) -> None:
    tag = unique()
    key_a = secured_node.create_key(unique("a"), "alice")
    key_b = secured_node.create_key(unique("b"), "bob")
    saved_a = secured.post(
        "/v1/memories", json={"content": f"A's secret plan {tag}", "tags": [tag]}, headers=bearer(key_a)
    )
    assert saved_a.status_code == 201
    a_id, a_seq = saved_a.json()["id"], saved_a.json()["seq"]

    assert_problem(secured.get(f"/v1/memories/{a_id}", headers=bearer(key_b)), 404)
    search_b = secured.post(
        "/v1/memories:search", json={"query": "secret plan", "filters": {"tags": [tag]}, "min_seq": a_seq},
        headers=bearer(key_b),
    )  # fmt: skip
    assert search_b.status_code == 200 and search_b.json()["hits"] == []
    assert secured.get("/v1/memories", params={"tags": tag}, headers=bearer(key_b)).json()["memories"] == []

    saved_b = secured.post("/v1/memories", json={"content": f"B's plan {tag}", "tags": [tag]}, headers=bearer(key_b))
    assert saved_b.json()["memory"]["owner_agent"] == "bob"
    listed_a = secured.get(
        "/v1/memories", params={"tags": tag, "min_seq": saved_b.json()["seq"]}, headers=bearer(key_a)
    )
    assert [m["id"] for m in listed_a.json()["memories"]] == [a_id]
    assert_problem(secured.get(f"/v1/memories/{saved_b.json()['id']}", headers=bearer(key_a)), 404)


def test_read_only_key_gets_403_on_save(secured_node: NodeHandle, secured: httpx.Client) -> None:
    key = secured_node.create_key(unique("ro"), "reader", scopes=("read",))
    body = assert_problem(secured.post("/v1/memories", json={"content": "nope"}, headers=bearer(key)), 403)
    assert "'write' scope" in str(body["detail"])
    assert secured.get("/v1/memories", headers=bearer(key)).status_code == 200


def test_agent_header_names_the_caller_of_a_shared_key_only(secured_node: NodeHandle, secured: httpx.Client) -> None:
    ns = unique("ns")
    shared, bound = secured_node.create_key(ns, ""), secured_node.create_key(ns, "default-agent")
    saved = secured.post(
        "/v1/memories", json={"content": f"x {unique()}"}, headers={**bearer(shared), "X-Engram-Agent-ID": "codex@ci"}
    )
    assert saved.json()["memory"]["owner_agent"] == "codex"  # "@ci" is the device
    plain = secured.post("/v1/memories", json={"content": f"y {unique()}"}, headers=bearer(bound))
    assert plain.json()["memory"]["owner_agent"] == "default-agent"
    # A key created with --agent acts as its agent: naming another is refused, naming itself is fine.
    spoofed = secured.post(
        "/v1/memories", json={"content": f"z {unique()}"}, headers={**bearer(bound), "X-Engram-Agent-ID": "codex@ci"}
    )
    assert "This key acts as 'default-agent'; it cannot speak for 'codex'." in assert_problem(spoofed, 403)["detail"]
    itself = secured.post(
        "/v1/memories",
        json={"content": f"w {unique()}"},
        headers={**bearer(bound), "X-Engram-Agent-ID": "default-agent@ci"},
    )
    memory = itself.json()["memory"]
    assert (memory["owner_agent"], memory["origin"]["device"]) == ("default-agent", "ci")


def test_foreign_host_is_refused_even_with_a_key(secured_node: NodeHandle, secured: httpx.Client) -> None:
    key = secured_node.create_key(unique("h"), "alice")
    assert_problem(secured.get("/v1/memories", headers={**bearer(key), "Host": "evil.example:80"}), 421)
