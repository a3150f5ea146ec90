"""The web console against a real node with keys: its files at /console (content types, CSP, caching, nothing else
served) and the two reads it adds, GET /v1/consolidation/jobs and GET /v1/activity (authenticated, validated, inside
the caller's namespace, counted right)."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser

import httpx
import pytest

from engram.services.gateway.console.routes import CONSOLE_DIR, CONTENT_SECURITY_POLICY
from tests.conftest import NodeHandle
from tests.helpers.rest import assert_problem

pytestmark = [pytest.mark.integration]

IMPORT = re.compile(r"""^\s*import\s[^"']*?from\s+["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)


def unique(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def secured(secured_node: NodeHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured_node.http_url, timeout=60) as client:
        yield client


class _Page(HTMLParser):
    """What the console's page loads, and anything that a strict CSP would block (inline script, style, handlers)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script":
            self._in_script = True
            if named.get("src"):
                self.scripts.append(str(named["src"]))
        if tag == "link" and named.get("rel") in ("stylesheet", "icon"):
            self.styles.append(str(named["href"]))
        if tag == "style" or "style" in named or any(name.startswith("on") for name in named):
            self.inline.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script")


def _assert_console_headers(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["etag"]


@pytest.mark.parametrize("path", ["/console", "/console/"])
def test_the_console_page_is_served_without_a_key_under_a_strict_csp(secured: httpx.Client, path: str) -> None:
    page = secured.get(path)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    _assert_console_headers(page)
    parsed = _Page()
    parsed.feed(page.text)
    assert parsed.scripts == ["/console/static/app.js"]
    assert "/console/static/style.css" in parsed.styles
    assert parsed.inline == [], "inline script, style or handlers would be blocked by the CSP"
    assert "http://" not in page.text and "https://" not in page.text  # nothing from another origin


def test_every_module_the_console_imports_is_served_as_javascript(secured: httpx.Client) -> None:
    """Follows the import graph from app.js: each module is there, as text/javascript, and loads nothing remote."""
    pending, seen = ["app.js"], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        module = secured.get(f"/console/static/{name}")
        assert module.status_code == 200, name
        assert module.headers["content-type"] == "text/javascript; charset=utf-8", name
        _assert_console_headers(module)
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", module.text), name
        folder = name.rpartition("/")[0]
        for target in IMPORT.findall(module.text):
            parts = [*filter(None, folder.split("/")), *target.split("/")]
            resolved: list[str] = []
            for part in parts:
                if part == "..":
                    resolved.pop()
                elif part != ".":
                    resolved.append(part)
            pending.append("/".join(resolved))
    on_disk = {p.relative_to(CONSOLE_DIR).as_posix() for p in CONSOLE_DIR.rglob("*.js")}
    assert seen == on_disk, "a module on disk is never loaded, or a loaded one is missing"
    css = secured.get("/console/static/style.css")
    assert css.status_code == 200 and css.headers["content-type"] == "text/css; charset=utf-8"
    icon = secured.get("/console/static/icon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"


def test_an_unchanged_console_file_answers_304_to_its_etag(secured: httpx.Client) -> None:
    first = secured.get("/console/static/app.js")
    again = secured.get("/console/static/app.js", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


@pytest.mark.parametrize(
    "path", ["/console/static/nope.js", "/console/static/%2e%2e/console_routes.py", "/console/static/../app.py"]
)
def test_only_the_console_files_are_served(secured: httpx.Client, path: str) -> None:
    answer = secured.get(path)
    assert answer.status_code == 404
    assert "def " not in answer.text and "import" not in answer.text


# -- GET /v1/consolidation/jobs --------------------------------------------------------------------------------


def test_listing_jobs_needs_a_key(secured: httpx.Client) -> None:
    assert assert_problem(secured.get("/v1/consolidation/jobs"), 401)["code"] == "unauthenticated"


def test_jobs_are_listed_newest_first_and_only_in_their_namespace(
    secured_node: NodeHandle, secured: httpx.Client
) -> None:
    mine, theirs = unique("ns"), unique("ns")
    me = bearer(secured_node.create_key(mine, "claude-code"))
    other = bearer(secured_node.create_key(theirs, "gemini-cli"))
    ran = []
    for kind in ("expire", "decay"):
        job = secured.post("/v1/consolidation/jobs", json={"kind": kind}, headers=me)
        assert job.status_code == 200, job.text
        ran.append(job.json()["id"])
    their_job = secured.post("/v1/consolidation/jobs", json={"kind": "expire"}, headers=other)
    assert their_job.status_code == 200, their_job.text

    listed = secured.get("/v1/consolidation/jobs", headers=me)
    assert listed.status_code == 200, listed.text
    jobs = listed.json()["jobs"]
    assert [job["id"] for job in jobs] == ran[::-1]
    assert [job["kind"] for job in jobs] == ["decay", "expire"]
    assert all(job["namespace"] == mine and job["state"] == "succeeded" for job in jobs)
    assert all(job["total"] >= job["done"] >= 0 for job in jobs)

    one = secured.get("/v1/consolidation/jobs", params={"limit": 1}, headers=me).json()["jobs"]
    assert [job["id"] for job in one] == [ran[1]]
    theirs_listed = secured.get("/v1/consolidation/jobs", headers=other).json()["jobs"]
    assert [job["id"] for job in theirs_listed] == [their_job.json()["id"]]
    # A job of another namespace is not found by id either (the store's keys name the namespace).
    assert assert_problem(secured.get(f"/v1/consolidation/jobs/{ran[0]}", headers=other), 404)["code"] == "not_found"
    assert secured.get(f"/v1/consolidation/jobs/{ran[0]}", headers=me).json()["kind"] == "expire"


@pytest.mark.parametrize("limit", ["0", "101", "many"])
def test_a_jobs_limit_out_of_range_is_refused(secured_node: NodeHandle, secured: httpx.Client, limit: str) -> None:
    me = bearer(secured_node.create_key(unique("ns"), "claude-code"))
    assert (
        assert_problem(secured.get("/v1/consolidation/jobs", params={"limit": limit}, headers=me), 400)["code"]
        == "invalid_argument"
    )


# -- GET /v1/activity -----------------------------------------------------------------------------------------


def test_activity_needs_a_key(secured: httpx.Client) -> None:
    assert assert_problem(secured.get("/v1/activity"), 401)["code"] == "unauthenticated"


def _save(api: httpx.Client, headers: dict[str, str], content: str) -> str:
    saved = api.post("/v1/memories", json={"content": content}, headers=headers)
    assert saved.status_code == 201, saved.text
    return str(saved.json()["id"])


def test_activity_counts_todays_memories_per_agent_in_the_namespace_only(
    secured_node: NodeHandle, secured: httpx.Client
) -> None:
    mine, theirs = unique("ns"), unique("ns")
    claude = bearer(secured_node.create_key(mine, "claude-code"))
    gemini = bearer(secured_node.create_key(mine, "gemini-cli"))
    stranger = bearer(secured_node.create_key(theirs, "claude-code"))
    for n in range(3):
        _save(secured, claude, f"Claude's note {n} about the release train")
    archived = _save(secured, gemini, "Gemini's note about the flaky test")
    _save(secured, gemini, "Gemini's note about the cache size")
    for n in range(4):
        _save(secured, stranger, f"A note of another namespace {n}")
    # An archived memory was still created that day: it counts.
    assert secured.delete(f"/v1/memories/{archived}", headers=gemini).status_code == 200

    answer = secured.get("/v1/activity", params={"days": 7, "utc_offset_minutes": 0}, headers=claude)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert len(body["days"]) == 7
    today = dt.datetime.now(dt.UTC).date()
    assert [day["date"] for day in body["days"]] == [(today - dt.timedelta(days=6 - i)).isoformat() for i in range(7)]
    counted: dict[str, int] = {}  # summed over the days: a run across midnight counts some yesterday
    for day in body["days"]:
        for agent, count in day["by_agent"].items():
            counted[agent] = counted.get(agent, 0) + count
        assert day["total"] == sum(day["by_agent"].values())
    assert counted == {"claude-code": 3, "gemini-cli": 2}
    assert all(day["total"] == 0 for day in body["days"][:-2])
    assert body["agents"] == ["claude-code", "gemini-cli"]  # the busiest first

    theirs = secured.get("/v1/activity", params={"days": 2}, headers=stranger).json()["days"]
    assert sum(day["by_agent"].get("claude-code", 0) for day in theirs) == 4
    assert {agent for day in theirs for agent in day["by_agent"]} == {"claude-code"}


def test_activity_days_start_at_the_callers_midnight(secured_node: NodeHandle, secured: httpx.Client) -> None:
    me = bearer(secured_node.create_key(unique("ns"), "claude-code"))
    offset = 14 * 60  # UTC+14: the first place where a day begins
    body = secured.get("/v1/activity", params={"days": 2, "utc_offset_minutes": offset}, headers=me).json()
    local_today = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=offset)).date()
    assert [day["date"] for day in body["days"]] == [(local_today - dt.timedelta(days=1)).isoformat(), str(local_today)]
    start = dt.datetime.fromisoformat(body["days"][-1]["start"].replace("Z", "+00:00"))
    assert (start + dt.timedelta(minutes=offset)).time() == dt.time(0, 0)
    assert body["utc_offset_minutes"] == offset


@pytest.mark.parametrize(
    "params", [{"days": 0}, {"days": 91}, {"days": "week"}, {"utc_offset_minutes": 841}, {"utc_offset_minutes": -841}]
)
def test_activity_refuses_days_or_offsets_out_of_range(
    secured_node: NodeHandle, secured: httpx.Client, params: dict[str, object]
) -> None:
    me = bearer(secured_node.create_key(unique("ns"), "claude-code"))
    answer = secured.get("/v1/activity", params=params, headers=me)
    assert assert_problem(answer, 400)["code"] == "invalid_argument"
    assert next(iter(params)) in answer.json()["detail"]
