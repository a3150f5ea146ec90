"""The browser-test harness of the web console: the system chromium driven by Playwright, screenshots, MCP calls from
synchronous tests, and the memories a console node is seeded with."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from mcp import Client
from playwright.sync_api import Browser, Page, Playwright

from bench.chromium import launch_options
from tests.conftest import NodeHandle
from tests.helpers.mcp import call, http_client

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
KEY_STORAGE = "engram.key"
MCP_CLIENT = "console-test-mcp"  # the client name the console shows in a memory's history
WAIT_MS = 20_000  # the longest a page may take to show what a test waits for (the first search loads the models)
BULK_MEMORIES = 130  # more than the largest page the console may ask for (limit <= 100): paging has a next page
T = TypeVar("T")


def launch(playwright: Playwright) -> Browser:
    """Debian's chromium, headless (bench/chromium.py: the same binary and flags as bench --console)."""
    return playwright.chromium.launch(**launch_options())


def console_url(node: NodeHandle, route: str = "") -> str:
    """The console of ``node`` at a hash route such as "#/memories"."""
    return f"{node.http_url}/console{route}"


def screenshot_path(test_name: str, step: str) -> Path:
    """tests/browser/screenshots/<test>-<step>.png (parametrised names lose their brackets)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{test_name}-{step}").strip("_")
    return SCREENSHOTS / f"{safe}.png"


def take_screenshot(page: Page, test_name: str, step: str) -> Path:
    """A full-page PNG of what the page shows now."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = screenshot_path(test_name, step)
    page.screenshot(path=str(path), full_page=True)
    return path


def stored_key(page: Page) -> str | None:
    """The API key the console keeps in session storage (None when signed out)."""
    key: str | None = page.evaluate(f"() => sessionStorage.getItem({json.dumps(KEY_STORAGE)})")
    return key


def log_in(page: Page, node: NodeHandle, key: str, route: str = "#/memories") -> None:
    """Signs in through the login form and waits for the console to open at ``route``."""
    page.goto(console_url(node, route))
    page.wait_for_selector("form#login", state="visible")
    page.fill("form#login input[name=key]", key)
    page.locator("form#login").locator("button[type=submit], input[type=submit]").first.click()
    page.wait_for_selector("button#logout", state="visible")
    page.wait_for_selector("form#login", state="hidden")


def wait_loaded(page: Page, route: str) -> None:
    """Waits until the page of ``route`` is shown and no longer busy."""
    root = f'main[data-page="{route}"]'
    page.wait_for_selector(root, state="visible")
    page.wait_for_selector(f'{root}:not([aria-busy="true"])')


