"""The web console's first paint (issue 13, point 4: under a second on a node with 50k memories) in Debian's headless
chromium driven by Playwright: a node is filled by bulk import, then /console#/memories is loaded several times, each
in a fresh browser context (empty cache and session storage), and the Performance API gives each load's
first-contentful-paint and the moment the first memory rows are in the page."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.async_api import Browser, ViewportSize, async_playwright

from bench.calls import IMPORT_TAG, settle
from bench.chromium import launch_options
from bench.client import EngramClient, connect
from bench.node import Node
from bench.progress import Phases, Progress, note

DEFAULT_CONSOLE_SIZE = 50_000
DEFAULT_CONSOLE_LOADS = 5
FIRST_PAINT_TARGET_MS = 1000.0
ROW = "[data-testid=memory-row]"
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
LOAD_TIMEOUT_MS = 60_000
# performance.now() when the first memory row is in the page (polled every animation frame), else 0 (keep polling)
ROWS_AT = f"() => document.querySelector({json.dumps(ROW)}) ? performance.now() : 0"
PAINT_TIMES = """() => {
    const paint = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
    const nav = performance.getEntriesByType('navigation')[0];
    return {fcp: paint['first-contentful-paint'] ?? null, first_paint: paint['first-paint'] ?? null,
            dom_content_loaded: nav ? nav.domContentLoadedEventEnd : null, load: nav ? nav.loadEventEnd : null,
            rows: document.querySelectorAll(ROW).length};
}""".replace("ROW", json.dumps(ROW))


@dataclass(frozen=True, slots=True)
class ConsoleOptions:
    """Where the console's node lives, how many memories it holds, and how many page loads are timed."""

    home_root: Path
    settings: dict[str, str]
    chunk: int
    size: int = DEFAULT_CONSOLE_SIZE
    loads: int = DEFAULT_CONSOLE_LOADS


async def run_console(texts: Sequence[str], options: ConsoleOptions, phases: Phases, out: dict[str, Any]) -> None:
    """One node with ``options.size`` memories; ``options.loads`` timed loads of the memory browser."""
    if len(texts) < options.size:
        raise ValueError(f"the console run needs {options.size} texts, the corpus has {len(texts)}")
    out |= {"size": options.size, "loads": options.loads, "page": "/console#/memories", "viewport": VIEWPORT}
    with phases("console/start"):
        node = Node.start(options.home_root / "console", options.settings)
    try:
        async with connect(node.http_url, node.mcp_url) as client:
            with phases("console/import"):
                out["import"] = await _fill(client, texts[: options.size], options.chunk)
            with phases("console/settle"):
                out["settle_seconds"] = await settle(client)
        with phases("console/loads"):
            out |= await _timed_loads(f"{node.http_url}/console#/memories", options.loads)
        note(f"  console @{options.size}: first contentful paint median {out['first_contentful_paint_ms']['median']}"
             f" ms, first rows median {out['first_rows_ms']['median']} ms")  # fmt: skip
    finally:
        node.stop_into(out)


async def _fill(client: EngramClient, texts: Sequence[str], chunk: int) -> dict[str, Any]:
    """Bulk-imports the texts and waits until the index has them."""
    records = [{"content": text, "tags": [IMPORT_TAG], "source_id": f"console:{i}"} for i, text in enumerate(texts)]
    began = time.monotonic()
    with Progress(f"console import to {len(records)}", len(records), unit="memories") as bar:
        result = await client.import_records(records, chunk=chunk, on_chunk=bar.advance)
    await client.wait_indexed(result.last_seq)
    return result.summary() | {"indexed_seconds": round(time.monotonic() - began, 1)}


async def _timed_loads(url: str, loads: int) -> dict[str, Any]:
    """Loads ``url`` ``loads`` times, each in a fresh context; the median and every figure, and the API calls of
    the loads (with the largest `limit` any of them asked for: the API allows 100)."""
    samples: list[dict[str, Any]] = []
    calls: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**launch_options())
        try:
            for _ in range(loads):
                samples.append(await _load(browser, url, calls))
        finally:
            await browser.close()
    limits = [int(v) for call in calls for v in parse_qs(urlsplit(call).query).get("limit", []) if v.isdigit()]
    return {
        "first_contentful_paint_ms": _spread([s["fcp"] for s in samples]),
        "first_rows_ms": _spread([s["rows_at"] for s in samples]),
        "dom_content_loaded_ms": _spread([s["dom_content_loaded"] for s in samples]),
        "rows_shown": samples[-1]["rows"] if samples else 0,
        "api_calls_per_load": len(calls) // max(1, loads),
        "api_paths": sorted({urlsplit(call).path for call in calls}),
        "largest_limit": max(limits, default=None),
        "target_ms": FIRST_PAINT_TARGET_MS,
        "samples": samples,
    }


async def _load(browser: Browser, url: str, calls: list[str]) -> dict[str, Any]:
    """One load in a fresh context: when the first rows were in the page, and the paint timings."""
    context = await browser.new_context(viewport=VIEWPORT)
    try:
        page = await context.new_page()
        page.on("request", lambda request: calls.append(request.url) if "/v1/" in request.url else None)
        await page.goto(url, wait_until="commit", timeout=LOAD_TIMEOUT_MS)
        rows_at = await (await page.wait_for_function(ROWS_AT, polling="raf", timeout=LOAD_TIMEOUT_MS)).json_value()
        timings: dict[str, Any] = await page.evaluate(PAINT_TIMES)
        return {key: _ms(value) for key, value in timings.items() if key != "rows"} | {
            "rows_at": _ms(rows_at),
            "rows": timings["rows"],
        }
    finally:
        await context.close()


def _spread(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    median = round(statistics.median(present), 1) if present else None
    return {"median": median, "min": min(present, default=None), "max": max(present, default=None), "all": values}


def _ms(value: Any) -> float | None:
    return round(float(value), 1) if isinstance(value, int | float) and value > 0 else None
