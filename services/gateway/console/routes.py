"""The web console: its static files at /console (plain ES modules, no build step), under a strict Content Security
Policy, and the two reads it needs beyond the agents' API: recent consolidation jobs and memories per day per agent."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

import datetime as dt
import hashlib
import math
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from engram.config import MAX_SEARCH_LIMIT
from engram.errors import Unavailable
from engram.model import format_time
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.consolidation import NO_CONSOLIDATION
from engram.services.gateway.rest.dependencies import CurrentBackend, CurrentCaller
from engram.services.gateway.rest.problems import ERROR_RESPONSES, problem
from engram.services.gateway.schemas.results import JobOut

CONSOLE_DIR = Path(__file__).parent / "static"
CONSOLE_PATH = "/console"
STATIC_PREFIX = "/console/static/"
INDEX = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# Everything from this origin, nothing inline, nothing elsewhere: the console builds its DOM from modules, so a
# memory's text can never run as script, and the key in session storage can never be sent to another site.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# no-cache: revalidated on every load (the ETag answers 304 when nothing changed), so an upgraded node never
# serves a stale module next to a new one.
CONSOLE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
DEFAULT_ACTIVITY_DAYS = 14
MAX_ACTIVITY_DAYS = 90
MAX_UTC_OFFSET_MINUTES = 14 * 60  # the widest offsets in use: UTC-12 to UTC+14
DAY_SECONDS = 86400
DEFAULT_JOBS = 20


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


@cache
def load_assets(folder: Path = CONSOLE_DIR) -> dict[str, Asset]:
    """Every servable file of the console by its path under the folder, read once (at the first request for one):
    they ship in the package and change only with it. Only these paths are ever served, so no request path reaches
    the file system."""
    assets = {}
    for path in sorted(folder.rglob("*")):
        media_type = CONTENT_TYPES.get(path.suffix)
        if media_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        assets[path.relative_to(folder).as_posix()] = Asset(body, media_type, etag)
    return assets


def asset_response(request: Request, asset: Asset) -> Response:
    headers = {**CONSOLE_HEADERS, "ETag": asset.etag}
    if asset.etag in (request.headers.get("if-none-match") or ""):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


class JobsResult(BaseModel):
    jobs: list[JobOut] = Field(description="Newest first.")


class ActivityDayOut(BaseModel):
    date: str = Field(description="The day, YYYY-MM-DD, in the asked time zone offset.")
    start: str = Field(description="When the day starts (RFC 3339, UTC).")
    total: int
    by_agent: dict[str, int] = Field(description="Owning agent -> memories created that day (every status).")


class ActivityResult(BaseModel):
    days: list[ActivityDayOut] = Field(description="Oldest first; the last is today.")
    agents: list[str] = Field(description="Every agent counted, the busiest first.")
    utc_offset_minutes: int


def first_day_start(now: float, days: int, utc_offset_minutes: int) -> float:
    """The epoch start of the first of ``days`` local days ending today, at the offset's local midnight."""
    offset = utc_offset_minutes * 60
    today = math.floor((now + offset) / DAY_SECONDS) * DAY_SECONDS
    return today - (days - 1) * DAY_SECONDS - offset


def activity_result(counts: list[tuple[float, dict[str, int]]], utc_offset_minutes: int) -> ActivityResult:
    offset = dt.timedelta(minutes=utc_offset_minutes)
    totals: dict[str, int] = {}
    days = []
    for start, by_agent in counts:
        for agent, count in by_agent.items():
            totals[agent] = totals.get(agent, 0) + count
        local = dt.datetime.fromtimestamp(start, dt.UTC) + offset
        days.append(
            ActivityDayOut(
                date=local.date().isoformat(),
                start=format_time(start) or "",
                total=sum(by_agent.values()),
                by_agent=dict(sorted(by_agent.items())),
            )
        )
    agents = sorted(totals, key=lambda agent: (-totals[agent], agent))
    return ActivityResult(days=days, agents=agents, utc_offset_minutes=utc_offset_minutes)


# GET / (a redirect to the console), GET /console (and /console/static/<file>), GET /v1/consolidation/jobs and
# GET /v1/activity. build_app includes them; the two reads take the app's backend and the caller as injected
# dependencies (rest/dependencies.py).
router = APIRouter()


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
async def root(request: Request) -> RedirectResponse:
    """The node's address in a browser opens the console (people type it, and older docs sent them there)."""
    return RedirectResponse(request.scope.get("root_path", "") + CONSOLE_PATH, status_code=307)


@router.api_route(CONSOLE_PATH, methods=["GET", "HEAD"], include_in_schema=False)
@router.api_route(f"{CONSOLE_PATH}/", methods=["GET", "HEAD"], include_in_schema=False)
async def console_index(request: Request) -> Response:
    """The console's page; it signs in with a key kept in session storage (none needed in dev mode)."""
    return asset_response(request, load_assets()[INDEX])


@router.api_route(STATIC_PREFIX + "{name:path}", methods=["GET", "HEAD"], include_in_schema=False)
async def console_file(name: str, request: Request) -> Response:
    asset = load_assets().get(name)
    if asset is None:
        return problem(404, f"The console has no file {name[:80]!r}. Open {CONSOLE_PATH} to start it.")
    return asset_response(request, asset)


@router.get("/v1/consolidation/jobs", response_model=JobsResult, responses=ERROR_RESPONSES,
            tags=["consolidation"], summary="The recent jobs of your namespace")  # fmt: skip
async def list_jobs(
    caller: CurrentCaller,
    backend: CurrentBackend,
    limit: Annotated[int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="Number of jobs (1-100).")] = DEFAULT_JOBS,
) -> JobsResult:
    """Running and ended jobs (kept a week) of every consolidation replica, newest first, with their progress
    (done of total, phase). 503 without a consolidation service."""
    require_scope(caller, "read")
    if backend.consolidation is None:
        raise Unavailable(NO_CONSOLIDATION)
    jobs = await backend.consolidation.list_jobs(caller, limit=limit)
    return JobsResult(jobs=[JobOut.of(job) for job in jobs])


@router.get("/v1/activity", response_model=ActivityResult, responses=ERROR_RESPONSES, tags=["status"],
            summary="Memories created per day, by agent")  # fmt: skip
async def activity(
    caller: CurrentCaller,
    backend: CurrentBackend,
    days: Annotated[
        int, Query(ge=1, le=MAX_ACTIVITY_DAYS, description=f"Days up to today (1-{MAX_ACTIVITY_DAYS}).")
    ] = DEFAULT_ACTIVITY_DAYS,
    utc_offset_minutes: Annotated[
        int,
        Query(
            ge=-MAX_UTC_OFFSET_MINUTES,
            le=MAX_UTC_OFFSET_MINUTES,
            description="Your time zone's offset from UTC in minutes (UTC+2: 120), so days start at your midnight.",
        ),
    ] = 0,
) -> ActivityResult:
    """Memories of your namespace created on each day, by owning agent, whatever their status now (archived
    and superseded ones were created too). Counted by the index, never by reading the memories."""
    require_scope(caller, "read")
    start = first_day_start(time.time(), days, utc_offset_minutes)
    counts = await backend.search_client.activity(caller, start=start, days=days)
    return activity_result(counts, utc_offset_minutes)
