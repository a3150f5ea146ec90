"""The hooks' inbox (issue 35): events kept in order, private, bounded, and taken again after a worker died."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from engram.config import Settings
from engram.hooks import inbox
from engram.hooks.hook import home_dir
from engram.hooks.session import session_file
from engram.hooks.worker import drain_now, waiting


def _event(n: int, session: str = "s1") -> bytes:
    body = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": f"Prompt {n}\nok"})
    return inbox.record("claude-code", "UserPromptSubmit", body.encode(), len(body), b"ENGRAM_PORT=9\0ENGRAM_DEVICE=d")


def test_events_come_back_in_order_with_their_variables_and_the_files_are_private(tmp_path: Path) -> None:
    folder = inbox.folder(str(tmp_path / "hooks"))
    for n in range(5):
        assert inbox.put(folder, _event(n))
    data, offset = inbox.take(folder)
    taken = list(inbox.events(data, offset))
    assert [json.loads(raw)["prompt"] for _, _, _, _, raw, _ in taken] == [f"Prompt {n}\nok" for n in range(5)]
    assert {(agent, name) for _, agent, name, _, _, _ in taken} == {("claude-code", "UserPromptSubmit")}
    assert inbox.variables(taken[0][3]) == {"ENGRAM_PORT": "9", "ENGRAM_DEVICE": "d"}
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in Path(folder).iterdir())


def test_a_dead_workers_events_are_taken_again_after_the_last_one_done_and_new_ones_wait(tmp_path: Path) -> None:
    folder = inbox.folder(str(tmp_path / "hooks"))
    for n in range(3):
        inbox.put(folder, _event(n))
    data, offset = inbox.take(folder)
    first_end = next(inbox.events(data, offset))[0]
    inbox.mark(folder, first_end)  # the worker died after its first event
    inbox.put(folder, _event(3))  # appended meanwhile: a new file
    data, offset = inbox.take(folder)
    assert offset == first_end and len(list(inbox.events(data, offset))) == 2
    inbox.finish(folder)
    data, offset = inbox.take(folder)
    assert offset == 0 and [json.loads(e[4])["prompt"] for e in inbox.events(data, offset)] == ["Prompt 3\nok"]
    inbox.finish(folder)
    assert inbox.take(folder) == (b"", 0) and not inbox.waiting(folder)


def test_a_cut_record_ends_the_file_and_a_full_inbox_refuses_the_event(tmp_path: Path) -> None:
    folder = inbox.folder(str(tmp_path / "hooks"))
    whole = _event(0)
    assert len(list(inbox.events(whole + _event(1)[:-3], 0))) == 1
    assert len(list(inbox.events(b"not a header\n" + whole, 0))) == 0
    big = b"x" * (inbox.MAX_INBOX_BYTES // 2)
    assert inbox.put(folder, inbox.record("a", "E", big, len(big), b""))
    assert not inbox.put(folder, inbox.record("a", "E", big, len(big), b""))
    assert os.path.getsize(os.path.join(folder, inbox.EVENTS)) < inbox.MAX_INBOX_BYTES


def test_one_worker_at_a_time(tmp_path: Path) -> None:
    folder = inbox.folder(str(tmp_path / "hooks"))
    held = inbox.claim(folder)
    assert held is not None and inbox.claim(folder) is None
    os.close(held)
    again = inbox.claim(folder)
    assert again is not None
    os.close(again)


def test_flush_captures_what_a_dead_worker_left_in_order(tmp_path: Path) -> None:
    home = tmp_path / "engram"
    folder = inbox.folder(str(home / "hooks"))
    for n in range(4):
        inbox.put(folder, _event(n))
    inbox.take(folder)  # a worker took them and died before capturing any
    inbox.put(folder, _event(4))
    assert waiting(home) == 5
    notes: list[str] = []
    assert drain_now(home, notes.append) and not notes
    state = json.loads(session_file(home / "hooks" / "sessions", "s1").read_text())
    assert state["events"] == 5 and [p.split("\n")[0] for p in state["prompts"]] == [f"Prompt {n}" for n in range(5)]
    assert waiting(home) == 0 and sorted(p.name for p in Path(folder).iterdir()) == [".lock", ".worker"]


@pytest.mark.parametrize("given", [None, "relative/home", "~/elsewhere"])
@pytest.mark.parametrize("variable", [None, "/tmp/from-env"])
def test_the_hook_finds_the_data_dir_where_the_settings_do(
    given: str | None, variable: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGRAM_HOME", raising=False)
    if variable:
        monkeypatch.setenv("ENGRAM_HOME", variable)
    assert Path(home_dir(given)) == Settings.from_env(home=given).home
