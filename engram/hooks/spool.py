"""The local spool: captures wait in <home>/spool/captures.jsonl until the node takes them.

Appending never needs the node. Delivery sends the spool as one bulk import (POST /v1/memories:import), each line
with its source_id, so a capture sent twice (a crash between the node's answer and the spool's rewrite) is stored
once. Lines the node refuses go to rejected.jsonl with the reason; lines it refuses for the key (401, 403: revoked,
read-only, bound to another agent) can never succeed with that key, so they are parked in parked.jsonl with the
cause, shown by `engram hooks status`, and sent again only with another key or by `engram hooks flush`. Nothing else
leaves the spool until the node has answered for it. Every file is bounded (the oldest lines go first, and
notes.json says so) and private (engram.hooks.files)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.hooks.files import append_bounded, open_private, private_dir, write_private

SPOOL_FILE = "captures.jsonl"
HOOK_SOURCE = "hook"  # the source the node records for every capture (the X-Engram-Source header)
REJECTED_FILE = "rejected.jsonl"
PARKED_FILE = "parked.jsonl"
NOTES_FILE = "notes.json"  # what status shows: captures dropped for room, captures refused for the key
MAX_BATCH_LINES = 500
DEFAULT_MAX_BYTES = 8 * 1024 * 1024  # of the spool, and of the parked captures (ENGRAM_HOOK_SPOOL_MAX_BYTES)
MAX_REJECTED_BYTES = 1024 * 1024
SEND_TIMEOUT = 60.0  # in the background: a node that just started may take a while to embed the first ones
KEY_REFUSED = (401, 403)  # the key itself cannot write these captures: resending them with it changes nothing
TRANSIENT = (408, 425, 429)  # and every 5xx: the node may take them later


@dataclass(frozen=True, slots=True)
class Delivery:
    sent: int = 0
    stored: int = 0  # newly stored memories
    present: int = 0  # already stored (a capture delivered before)
    rejected: int = 0
    left: int = 0  # still in the spool
    error: str = ""  # why delivery stopped (no node answers ...)
    parked: int = 0  # captures the node refused for the key in this delivery (parked.jsonl)
    refused: str = ""  # why: the node's answer, and what to do


@dataclass(frozen=True, slots=True)
class Refusal:
    """The node's last refusal of the key for one agent's captures."""

    agent: str
    status: int
    reason: str
    at: float
    key: str  # a fingerprint of the key refused: parked captures go again once the key changes

    def advice(self) -> str:
        if self.status == 401:
            return ("the node does not accept the key (revoked or mistyped): give the agent a valid key "
                    "(ENGRAM_API_KEY), then run `engram hooks flush`")  # fmt: skip
        return (f"the key may not write as '{self.agent}' (read-only, or bound to another agent): give the agent a "
                f"key with the write scope for it (engram keys create --agent {self.agent or 'AGENT'} --scopes "
                "read,write), then run `engram hooks flush`")  # fmt: skip

    def describe(self) -> str:
        return f"the node answered {self.status} ({self.reason}): {self.advice()}"


class Spool:
    def __init__(self, directory: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE
        self.parked_path = directory / PARKED_FILE
        self.max_bytes = max_bytes

    @contextlib.contextmanager
    def _locked(self, name: str, *, wait: bool = True) -> Iterator[bool]:
        fd = open_private(private_dir(self.directory) / name, os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    def append(self, captures: list[dict[str, Any]]) -> None:
        """Adds captures (each a save_memory object with source_id, and `agent` and `device` to send it as); beyond
        the spool's bound the oldest go, and notes.json counts them."""
        if not captures:
            return
        data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in captures).encode()
        with self._locked(".lock"):
            dropped = append_bounded(self.path, data, self.max_bytes)
            if dropped:
                self._note_dropped(dropped)

    def pending(self) -> list[dict[str, Any]]:
        return _parsed(_lines(self.path))

    def parked(self) -> list[dict[str, Any]]:
        return _parsed(_lines(self.parked_path))

    def notes(self) -> dict[str, Any]:
        try:
            data = json.loads((self.directory / NOTES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def refusals(self) -> list[Refusal]:
        found = self.notes().get("refused") or {}
        out = []
        for agent, item in found.items() if isinstance(found, dict) else ():
            with contextlib.suppress(TypeError, ValueError, KeyError):
                out.append(Refusal(agent, int(item["status"]), str(item["reason"]), float(item["at"]),
                                   str(item.get("key", ""))))  # fmt: skip
        return out

    def report(self, node_url: str) -> list[str]:
        """What `engram hooks status` says about the spool: what waits, what was parked and why, what was lost."""
        lines = [f"spool: {len(self.pending())} capture(s) waiting for the node at {node_url}"]
        parked = Counter(str(c.get("agent") or "") for c in self.parked())
        for refusal in self.refusals():
            if parked.get(refusal.agent):
                lines.append(f"parked: {parked[refusal.agent]} capture(s) of {refusal.agent or 'the agent'} that the "
                             f"node refused for the key: {refusal.describe()}")  # fmt: skip
        dropped = self.notes().get("dropped") or {}
        if isinstance(dropped, dict) and dropped.get("count"):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(dropped.get("at", 0))))
            lines.append(f"dropped: the {dropped['count']} oldest capture(s), the spool being full "
                         f"({self.max_bytes} bytes, ENGRAM_HOOK_SPOOL_MAX_BYTES) while no node took them (last at "
                         f"{when}); `engram hooks flush` clears this note")  # fmt: skip
        rejected = len(_lines(self.directory / REJECTED_FILE))
        if rejected:
            lines.append(f"rejected: {rejected} capture(s) the node refused for good, with its reasons in "
                         f"{self.directory / REJECTED_FILE}")  # fmt: skip
        return lines

    def clear_dropped(self) -> None:
        with self._locked(".lock"):
            notes = self.notes()
            if notes.pop("dropped", None) is not None:
                self._write_notes(notes)

    def deliver(
        self, base_url: str, *, api_key: str | None = None, wait: bool = True, retry_parked: bool = False
    ) -> Delivery:
        """Sends what the spool holds, oldest first, until it is empty or the node does not answer. With wait=False
        returns at once when another process is delivering (it takes what was appended meanwhile too). Parked
        captures go again first when ``retry_parked`` or when the key is not the one the node refused."""
        with self._locked(".deliver", wait=wait) as mine:
            if not mine:
                return Delivery(left=len(self.pending()))
            key = fingerprint(api_key)
            if retry_parked or any(r.key != key for r in self.refusals()):
                self._unpark()
            total = Delivery()
            while batch := _lines(self.path)[:MAX_BATCH_LINES]:
                step = _send(base_url, batch, api_key)
                self._settle(step, key)
                total = Delivery(total.sent + step.sent, total.stored + step.stored, total.present + step.present,
                                 total.rejected + len(step.rejected), parked=total.parked + len(step.parked),
                                 refused=step.refusal.describe() if step.refusal else total.refused)  # fmt: skip
                if step.error or not step.answered:
                    return Delivery(total.sent, total.stored, total.present, total.rejected, len(self.pending()),
                                    step.error, total.parked, total.refused)  # fmt: skip
            return total

    def _settle(self, step: _Step, key: str) -> None:
        """Takes the lines the node answered for out of the spool (lines appended meanwhile stay); the refused go to
        rejected.jsonl, those refused for the key to parked.jsonl, with the cause in notes.json."""
        with self._locked(".lock"):
            answered = Counter(step.answered)
            rest = []
            for line in _lines(self.path):
                if answered[line]:
                    answered[line] -= 1
                else:
                    rest.append(line)
            write_private(self.path, "".join(rest).encode())
            if step.rejected:
                data = "".join(json.dumps({"capture": json.loads(line), "reason": reason}, ensure_ascii=False) + "\n"
                               for line, reason in step.rejected)  # fmt: skip
                append_bounded(self.directory / REJECTED_FILE, data.encode(), MAX_REJECTED_BYTES)
            if step.parked:
                dropped = append_bounded(self.parked_path, "".join(step.parked).encode(), self.max_bytes)
                notes = self.notes()
                if step.refusal is not None:
                    r = step.refusal
                    notes.setdefault("refused", {})[r.agent] = {"status": r.status, "reason": r.reason, "at": r.at,
                                                                "key": key}  # fmt: skip
                self._write_notes(notes)
                if dropped:
                    self._note_dropped(dropped)

    def _unpark(self) -> None:
        """Puts the parked captures back at the front of the spool (they are older than what waits there)."""
        with self._locked(".lock"):
            parked = _lines(self.parked_path)
            if parked:
                write_private(self.path, "".join(parked + _lines(self.path)).encode())
                self.parked_path.unlink(missing_ok=True)
            notes = self.notes()
            if notes.pop("refused", None) is not None:
                self._write_notes(notes)

    def _note_dropped(self, count: int) -> None:
        notes = self.notes()
        before = notes.get("dropped")
        earlier = int(before.get("count", 0)) if isinstance(before, dict) else 0
        notes["dropped"] = {"count": earlier + count, "at": time.time()}
        self._write_notes(notes)

    def _write_notes(self, notes: dict[str, Any]) -> None:
        write_private(self.directory / NOTES_FILE, json.dumps(notes).encode())


