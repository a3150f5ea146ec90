"""The console on a secured node (dev mode off) in a real headless chromium: logging in with a key kept in session
storage and never in a URL, signing out, and an admin resolving a contradiction with a button."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page

from tests.browser.console import console_url, log_in, rest_save, stored_key, wait_indexed, wait_loaded
from tests.conftest import NodeHandle
from tests.helpers.rest import bearer, unique

pytestmark = pytest.mark.integration

PORT_8080 = "The API runs on port 8080"
PORT_9090 = "The API runs on port 9090"
DB_5432 = "The database listens on port 5432"
DB_6432 = "The database listens on port 6432"
DB_MERGED = "The database listened on port 5432 until May and listens on port 6432 since"


@pytest.fixture
def api(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


def test_the_login_form_keeps_the_key_in_session_storage_only_and_sign_out_clears_it(
    page: Page, secured_node: NodeHandle, api: httpx.Client, shot: Callable[[str], Path]
) -> None:
    key = secured_node.create_key(unique("ns"), "claude-code")
    saved = rest_save(api, "The console shows this memory after a login", bearer(key))
    wait_indexed(api, saved["seq"], bearer(key))
    wrong = "eng_" + "x" * 40
    refusal = api.get("/v1/memories", headers=bearer(wrong))
    assert refusal.status_code == 401
    server_message = refusal.json()["detail"]
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))

    page.goto(console_url(secured_node))
    page.wait_for_selector("form#login", state="visible")
    assert page.locator("form#login input[name=key]").get_attribute("type") == "password"
    shot("form")
    page.fill("form#login input[name=key]", wrong)
    page.locator("form#login").locator("button[type=submit], input[type=submit]").first.click()
    alert = page.locator("[role=alert]", has_text=server_message)
    alert.wait_for()
    shot("wrong-key")
    assert page.locator("form#login").is_visible()

    page.fill("form#login input[name=key]", key)
    page.locator("form#login").locator("button[type=submit], input[type=submit]").first.click()
    page.wait_for_selector("[data-testid=memory-row]")
    shot("signed-in")
    assert "after a login" in page.locator("[data-testid=memory-row]").first.inner_text()
    assert stored_key(page) == key
    visited = [*urls, page.url]
    assert not [url for url in visited if key in url or wrong in url], visited
    assert any("/v1/memories" in url for url in urls)

    page.click("button#logout")
    page.wait_for_selector("form#login", state="visible")
    shot("signed-out")
    assert stored_key(page) is None
    page.reload()
    page.wait_for_selector("form#login", state="visible")
    assert page.locator("[data-testid=memory-row]").count() == 0


def flag(api: httpx.Client, writer: str, older_text: str, newer_text: str, topic: str) -> tuple[str, str]:
    """Saves two disagreeing memories (two agents, one topic) and runs the contradictions job, as the consolidation
    tests do (no LLM); their ids, older first."""
    older = rest_save(api, older_text, bearer(writer, "claude-code"), topics=[topic])["id"]
    newer = rest_save(api, newer_text, bearer(writer, "gemini-cli"), topics=[topic])["id"]
    job = api.post("/v1/consolidation/jobs", json={"kind": "contradictions"}, headers=bearer(writer, "claude-code"))
    assert job.status_code == 200, job.text
    assert (job.json()["state"], job.json()["result"]["flagged"]) == ("succeeded", 1)
    return older, newer


def test_an_admin_resolves_contradictions_with_the_buttons_and_they_disappear(
    page: Page, secured_node: NodeHandle, api: httpx.Client, shot: Callable[[str], Path]
) -> None:
    namespace = unique("ns")
    writer = secured_node.create_key(namespace, "")  # a shared key: the agent comes from X-Engram-Agent-ID
    admin = secured_node.create_key(namespace, "user", scopes=("read", "write", "admin"))

    def memory(memory_id: str) -> dict[str, Any]:
        got = api.get(f"/v1/memories/{memory_id}", headers=bearer(admin))
        assert got.status_code == 200, got.text
        body: dict[str, Any] = got.json()
        return body

    older, newer = flag(api, writer, PORT_8080, PORT_9090, "api")
    log_in(page, secured_node, admin, "#/contradictions")
    wait_loaded(page, "contradictions")
    item = page.locator("[data-testid=contradiction]")
    item.wait_for()
    shot("open")
    assert item.count() == 1
    assert PORT_8080 in item.inner_text() and PORT_9090 in item.inner_text()
    for resolution in ("keep_both", "keep_newer", "merge", "override"):
        assert item.locator(f"button[data-resolve={resolution}]").is_visible(), resolution

    item.locator("button[data-resolve=keep_newer]").click()  # one click: no form
    item.wait_for(state="detached")
    shot("kept-newer")
    archived = memory(older)
    assert archived["status"] == "archived"
    assert any(r["kind"] == "merged-into" and r["memory_id"] == newer for r in archived["relations"])
    assert memory(newer)["status"] == "active"
    assert api.get("/v1/contradictions", headers=bearer(admin)).json()["contradictions"] == []

    db_older, db_newer = flag(api, writer, DB_5432, DB_6432, "database")
    page.reload()
    wait_loaded(page, "contradictions")
    item = page.locator("[data-testid=contradiction]")
    item.locator("button[data-resolve=merge]").click()
    form = item.locator("form[data-testid=resolve-form][data-resolution=merge]")
    form.locator("textarea[name=content]").fill(DB_MERGED)
    shot("merge-form")
    form.locator("button[type=submit]").click()
    item.wait_for(state="detached")
    shot("merged")
    both = [memory(db_older), memory(db_newer)]
    assert [m["status"] for m in both] == ["archived", "archived"]
    survivors = {r["memory_id"] for m in both for r in m["relations"] if r["kind"] == "merged-into"}
    assert [memory(survivor)["content"] for survivor in survivors] == [DB_MERGED]
    assert api.get("/v1/contradictions", headers=bearer(admin)).json()["contradictions"] == []