def run_async(coroutine: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
    """Runs ``coroutine`` to completion on a thread of its own: Playwright's sync API keeps an event loop running on
    the test's thread, where asyncio.run is refused."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout)


def with_mcp(
    node: NodeHandle, body: Callable[[Client], Awaitable[T]], *, agent: str | None = None, key: str | None = None
) -> T:
    """Runs ``body`` with a real MCP SDK client over streamable HTTP, as ``agent`` (dev mode) or with ``key``."""

    async def session() -> T:
        async with http_client(node.mcp_url, key=key, agent=agent, name=MCP_CLIENT) as client:
            return await body(client)

    return run_async(session())


def mcp_save(node: NodeHandle, agent: str, content: str, **fields: Any) -> dict[str, Any]:
    """save_memory through a real MCP client; the save's result."""

    async def save(client: Client) -> dict[str, Any]:
        return await call(client, "save_memory", content=content, **fields)

    return with_mcp(node, save, agent=agent)


def rest_save(api: httpx.Client, content: str, headers: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """POST /v1/memories; the save's result."""
    saved = api.post("/v1/memories", json={"content": content, **fields}, headers=headers or {})
    assert saved.status_code == 201, saved.text
    body: dict[str, Any] = saved.json()
    return body


def wait_indexed(api: httpx.Client, seq: int, headers: dict[str, str] | None = None) -> None:
    """Returns once the index has applied the log up to ``seq`` (a list with min_seq waits for it)."""
    listed = api.get("/v1/memories", params={"limit": 1, "min_seq": seq}, headers=headers or {})
    assert listed.status_code == 200, listed.text


@dataclass
class Seed:
    """What a console node holds before its tests run: memories of several agents and teams, handoffs in each
    status, searches for the latency chart, and a bulk of memories for paging."""

    agents: tuple[str, ...]
    teams: tuple[str, ...]
    ids: dict[str, str] = field(default_factory=dict)  # a name of the tests' -> memory id
    last_seq: int = 0


# (name, agent, team, content, type, tags): the memories the pages show and the filters narrow
SEEDED = (
    ("deploy", "claude-code", "alpha", "Deploys go out from the main branch after a green CI run", "decision",
     ["deploy"]),
    ("postgres", "claude-code", "alpha", "The staging database runs Postgres 16 on port 5433", "fact", ["database"]),
    ("tabs", "gemini-cli", "beta", "The user prefers tabs over spaces in Makefiles", "preference", ["style"]),
    ("flaky", "gemini-cli", "beta", "The upload test fails when the temp disk is nearly full", "finding",
     ["testing", "deploy"]),
)  # fmt: skip
BULK_AGENT = "codex"
HANDOFFS = (("pending", "Finish the search page filters"), ("accepted", "Review the schema migration"),
            ("completed", "Rotate the staging credentials"))  # fmt: skip
SEED_SEARCHES = ("deploy branch", "staging database port", "tabs or spaces")


def seed_console_node(node: NodeHandle) -> Seed:
    """Fills a dev-mode node through the real MCP client (two agents in two teams, handoffs between them) and REST
    (a third agent's bulk import, searches); returns once the index has all of it."""
    seed = Seed(agents=("claude-code", "gemini-cli", BULK_AGENT), teams=("alpha", "beta"))
    seqs = run_async(_seed_over_mcp(node, seed))
    with httpx.Client(base_url=node.http_url, timeout=60) as api:
        lines = "\n".join(
            json.dumps({"content": f"Paging note {i:03d}: build step {i} of the nightly pipeline", "tags": ["bulk"]})
            for i in range(BULK_MEMORIES)
        )
        headers = {"Content-Type": "application/x-ndjson", "X-Engram-Agent-ID": BULK_AGENT}
        imported = api.post("/v1/memories:import", content=lines.encode(), headers=headers)
        assert imported.status_code == 200, imported.text
        seed.last_seq = max([*seqs, imported.json()["last_seq"]])
        wait_indexed(api, seed.last_seq)
        for query in SEED_SEARCHES:  # search latency for the activity chart (/metrics)
            assert api.post("/v1/memories:search", json={"query": query}).status_code == 200, query
    return seed


async def _seed_over_mcp(node: NodeHandle, seed: Seed) -> list[int]:
    """The SEEDED memories, and one handoff from claude-code to gemini-cli in each status; their log sequences."""
    seqs: list[int] = []
    async with (
        http_client(node.mcp_url, agent="claude-code", name=MCP_CLIENT) as claude,
        http_client(node.mcp_url, agent="gemini-cli", name=MCP_CLIENT) as gemini,
    ):
        clients = {"claude-code": claude, "gemini-cli": gemini}
        for name, agent, team, content, memory_type, tags in SEEDED:
            saved = await call(clients[agent], "save_memory", content=content, memory_type=memory_type, tags=tags,
                               team=team)  # fmt: skip
            seed.ids[name] = saved["id"]
            seqs.append(saved["seq"])
        for status, context in HANDOFFS:
            created = await call(claude, "create_handoff", target_agent="gemini-cli", context=context)
            seed.ids[f"handoff-{status}"] = created["id"]
            seqs.append(created["seq"])
            moves = {"pending": (), "accepted": ("accept_handoff",),
                     "completed": ("accept_handoff", "complete_handoff")}[status]  # fmt: skip
            for move in moves:
                seqs.append((await call(gemini, move, id=created["id"]))["seq"])
    return seqs
