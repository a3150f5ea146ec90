"""What a session-start hook answers: the node's session context (GET /v1/session-context) within the token
budget, in the agent's output format. Standard library only, so the answer is quick."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from engram.config import Settings
from engram.hooks.payloads import CLAUDE_CODE, GEMINI_CLI, HookEvent
from engram.hooks.privacy import project_of

CONTEXT_TIMEOUT = 3.0  # seconds the session start waits for the node; without an answer it starts with none


def session_context(event: HookEvent, settings: Settings, base_url: str) -> str:
    """The Markdown to inject: this project's context, or the namespace's when the project has none yet."""
    project = project_of(event.cwd)
    markdown, count = _fetch(base_url, event.agent, settings, project) if project else ("", 0)
    if not count:
        markdown, count = _fetch(base_url, event.agent, settings, "")
    return markdown if count else ""


def output(agent: str, event_name: str, context: str) -> str:
    """The hook's stdout: the agent's JSON for added context (Claude Code and Gemini CLI both read
    hookSpecificOutput.additionalContext)."""
    if agent in (CLAUDE_CODE, GEMINI_CLI) and context:
        return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}})
    return "{}" if agent == GEMINI_CLI else ""


def _fetch(base_url: str, agent: str, settings: Settings, project: str) -> tuple[str, int]:
    params = {"token_budget": str(settings.hook_context_tokens)}
    if project:
        params["project"] = project
    request = urllib.request.Request(f"{base_url}/v1/session-context?{urllib.parse.urlencode(params)}")
    request.add_header("X-Engram-Agent-ID", agent)
    request.add_header("X-Engram-Device", settings.device)
    if settings.api_key:
        request.add_header("Authorization", f"Bearer {settings.api_key}")
    try:
        with urllib.request.urlopen(request, timeout=CONTEXT_TIMEOUT) as answer:
            data = json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return "", 0
    return str(data.get("markdown") or ""), len(data.get("memories") or [])
