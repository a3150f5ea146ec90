"""A session's capture state, one small JSON file per session under <home>/hooks/sessions, locked while used:
what was asked, what changed, the failures still waiting for a fix, and the recent observations (to merge
near-duplicates)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_RECENT = 50  # observations kept to compare new ones with
MAX_PROMPTS = 20
MAX_FAILURES = 20


@dataclass(slots=True)
class Failure:
    """A command that failed and has not been seen passing since."""

    key: str  # what identifies the command (engram.hooks.extract.command_key)
    command: str
    error: str
    at: float
    edits_since: list[str] = field(default_factory=list)  # files changed after it failed
    changes: list[str] = field(default_factory=list)  # those edits, in short (`old` -> `new`)
    ran_since: list[str] = field(default_factory=list)  # commands that succeeded after it failed
    tests: list[str] = field(default_factory=list)  # the failing tests its output named


@dataclass(slots=True)
class Recent:
    """An observation already captured this session: its kind, key and words, and how often it repeated."""

    kind: str
    key: str
    words: list[str]
    source_id: str
    count: int = 1


@dataclass(slots=True)
class SessionState:
    session_id: str
    agent: str = ""
    project: str = ""
    prompts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # files changed, in order of first change
    failures: list[Failure] = field(default_factory=list)
    recent: list[Recent] = field(default_factory=list)
    learned: list[str] = field(default_factory=list)  # error-fix, decision and preference texts, for the summary
    captured: list[str] = field(default_factory=list)  # source ids of every observation spooled this session
    events: int = 0
    sequence: int = 0  # the last observation number (source ids)
    summarized: bool = False
    last_message: str = ""

    @property
    def last_prompt(self) -> str:
        return self.prompts[-1] if self.prompts else ""

    def next_source_id(self, device: str) -> str:
        self.sequence += 1
        return f"hook:{device}:{self.agent}:{self.session_id}:{self.sequence}"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, session_id: str, text: str) -> SessionState:
        try:
            data: dict[str, Any] = json.loads(text) if text.strip() else {}
        except ValueError:
            data = {}
        state = cls(session_id=session_id)
        for f in dataclasses.fields(cls):
            if f.name in data and f.name != "session_id":
                setattr(state, f.name, data[f.name])
        state.failures = [Failure(**item) for item in data.get("failures", [])]
        state.recent = [Recent(**item) for item in data.get("recent", [])]
        return state

    def trim(self) -> None:
        self.prompts = self.prompts[-MAX_PROMPTS:]
        self.failures = self.failures[-MAX_FAILURES:]
        self.recent = self.recent[-MAX_RECENT:]


def session_file(directory: Path, session_id: str) -> Path:
    """The state file of a session (its id made safe as a file name)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:80] or "unknown"
    if safe != session_id:
        safe += "-" + hashlib.sha256(session_id.encode()).hexdigest()[:8]
    return directory / f"{safe}.json"


@contextlib.contextmanager
def open_session(directory: Path, session_id: str) -> Iterator[SessionState]:
    """The session's state, locked against the session's other hook processes; written back on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    path = session_file(directory, session_id)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        state = SessionState.from_json(session_id, handle.read())
        yield state
        state.trim()
        handle.seek(0)
        handle.truncate()
        handle.write(state.to_json())
        handle.flush()
