"""The console's memory pages in a real headless chromium against a real dev-mode node: browsing with filters and
paging, search with each stage's rank, a memory's history and supersession chain, keyboard use and a narrow screen."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from playwright.sync_api import Page, ViewportSize

from tests.browser.console import (
    BULK_AGENT,
    MCP_CLIENT,
    SEEDED,
    Seed,
    console_url,
    stored_key,
    wait_indexed,
    wait_loaded,
    with_mcp,
)
from tests.conftest import NodeHandle
from tests.helpers.mcp import call

pytestmark = pytest.mark.integration

ROW = "[data-testid=memory-row]"
NARROW: ViewportSize = {"width": 360, "height": 740}
STAGE_RANK = re.compile(r"([a-z0-9+_-]+) (?:#(\d+)|\u2013)")  # "dense #1", or an en dash where the stage missed it


def row_texts(page: Page) -> list[str]:
    return page.locator(ROW).all_inner_texts()


def apply_filter(page: Page, name: str, value: str) -> list[str]:
    """Sets one field of the filters form, submits it, and returns the rows once they have changed."""
    before = row_texts(page)
    form = page.locator("form#filters")
    field = form.locator(f"[name={name}]")
    if field.evaluate("el => el.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)
    form.locator("button[type=submit], input[type=submit]").first.click()
    page.wait_for_function(
        """([row, before]) => {
            const root = document.querySelector('main[data-page="memories"]');
            const rows = [...document.querySelectorAll(row)].map(r => r.innerText);
            return root && root.getAttribute('aria-busy') !== 'true' && rows.length > 0
                && JSON.stringify(rows) !== JSON.stringify(before);
        }""",
        arg=[ROW, before],
    )
    return row_texts(page)


def test_dev_mode_opens_the_browser_without_a_login_and_filters_narrow_the_rows_and_paging_loads_more(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    page.goto(console_url(console_node))
    wait_loaded(page, "memories")
    page.wait_for_selector(ROW)
    assert not page.locator("form#login").is_visible()
    assert stored_key(page) is None
    everything = row_texts(page)
    shot("rows")
    assert any("Paging note" in row for row in everything)

    by_agent = apply_filter(page, "agent", "gemini-cli")
    shot("agent-filter")
    gemini = [content for _, agent, _, content, _, _ in SEEDED if agent == "gemini-cli"]
    assert all(any(text in row for row in by_agent) for text in gemini), by_agent
    assert not any("Paging note" in row or "Postgres" in row for row in by_agent), by_agent

    apply_filter(page, "agent", "")
    by_team = apply_filter(page, "team", "alpha")
    alpha = [content for _, _, team, content, _, _ in SEEDED if team == "alpha"]
    assert len(by_team) == 2 and all(any(text in row for text in alpha) for row in by_team), by_team

    apply_filter(page, "team", "")
    by_type = apply_filter(page, "type", "fact")
    assert len(by_type) == 1 and "Postgres 16" in by_type[0], by_type

    apply_filter(page, "type", "")
    by_tag = apply_filter(page, "tag", "deploy")
    assert len(by_tag) == 2 and any("main branch" in r for r in by_tag) and any("upload test" in r for r in by_tag)

    apply_filter(page, "tag", "")
    first_page = set(row_texts(page))
    page.click("button#next-page")
    page.wait_for_function(
        "([row, before]) => [...document.querySelectorAll(row)].some(r => !before.includes(r.innerText))",
        arg=[ROW, list(first_page)],
    )
    shot("next-page")
    assert set(row_texts(page)) - first_page, "the next page showed no memory the first did not"
    assert BULK_AGENT in seed.agents


def test_search_shows_hits_with_each_stages_rank(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    query = "which database runs on staging"
    page.goto(console_url(console_node, "#/search"))
    wait_loaded(page, "search")
    page.fill("form#search input[name=q]", query)
    page.press("form#search input[name=q]", "Enter")
    page.wait_for_selector("[data-testid=search-hit]")
    shot("hits")
    first = page.locator("[data-testid=search-hit]").first
    assert "Postgres 16" in first.inner_text()
    ranks = [text.strip() for text in first.locator("[data-testid=stage-rank]").all_inner_texts()]
    assert ranks and all(STAGE_RANK.fullmatch(text) for text in ranks), ranks
    shown = {m.group(1): int(m.group(2)) for m in map(STAGE_RANK.fullmatch, ranks) if m and m.group(2)}
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        answer = api.post("/v1/memories:search", json={"query": query, "explain": True})
    assert answer.status_code == 200, answer.text
    top = answer.json()["hits"][0]
    assert top["memory"]["id"] == seed.ids["postgres"]
    assert shown == {stage: r["rank"] for stage, r in top["explain"].items() if r["rank"] > 0}, (ranks, top["explain"])
    assert {"dense", "bm25"} <= set(shown)


def test_a_memorys_page_shows_its_three_versions_with_who_when_client_and_a_diff(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    async def save_and_update_twice(client: Client) -> tuple[str, int]:
        saved = await call(client, "save_memory", content="The release train leaves every Tuesday at noon")
        await call(client, "update_memory", id=saved["id"], content="The release train leaves every Wednesday at noon")
        last = await call(client, "update_memory", id=saved["id"], content="The release train leaves every "
                          "Wednesday at 3 pm")  # fmt: skip
        return saved["id"], last["seq"]

    memory_id, seq = with_mcp(console_node, save_and_update_twice, agent="claude-code")
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        wait_indexed(api, seq)
    page.goto(console_url(console_node, f"#/memory/{memory_id}"))
    wait_loaded(page, "memory")
    page.wait_for_selector("[data-testid=history-version]")
    shot("history")

    root = page.locator('main[data-page="memory"]')
    assert "Wednesday at 3 pm" in root.inner_text()
    versions = page.locator("[data-testid=history-version]").all_inner_texts()
    assert len(versions) == 3, versions
    for text in versions:
        assert "claude-code" in text and MCP_CLIENT in text, text
        assert any(char.isdigit() for char in text)  # when
    diffs = page.locator("[data-testid=version-diff]")
    assert diffs.count() == 2
    all_inserted = " ".join(diffs.locator("ins").all_inner_texts())
    all_removed = " ".join(diffs.locator("del").all_inner_texts())
    assert "Wednesday" in all_inserted and "Tuesday" in all_removed, (all_inserted, all_removed)
    assert "3 pm" in all_inserted and "noon" in all_removed, (all_inserted, all_removed)


def test_a_superseded_memory_shows_its_chain(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    async def supersede_twice(client: Client) -> tuple[str, str, str, int]:
        first = await call(client, "save_memory", content="The API gateway listens on port 8000")
        second = await call(client, "supersede_memory", old_id=first["id"], content="The API gateway listens on 8100")
        third = await call(client, "supersede_memory", old_id=second["id"], content="The gateway listens on 8200")
        return first["id"], second["id"], third["id"], third["seq"]

    first, second, third, seq = with_mcp(console_node, supersede_twice, agent="gemini-cli")
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        wait_indexed(api, seq)
    for shown in (first, second):
        page.goto(console_url(console_node, f"#/memory/{shown}"))
        wait_loaded(page, "memory")
        page.wait_for_selector("[data-testid=chain-link]")
        shot(f"chain-v{(first, second).index(shown) + 1}")
        links = page.locator("[data-testid=chain-link]")
        assert [link.get_attribute("data-id") for link in links.all()] == [first, second, third]
        chain = links.all_inner_texts()
        assert "8000" in chain[0] and "superseded" in chain[0] and "8200" in chain[2] and "active" in chain[2]
        assert links.nth((first, second).index(shown)).get_attribute("aria-current") == "page"
    relation = page.locator("[data-testid=relation]")  # the second memory's page: it replaced the first
    assert relation.count() == 1 and relation.get_attribute("data-kind") == "supersedes"
    assert relation.locator(f'a[href="#/memory/{first}"]').count() == 1


def test_keyboard_reaches_the_nav_and_the_first_row_and_a_narrow_screen_does_not_scroll_sideways(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    page.goto(console_url(console_node, "#/memories"))
    wait_loaded(page, "memories")
    page.wait_for_selector(ROW)
    reached: list[str] = []
    for _ in range(80):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """(row) => {
                const el = document.activeElement;
                if (!el) return '';
                if (el.matches('a[data-nav]')) return 'nav:' + el.dataset.nav;
                const first = document.querySelector(row);
                if (first && (el === first || first.contains(el))) return 'row';
                return '';
            }""",
            ROW,
        )
        reached.append(focused)
        if focused == "row":
            break
    navs = {name for name in reached if name.startswith("nav:")}
    assert {"nav:memories", "nav:search", "nav:live", "nav:health"} <= navs, reached
    assert reached[-1] == "row", f"Tab never reached the first memory row: {reached}"
    shot("row-focused")
    page.keyboard.press("Enter")
    wait_loaded(page, "memory")
    assert page.url.split("#")[1].startswith("/memory/")

    page.set_viewport_size(NARROW)
    for route in ("memories", "search", "live", "agents", "handoffs", "jobs", "health", "activity"):
        page.goto(console_url(console_node, f"#/{route}"))
        wait_loaded(page, route)
        if route == "memories":
            page.wait_for_selector(ROW)
            shot("narrow")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= NARROW["width"], f"#/{route} scrolls sideways at 360 px: {width}"


def test_a_memory_superseded_by_another_agent_names_that_agent_in_the_list(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    """Issue 33: the owner sees in the console's memory list that another agent superseded its memory."""

    async def save(client: Client) -> dict[str, Any]:
        return await call(client, "save_memory", content="The metrics retention is 15 days")

    async def supersede(client: Client) -> dict[str, Any]:
        return await call(client, "supersede_memory", old_id=old["id"], content="The metrics retention is 30 days")

    old = with_mcp(console_node, save, agent="retention-owner")
    new = with_mcp(console_node, supersede, agent="retention-editor")
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        wait_indexed(api, new["seq"])
    page.goto(console_url(console_node, "#/memories?status=superseded&agent=retention-owner"))
    wait_loaded(page, "memories")
    row = page.locator(f'{ROW}[data-id="{old["id"]}"]')
    row.wait_for()
    shot("superseded-by-other")
    assert "superseded by retention-editor" in row.inner_text()
