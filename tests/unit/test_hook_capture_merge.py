"""Near-duplicates in capture (engram/hooks/capture.py): merged within a session by key or words, and across the
project's sessions on this device by words only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engram.config import Settings
from engram.hooks.capture import capture
from engram.hooks.payloads import CLAUDE_CODE, parse


def _settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, home=tmp_path / "engram")


def _prompt(session: str, cwd: Path, text: str) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd), "prompt": text}


def _edit(session: str, cwd: Path, old: str, new: str) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Edit",
            "tool_input": {"file_path": str(cwd / "app.py"), "old_string": old, "new_string": new}}  # fmt: skip


def _captured(settings: Settings, payload: dict[str, Any]) -> list[dict[str, Any]]:
    return capture(parse(CLAUDE_CODE, str(payload["hook_event_name"]), payload), settings)


def test_a_decision_restated_in_another_session_of_the_project_is_not_stored_again(tmp_path: Path) -> None:
    settings, project = _settings(tmp_path), tmp_path / "shop"
    project.mkdir()
    said = "We decided to keep money as integer cents everywhere."
    assert len(_captured(settings, _prompt("s1", project, said))) == 1
    assert _captured(settings, _prompt("s2", project, "Remember: " + said)) == []
    assert len(_captured(settings, _prompt("s3", project, "We decided to drop the legacy API in March."))) == 1


def test_the_same_file_changed_in_another_session_is_news_but_not_twice_in_one(tmp_path: Path) -> None:
    settings, project = _settings(tmp_path), tmp_path / "shop"
    project.mkdir()
    _captured(settings, _prompt("s1", project, "Fix the rounding."))
    assert len(_captured(settings, _edit("s1", project, "a = 1", "a = 2"))) == 1
    assert _captured(settings, _edit("s1", project, "a = 2", "a = 3")) == []  # same session, same file: merged
    _captured(settings, _prompt("s2", project, "Add the currency to the receipt header."))
    assert len(_captured(settings, _edit("s2", project, "header = title", "header = f'{title} ({currency})'"))) == 1


def test_another_project_does_not_merge_with_this_one(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    (tmp_path / "shop").mkdir()
    (tmp_path / "blog").mkdir()
    said = "From now on always write commit messages in the imperative."
    assert len(_captured(settings, _prompt("s1", tmp_path / "shop", said))) == 1
    assert len(_captured(settings, _prompt("s2", tmp_path / "blog", said))) == 1
