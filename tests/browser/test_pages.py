"""The console's other pages in a real headless chromium against a real dev-mode node: the live feed receiving an
MCP client's save, agents and teams, handoffs by status, consolidation jobs, health, and the activity charts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page

from tests.browser.console import (
    BULK_AGENT,
    BULK_MEMORIES,
    HANDOFFS,
    SEEDED,
    Seed,
    console_url,
    mcp_save,
    wait_loaded,
)
from tests.conftest import NodeHandle
from tests.helpers.rest import unique

pytestmark = pytest.mark.integration


def row_cells(row: Locator) -> list[str]:
    """The text of each cell of a table row."""
    return [text.strip() for text in row.locator("th, td").all_inner_texts()]


def open_page(page: Page, node: NodeHandle, route: str) -> None:
    page.goto(console_url(node, f"#/{route}"))
    wait_loaded(page, route)


def test_the_live_feed_shows_a_memory_an_mcp_client_saves_without_a_reload(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "live")
    page.wait_for_function("() => document.querySelector('#live-status')?.textContent.trim() === 'connected'")
    page.evaluate("() => { window.__notReloaded = true; }")
    content = f"Live feed check {unique()}: the cache is warmed before each deploy"

    mcp_save(console_node, "gemini-cli", content, tags=["live"])

    row = page.locator("[data-testid=event-row]", has_text=content)
    row.wait_for()
    shot("event")
    assert page.evaluate("() => window.__notReloaded === true"), "the page reloaded"
    assert "gemini-cli" in row.inner_text() and "memory_saved" in row.inner_text()
    assert "live" in page.url and page.locator("[data-testid=event-row]").first.inner_text() == row.inner_text()


def test_agents_and_teams_are_listed_with_their_counts(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "agents")
    page.wait_for_selector("[data-testid=agent-row]")
    page.wait_for_selector("[data-testid=team-row]")
    shot("agents")
    agents = {cells[0]: cells for cells in map(row_cells, page.locator("[data-testid=agent-row]").all())}
    assert set(seed.agents) <= set(agents), agents
    assert str(BULK_MEMORIES) in agents[BULK_AGENT], agents[BULK_AGENT]  # its bulk import, and nothing else
    teams = {cells[0]: cells for cells in map(row_cells, page.locator("[data-testid=team-row]").all())}
    assert set(teams) == set(seed.teams), teams
    for team, count in Counter(team for _, _, team, *_ in SEEDED).items():
        assert str(count) in teams[team], teams[team]


def test_handoffs_are_shown_by_status(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "handoffs")
    for status, context in HANDOFFS:
        select = page.locator("select#handoff-status")
        if select.count():
            select.select_option(status)
        else:
            page.get_by_role("tab", name=status, exact=False).click()
        row = page.locator("[data-testid=handoff-row]", has_text=context)
        row.wait_for()
        shot(status)
        others = [c for s, c in HANDOFFS if s != status]
        texts = page.locator("[data-testid=handoff-row]").all_inner_texts()
        assert not any(other in text for other in others for text in texts), (status, texts)
        assert "gemini-cli" in row.inner_text()


def test_a_job_run_from_the_form_shows_its_state_and_progress(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "jobs")
    form = page.locator("form#run-job")
    form.locator("select[name=kind]").select_option("dedupe")
    form.locator("button[type=submit], input[type=submit]").first.click()
    row = page.locator("[data-testid=job-row]", has_text="dedupe")
    row.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=job-row]')].some(r => /succeeded/.test(r.innerText))"
    )
    shot("job")
    assert "succeeded" in row.inner_text() and "near-duplicate" in row.inner_text()  # the job's own summary
    assert row.locator("progress").evaluate("bar => bar.position") == 1  # a finished job's bar is full


def test_health_shows_readiness_index_lag_and_sync_status(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "health")
    ready = page.locator("[data-testid=health-ready]")
    ready.wait_for()
    shot("health")
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        status = api.get("/v1/status").json()
    assert status["ready"] and ready.inner_text().strip().lower() == "ready"
    lag = page.locator("[data-testid=index-lag]").inner_text()
    assert re.match(rf"{status['index']['lag']}\b", lag), (lag, status["index"])
    assert page.locator("[data-testid=sync-status]").inner_text().strip() == status["sync"]["state"]
    whoami = page.locator("[data-testid=whoami]")
    whoami.wait_for()
    assert whoami.inner_text().startswith(f"Dev mode, no key: {status['caller']['identity']} · namespace default")


def test_activity_draws_memories_per_day_per_agent_and_search_latency(
    page: Page, console_node: NodeHandle, seed: Seed, shot: Callable[[str], Path]
) -> None:
    open_page(page, console_node, "activity")
    per_day = page.locator("svg[data-testid=chart-memories-per-day]")
    per_day.wait_for()
    assert per_day.locator("rect").count() >= len(seed.agents)
    legend = page.locator('main[data-page="activity"]').inner_text()
    assert all(agent in legend for agent in seed.agents), legend
    # The latency chart plots each poll interval of /metrics that saw searches: one search after the first poll.
    page.get_by_text("searches since the node started").wait_for()
    with httpx.Client(base_url=console_node.http_url, timeout=60) as api:
        assert api.post("/v1/memories:search", json={"query": "nightly pipeline"}).status_code == 200
    point = page.locator("svg[data-testid=chart-search-latency] circle").first
    point.wait_for()
    shot("charts")
    assert " ms" in (point.text_content() or "")
