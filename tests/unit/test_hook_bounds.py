"""The hooks' bounds on real files (engram/hooks/limits.py, files.py, spool.py, session.py): payloads cut with a
marker, deep JSON read without a RecursionError, the spool and the session state bounded, files 0600 and folders
0700, commands naming private files recognised."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

from engram.hooks.files import private_dir, write_private
from engram.hooks.limits import INPUT_CUT, MAX_FIELD_CHARS, MAX_INPUT_BYTES, payload, read_input
from engram.hooks.privacy import mentions_private, paths_in
from engram.hooks.session import MAX_STATE_BYTES, Failure, SessionState
from engram.hooks.spool import Spool


def test_a_payload_over_the_read_bound_keeps_its_complete_fields_and_says_where_it_was_cut() -> None:
    body = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_input": {"command": "make"},
            "tool_response": {"stdout": "x" * (MAX_INPUT_BYTES * 2)}}  # fmt: skip
    raw = json.dumps(body).encode()
    head, total = read_input(io.BytesIO(raw))
    assert len(head) == MAX_INPUT_BYTES + 1 and total == len(raw)
    read = payload(head, total)
    assert read["session_id"] == "s1" and read["tool_input"] == {"command": "make"} and read[INPUT_CUT]
    assert read["tool_response"].startswith("[cut by Engram's hook: the input was")


def test_deeply_nested_json_is_read_without_a_recursion_error() -> None:
    raw = b'{"hook_event_name": "SessionStart", "source": ' + b"[" * 100_000 + b"]" * 100_000 + b', "cwd": "/x"}'
    read = payload(raw)
    assert read["hook_event_name"] == "SessionStart" and "nested too deeply" in read["source"]
    shallow = payload(b'{"a": ' + b"[" * 40 + b'"x"' + b"]" * 40 + b"}")
    assert "nested deeper than 32 levels" in json.dumps(shallow)


def test_a_long_field_keeps_its_start_and_end_around_a_marker() -> None:
    text = "start " + "y" * 200_000 + " AssertionError: the end"
    read = payload(json.dumps({"error": text}).encode())
    assert len(read["error"]) <= MAX_FIELD_CHARS and read["error"].startswith("start ")
    assert read["error"].endswith("AssertionError: the end") and "characters]" in read["error"]


def test_the_spool_keeps_within_its_bound_dropping_the_oldest_and_counting_them(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", max_bytes=64 * 1024)
    for n in range(200):
        spool.append([{"content": f"capture {n} " + "z" * 900, "source_id": f"hook:{n}"}])
    waiting = spool.pending()
    assert (tmp_path / "spool" / "captures.jsonl").stat().st_size <= 64 * 1024
    assert waiting[-1]["source_id"] == "hook:199"
    assert spool.notes()["dropped"]["count"] == 200 - len(waiting)
    assert any(line.startswith("dropped: the ") for line in spool.report("http://127.0.0.1:1"))


def test_the_session_state_stays_within_its_bound_whatever_it_is_fed() -> None:
    state = SessionState("s")
    state.prompts = ["p" * 1_000_000 for _ in range(50)]
    state.files = [f"src/{n}/" + "f" * 5000 for n in range(5000)]
    state.failures = [Failure(f"k{n}", "c" * 100_000, "e" * 10_000, 0.0) for n in range(40)]
    state.captured = [f"hook:{n:032x}" for n in range(100_000)]
    text = state.bounded_json()
    assert len(text.encode()) <= MAX_STATE_BYTES
    assert "cut by Engram's hook" in SessionState.from_json("s", text).prompts[-1]


def test_files_are_0600_and_folders_0700_and_older_modes_are_set_right(tmp_path: Path) -> None:
    old = tmp_path / "hooks"
    old.mkdir(mode=0o755)
    os.chmod(old, 0o755)
    assert stat.S_IMODE(private_dir(old / "sessions").stat().st_mode) == 0o700
    assert stat.S_IMODE(private_dir(old).stat().st_mode) == 0o700
    target = old / "state.json"
    target.write_text("{}")
    os.chmod(target, 0o644)
    write_private(target, b'{"a": 1}')
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == '{"a": 1}'
    assert [p.name for p in old.iterdir() if p.is_file()] == ["state.json"]  # no temporary file left


def test_a_command_naming_a_private_file_is_recognised_however_it_is_written() -> None:
    for command in ("source .env && pytest -q", "docker run --env-file=.env app", "cat ~/.aws/credentials|head",
                    "psql $(cat .pgpass)", "make 2>.env.local"):  # fmt: skip
        assert mentions_private(command), command
    assert not mentions_private("pytest tests/test_login.py -q")
    assert paths_in(".venv/bin/pytest tests/x.py && cat logs/a.log") == ["tests/x.py", "logs/a.log"]


def test_lone_surrogates_in_a_payload_become_writable_text(tmp_path: Path) -> None:
    # json.loads keeps "\ud800" as a lone surrogate, which UTF-8 cannot encode: the session file and the spool raised.
    raw = b'{"prompt": "use \\ud800 postgres", "tool_input": {"command\\udc00": "pytest x\\udc00.py"}}'
    read = payload(raw)
    assert read["prompt"] == "use ? postgres" and read["tool_input"] == {"command?": "pytest x?.py"}
    Spool(tmp_path).append([{"content": read["prompt"], "metadata": read["tool_input"]}])
    assert "use ? postgres" in (tmp_path / "captures.jsonl").read_text(encoding="utf-8")
