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
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.hooks.files import open_private, private_dir, write_private
from engram.hooks.limits import cut_text

MAX_RECENT = 50  # observations kept to compare new ones with
MAX_PROMPTS = 20
MAX_FAILURES = 20
# Bounds of the state file, whatever the agent sends: it is read and rewritten at every event of the session.
MAX_TEXT_CHARS = 2000  # a prompt, a failing command, a learned text, the last answer
MAX_FILES = 200  # files changed (the summary lists 10, its metadata 50)
MAX_PATH_CHARS = 500
MAX_CAPTURED = 500  # source ids of the session's observations (the summary's metadata lists them)
MAX_LEARNED = 20
MAX_EDITS = 20  # files changed since a failure
MAX_STATE_BYTES = 256 * 1024  # the whole file: the oldest of everything goes first beyond it


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

    def next_source_id(self) -> str:
        """A new capture's idempotency key: random, so that no other caller can guess it and import first under it
        (the node scopes import keys to the calling agent too). The spool keeps it, so a resent capture keeps it."""
        self.sequence += 1
        return f"hook:{secrets.token_hex(16)}"

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
        """Keeps the state within its bounds: the newest items of each list, each text cut with a marker."""
        self.prompts = [cut_text(p, MAX_TEXT_CHARS) for p in self.prompts[-MAX_PROMPTS:]]
        self.failures = self.failures[-MAX_FAILURES:]
        for failure in self.failures:
            failure.command, failure.error = cut_text(failure.command, MAX_TEXT_CHARS), failure.error[:MAX_TEXT_CHARS]
            failure.edits_since = [p[:MAX_PATH_CHARS] for p in failure.edits_since[:MAX_EDITS]]
            failure.tests = [t[:MAX_PATH_CHARS] for t in failure.tests[:MAX_EDITS]]
        self.recent = self.recent[-MAX_RECENT:]
        self.files = [p[:MAX_PATH_CHARS] for p in self.files[:MAX_FILES]]
        self.learned = [cut_text(t, MAX_TEXT_CHARS) for t in self.learned[-MAX_LEARNED:]]
        self.captured = self.captured[-MAX_CAPTURED:]
        self.last_message = self.last_message[-MAX_TEXT_CHARS:]

    def bounded_json(self) -> str:
        """The state as JSON within MAX_STATE_BYTES: while over it, the older half of each list goes."""
        self.trim()
        text = self.to_json()
        while len(text.encode()) > MAX_STATE_BYTES:
            lists = ("prompts", "failures", "recent", "files", "learned", "captured")
            if not any(getattr(self, name) for name in lists):
                self.last_message = ""
                return self.to_json()
            for name in lists:
                items = getattr(self, name)
                setattr(self, name, items[len(items) // 2 :] if len(items) > 1 else [])
            text = self.to_json()
        return text


def session_file(directory: Path, session_id: str) -> Path:
    """The state file of a session (its id made safe as a file name)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:80] or "unknown"
    if safe != session_id:
        safe += "-" + hashlib.sha256(session_id.encode()).hexdigest()[:8]
    return directory / f"{safe}.json"


@contextlib.contextmanager
def open_session(directory: Path, session_id: str) -> Iterator[SessionState]:
    """The session's state, locked against other processes capturing for it (a lock file beside it); written back on
    exit atomically (a capture worker killed mid-write leaves the state as it was), private: 0600 in a 0700 folder."""
    path = session_file(private_dir(directory), session_id)
    lock = open_private(path.with_name(f".{path.name}.lock"), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = SessionState.from_json(session_id, _read(path))
        yield state
        write_private(path, state.bounded_json().encode())
    finally:
        os.close(lock)


def _read(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(MAX_STATE_BYTES * 4)
    except FileNotFoundError:
        return ""
