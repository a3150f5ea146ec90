"""The Origin check of a dev-mode node (no key needed, so any web page the user opens could call it): only the
node's own pages (its host names on the port it listens on) and the configured ENGRAM_ALLOWED_ORIGINS get in;
requests without an Origin (the CLI, MCP clients, curl) are unaffected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from engram.config import Settings
from engram.services.gateway.http.hosts import HostGuard
from tests.conftest import NodeHandle, start_node
from tests.helpers.rest import assert_problem

pytestmark = pytest.mark.integration

CONFIGURED = "https://console.example.com"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A dev-mode node on loopback that also allows one configured web origin."""
    handle = start_node(tmp_path_factory.mktemp("guard"), model_cache, ENGRAM_ALLOWED_ORIGINS=CONFIGURED)
    yield handle
    assert handle.stop() == 0


def own_port(node: NodeHandle) -> int:
    port = urlsplit(node.http_url).port
    assert port is not None
    return port


def other_local_origins(node: NodeHandle) -> list[str]:
    """Pages on this machine that are not the node: another port, or the default one."""
    other = own_port(node) + 1
    return [f"http://localhost:{other}", f"http://127.0.0.1:{other}", "http://localhost", f"https://localhost:{other}"]


def test_another_local_web_page_cannot_call_a_dev_mode_node(guarded: NodeHandle) -> None:
    with httpx.Client(base_url=guarded.http_url, timeout=30) as api:
        for origin in other_local_origins(guarded):
            refused = api.post("/v1/memories", json={"content": "planted by a web page"}, headers={"Origin": origin})
            detail = assert_problem(refused, 403)["detail"]
            assert origin in detail and "ENGRAM_ALLOWED_ORIGINS" in detail
            assert_problem(api.get("/v1/memories", headers={"Origin": origin}), 403)
            mcp = httpx.post(guarded.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": origin})
            assert mcp.status_code == 403, mcp.text


def test_the_nodes_own_pages_configured_origins_and_requests_without_origin_get_in(guarded: NodeHandle) -> None:
    port = own_port(guarded)
    allowed = [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://LOCALHOST:{port}", CONFIGURED, None]
    with httpx.Client(base_url=guarded.http_url, timeout=30) as api:
        for origin in allowed:
            headers = {"Origin": origin} if origin else {}
            listed = api.get("/v1/memories", headers=headers)
            assert listed.status_code == 200, (origin, listed.text)
            mcp = httpx.post(guarded.mcp_url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
            assert mcp.status_code == 200, (origin, mcp.text)


def test_the_guard_admits_the_bind_names_on_the_request_port_only(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, host="127.0.0.1", allowed_hosts=("engram.lan",), allowed_origins=(CONFIGURED,))
    guard = HostGuard.from_settings(settings)
    assert guard.origin_allowed(None, port=8765) and guard.origin_allowed("", port=8765)
    for own in ("http://127.0.0.1:8765", "http://[::1]:8765", "http://engram.lan:8765", CONFIGURED):
        assert guard.origin_allowed(own, port=8765), own
    for foreign in ("http://localhost:3000", "http://127.0.0.1", "http://evil.example:8765", "null",
                    "file://", "http://127.0.0.1:8765.evil.example", "ftp://localhost:8765"):  # fmt: skip
        assert not guard.origin_allowed(foreign, port=8765), foreign
    assert not guard.origin_allowed("http://127.0.0.1:8765", port=None)  # no socket to compare with
    assert guard.origin_allowed("http://127.0.0.1:443", port=443) and guard.origin_allowed(
        "https://localhost", port=443
    )
