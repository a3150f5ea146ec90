"""The console's health page on a node whose index set a log entry aside (a memory with metadata {"x": NaN} written
straight into the log): it says "degraded", not "not ready", and shows how many entries and the newest error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

from tests.browser.console import console_url, run_async, wait_loaded
from tests.conftest import start_node
from tests.e2e.test_poison_entry import _poison

pytestmark = pytest.mark.integration


def test_health_shows_a_degraded_node_and_the_entries_its_index_set_aside(
    page: Page, tmp_path: Path, model_cache: Path, shot: Callable[[str], Path]
) -> None:
    node = start_node(tmp_path / "home", model_cache)
    try:
        with httpx.Client(base_url=node.http_url, timeout=60) as api:
            model = api.post("/v1/memories", json={"content": "the model entry of the poison"}).json()
            _, seq = run_async(_poison(node.nats_url, model["seq"]))
            saved = api.post("/v1/memories", json={"content": "saved after the poison"}).json()
            assert api.get("/v1/memories", params={"min_seq": saved["seq"]}).status_code == 200
        page.goto(console_url(node, "#/health"))
        wait_loaded(page, "health")
        shot("degraded")
        assert page.locator("[data-testid=health-ready]").inner_text().strip() == "degraded"
        aside = page.locator("[data-testid=index-quarantine]").inner_text()
        assert aside.startswith("1 log entry ·") and f"seq {seq} in default (memory_saved)" in aside
        assert "engram index quarantine list" in aside
        assert "index_quarantine" in page.locator("ul.problems").inner_text()
    finally:
        assert node.stop() == 0
