"""What a session's end captures (engram/hooks/capture.py): the summary, and a handoff proposed for work left open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engram.config import Settings
from engram.hooks.capture import capture
from engram.hooks.payloads import CLAUDE_CODE, parse


def _fire(settings: Settings, payload: dict[str, Any]) -> list[dict[str, Any]]:
    return capture(parse(CLAUDE_CODE, str(payload["hook_event_name"]), payload), settings)


def test_work_left_failing_ends_in_a_summary_that_proposes_a_handoff_without_guessing_its_target(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env({}, home=tmp_path / "engram")
    base = {"session_id": "s1", "cwd": str(tmp_path)}
    _fire(settings, base | {"hook_event_name": "UserPromptSubmit", "prompt": "Users get logged out randomly."})
    _fire(settings, base | {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {
        "file_path": str(tmp_path / "config/session.php"), "old_string": "a", "new_string": "b"}})  # fmt: skip
    _fire(settings, base | {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {
        "command": "vendor/bin/phpunit tests/SessionTest.php"}, "error": "Exit code 1\nFailed asserting that null "
        "matches expected 'alice'.\nFAILURES!"})  # fmt: skip
    (summary,) = _fire(settings, base | {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})

    assert summary["memory_type"] == "session-summary" and "open-work" in summary["tags"]
    assert "`vendor/bin/phpunit tests/SessionTest.php` still fails" in summary["content"]
    handoff = summary["metadata"]["handoff"]
    assert "target_agent" not in handoff and handoff["active_files"] == ["config/session.php"]
    assert handoff["next_steps"] == [
        "Make `vendor/bin/phpunit tests/SessionTest.php` pass: Failed asserting that null matches expected 'alice'."
    ]
    assert "Users get logged out randomly." in handoff["context"]


def test_a_session_that_leaves_nothing_failing_proposes_no_handoff(tmp_path: Path) -> None:
    settings = Settings.from_env({}, home=tmp_path / "engram")
    base = {"session_id": "s2", "cwd": str(tmp_path)}
    _fire(settings, base | {"hook_event_name": "UserPromptSubmit", "prompt": "We decided to use Postgres 16."})
    (summary,) = _fire(settings, base | {"hook_event_name": "SessionEnd", "reason": "clear"})
    assert "handoff" not in summary["metadata"] and "open-work" not in summary["tags"]


def test_a_session_replayed_under_another_id_adds_no_second_summary_but_other_work_does(tmp_path: Path) -> None:
    settings = Settings.from_env({}, home=tmp_path / "engram")

    def session(session_id: str, prompt: str) -> list[dict[str, Any]]:
        base = {"session_id": session_id, "cwd": str(tmp_path)}
        _fire(settings, base | {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
        return _fire(settings, base | {"hook_event_name": "SessionEnd", "reason": "clear"})

    (first,) = session("s1", "The login test fails on CI since the session cookie moved.")
    assert first["memory_type"] == "session-summary"
    assert session("s2", "The login test fails on CI since the session cookie moved.") == []  # merged into s1's
    (other,) = session("s3", "Add dark mode to the settings page and keep the contrast accessible.")
    assert other["memory_type"] == "session-summary" and "dark mode" in other["content"]
