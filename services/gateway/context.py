"""Session context: the memories an agent should see first, within a token budget; pins (to be filled in)."""

from __future__ import annotations

from fastapi import APIRouter

from engram.config import Settings
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import Resolver
from engram.services.gateway.operations import CursorTracker


def build_context_router(backend: Backend, cursors: CursorTracker, resolver: Resolver, settings: Settings) -> APIRouter:
    """REST routes of session context and pins (under /v1)."""
    return APIRouter()
