"""Live events over Server-Sent Events at /events/stream (to be filled in)."""

from __future__ import annotations

from fastapi import APIRouter

from engram.config import Settings
from engram.log import Log
from engram.services.gateway.identity import Resolver


def build_events_router(resolver: Resolver, settings: Settings, event_log: Log | None) -> APIRouter:
    """The SSE route, scoped to the caller's namespace by its key."""
    return APIRouter()
