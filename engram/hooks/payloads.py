"""One agent's hook payload as a HookEvent: the same fields whichever agent sent it.

The payload shapes are those of each agent's hook reference (docs/hooks.md cites them): Claude Code and Gemini CLI
send one JSON object on stdin; Codex CLI's `notify` program gets one JSON object as its last argument."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from engram.hooks.limits import INPUT_CUT

CLAUDE_CODE = "claude-code"
GEMINI_CLI = "gemini-cli"
CODEX = "codex"
AGENTS = (CLAUDE_CODE, GEMINI_CLI, CODEX)

# What happened, whatever the agent calls it.
START = "start"  # a session starts or resumes
PROMPT = "prompt"  # the user sent a prompt
TOOL = "tool"  # a tool ran (successfully or not)
TURN = "turn"  # the agent finished answering (a turn)
COMPACT = "compact"  # the context is about to be compacted
END = "end"  # the session ends

# Each agent's event names (its hook reference) -> what happened.
KINDS: dict[str, dict[str, str]] = {
    CLAUDE_CODE: {
        "SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL, "PostToolUseFailure": TOOL,
        "Stop": TURN, "PreCompact": COMPACT, "SessionEnd": END,
    },
    GEMINI_CLI: {
        "SessionStart": START, "BeforeAgent": PROMPT, "AfterTool": TOOL, "AfterAgent": TURN, "PreCompress": COMPACT,
        "SessionEnd": END,
    },
    CODEX: {"agent-turn-complete": TURN},
}  # fmt: skip


@dataclass(slots=True)
class HookEvent:
    """What one hook call says happened."""

    agent: str
    name: str  # the agent's own event name, e.g. PostToolUse
    kind: str  # START, PROMPT, TOOL, TURN, COMPACT, END, or "" for an event Engram does not use
    session_id: str = ""
    cwd: str = ""
    prompt: str = ""
    tool: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    failed: bool = False  # the tool call failed (PostToolUseFailure, or the tool said so)
    error: str = ""
    source: str = ""  # SessionStart: startup, resume, clear, compact
    reason: str = ""  # SessionEnd: why it ended
    last_message: str = ""  # the agent's last answer, when the payload carries it
    cut: bool = False  # the payload was read only in part (engram.hooks.limits): what a tool did is not known
    at: float = field(default_factory=time.time)


def parse(agent: str, name: str, payload: dict[str, Any]) -> HookEvent:
    """The HookEvent of an agent's payload for its event ``name`` (the payload's own event name wins)."""
    name = str(payload.get("hook_event_name") or payload.get("type") or name)
    kind = KINDS.get(agent, {}).get(name, "")
    if agent == CODEX:
        return _codex(name, kind, payload)
    tool_input = payload.get("tool_input")
    error = payload.get("error")
    return HookEvent(
        agent=agent,
        name=name,
        kind=kind,
        session_id=str(payload.get("session_id") or ""),
        cwd=str(payload.get("cwd") or ""),
        prompt=str(payload.get("prompt") or ""),
        tool=str(payload.get("tool_name") or ""),
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        tool_response=payload.get("tool_response"),
        failed=name == "PostToolUseFailure" or bool(error),
        error=_text(error),
        source=str(payload.get("source") or payload.get("trigger") or ""),
        reason=str(payload.get("reason") or ""),
        last_message=_text(payload.get("last_assistant_message") or payload.get("prompt_response") or ""),
        cut=bool(payload.get(INPUT_CUT)),
    )


def _codex(name: str, kind: str, payload: dict[str, Any]) -> HookEvent:
    """Codex's notify payload: kebab-case keys, the turn's input messages and the last answer."""
    messages = payload.get("input-messages") or []
    prompt = "\n".join(str(m) for m in messages) if isinstance(messages, list) else str(messages)
    return HookEvent(
        agent=CODEX,
        name=name,
        kind=kind,
        session_id=str(payload.get("thread-id") or payload.get("turn-id") or ""),
        cwd=str(payload.get("cwd") or ""),
        prompt=prompt,
        last_message=_text(payload.get("last-assistant-message") or ""),
    )


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "content", "text", "error"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return str(value)
