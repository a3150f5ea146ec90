"""Fixtures of the web console's browser tests: one headless chromium per module, a fresh browser context per test,
a seeded real node per module, and full-page screenshots of each step."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, sync_playwright

from tests.browser.console import (
    SCREENSHOTS,
    WAIT_MS,
    Seed,
    launch,
    screenshot_path,
    seed_console_node,
    take_screenshot,
)
from tests.conftest import NodeHandle, start_node

DESKTOP: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, for one test module (each test gets a context of its own). Not for the session:
    Playwright's sync API keeps an event loop running on the main thread while it is open, which the asyncio tests
    that run after these ones could not start theirs beside."""
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page in a fresh browser context (its own session storage, cookies and cache); an uncaught script error on
    it fails the test."""
    context = browser.new_context(viewport=DESKTOP)
    context.set_default_timeout(WAIT_MS)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert not errors, f"uncaught script errors in the console: {errors}"


@pytest.fixture
def shot(page: Page, request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """shot("step") writes a full-page PNG to tests/browser/screenshots/<test>-<step>.png; the test's screenshots of
    an earlier run are removed first, so none of a step that no longer exists stays behind."""
    for stale in SCREENSHOTS.glob(f"{screenshot_path(request.node.name, '').stem}*.png"):
        stale.unlink()
    return lambda step: take_screenshot(page, request.node.name, step)


@pytest.fixture(scope="module")
def console_node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    """A real dev-mode node (anonymous callers on loopback) for one test module."""
    handle = start_node(tmp_path_factory.mktemp("console"), model_cache)
    yield handle
    assert handle.stop() == 0


@pytest.fixture(scope="module")
def seed(console_node: NodeHandle) -> Seed:
    """The console node's memories, written through the real MCP client and REST before the module's tests."""
    return seed_console_node(console_node)