def fingerprint(api_key: str | None) -> str:
    """Tells one key from another without keeping it (parked captures go again once the key changed)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:12] if api_key else ""


@dataclass(slots=True)
class _Step:
    """The node's answer for one batch: the lines it answered for (stored, already present, refused, parked)."""

    sent: int = 0
    stored: int = 0
    present: int = 0
    error: str = ""  # the node did not answer (the rest of the batch waits)
    answered: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (line, reason)
    parked: list[str] = field(default_factory=list)
    refusal: Refusal | None = None


def _send(base_url: str, batch: list[str], api_key: str | None) -> _Step:
    """One import per agent and device in the batch (the caller they act as), in the batch's order. A refusal of the
    key parks that group and the others go on; a node that does not answer stops the batch."""
    import httpx

    groups: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    step = _Step()
    for line in batch:
        try:
            capture = json.loads(line)
        except ValueError:
            capture = None
        if not isinstance(capture, dict):
            step.answered.append(line)  # a damaged line (a crash mid-write): nothing to send
            continue
        groups.setdefault((str(capture.get("agent") or ""), str(capture.get("device") or "")), []).append(
            (line, capture)
        )
    for (agent, device), captures in groups.items():
        body = "".join(json.dumps(_line(c), ensure_ascii=False) + "\n" for _, c in captures).encode()
        try:
            answer = httpx.post(f"{base_url}/v1/memories:import", content=body,
                                headers=_headers(agent, device, api_key), timeout=SEND_TIMEOUT)  # fmt: skip
        except httpx.HTTPError as e:
            step.error = f"no node answers at {base_url} ({type(e).__name__})"
            return step
        lines = [line for line, _ in captures]
        if answer.status_code in KEY_REFUSED:
            step.parked.extend(lines)
            step.answered.extend(lines)
            step.refusal = Refusal(agent, answer.status_code, _detail(answer), time.time(), "")
            continue
        if answer.status_code >= 500 or answer.status_code in TRANSIENT:
            step.error = f"the node answered {answer.status_code}: {_detail(answer)}"
            return step
        step.sent += len(captures)
        step.answered.extend(lines)
        if answer.status_code != 200:
            step.rejected.extend((line, f"{answer.status_code}: {_detail(answer)}") for line in lines)
            continue
        result = answer.json()
        step.stored += int(result.get("imported", 0))
        step.present += int(result.get("already_present", 0))
        step.rejected.extend((lines[r["line"] - 1], str(r["reason"])) for r in result.get("rejected", []))
    return step


def _headers(agent: str, device: str, api_key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/x-ndjson", "X-Engram-Source": HOOK_SOURCE}
    if agent:
        headers["X-Engram-Agent-ID"] = agent
    if device:
        headers["X-Engram-Device"] = device
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _detail(answer: Any) -> str:
    """The node's reason, from its problem document (else the start of its body)."""
    try:
        data = answer.json()
    except ValueError:
        data = None
    text = str(data.get("detail") or data.get("title") or "") if isinstance(data, dict) else ""
    return " ".join((text or answer.text).split())[:300]


def _line(capture: dict[str, Any]) -> dict[str, Any]:
    """The import line of a capture: the save_memory fields and its source_id."""
    return {k: v for k, v in capture.items() if k not in ("agent", "device")}


def _lines(path: Path) -> list[str]:
    """The file's complete lines (a last line without its newline is being written: left for later)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines(keepends=True) if line.endswith("\n") and line.strip()]


def _parsed(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                out.append(item)
    return out
