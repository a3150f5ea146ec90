"""The local spool: captures wait in <home>/spool/captures.jsonl until the node takes them.

Appending never needs the node. Delivery sends the spool as one bulk import (POST /v1/memories:import), each line
with its source_id, so a capture sent twice (a crash between the node's answer and the spool's truncation) is
stored once. Lines the node refuses go to rejected.jsonl with the reason; nothing else leaves the spool until the
node has answered for it."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPOOL_FILE = "captures.jsonl"
HOOK_SOURCE = "hook"  # the source the node records for every capture (the X-Engram-Source header)
REJECTED_FILE = "rejected.jsonl"
MAX_BATCH_LINES = 500
SEND_TIMEOUT = 60.0  # in the background: a node that just started may take a while to embed the first ones


@dataclass(frozen=True, slots=True)
class Delivery:
    sent: int = 0
    stored: int = 0  # newly stored memories
    present: int = 0  # already stored (a capture delivered before)
    rejected: int = 0
    left: int = 0  # still in the spool
    error: str = ""  # why delivery stopped (no node answers ...)


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / SPOOL_FILE

    @contextlib.contextmanager
    def _locked(self, name: str, *, wait: bool = True) -> Iterator[bool]:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / name, os.O_RDWR | os.O_CREAT, 0o600)
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
        """Adds captures (each a save_memory object with source_id, and `agent` and `device` to send it as)."""
        if not captures:
            return
        data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in captures).encode()
        with self._locked(".lock"):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    def pending(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def deliver(self, base_url: str, *, api_key: str | None = None, wait: bool = True) -> Delivery:
        """Sends what the spool holds, oldest first, until it is empty or the node does not answer. With wait=False
        returns at once when another process is delivering (it takes what was appended meanwhile too)."""
        with self._locked(".deliver", wait=wait) as mine:
            if not mine:
                return Delivery(left=len(self.pending()))
            total = Delivery()
            while True:
                batch = self.pending()[:MAX_BATCH_LINES]
                if not batch:
                    return total
                step = _send(base_url, batch, api_key)
                if step.error:
                    return Delivery(total.sent, total.stored, total.present, total.rejected, len(self.pending()),
                                    step.error)  # fmt: skip
                self._drop(len(batch), step_rejected=_rejections(step))
                total = Delivery(total.sent + step.sent, total.stored + step.stored, total.present + step.present,
                                 total.rejected + step.rejected)  # fmt: skip

    def _drop(self, count: int, *, step_rejected: list[dict[str, Any]]) -> None:
        """Removes the first ``count`` lines (those the node answered for); lines appended meanwhile stay."""
        with self._locked(".lock"):
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
            rest = "".join(lines[count:])
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(rest, encoding="utf-8")
            os.replace(tmp, self.path)
            if step_rejected:
                with open(self.directory / REJECTED_FILE, "a", encoding="utf-8") as out:
                    for item in step_rejected:
                        out.write(json.dumps(item, ensure_ascii=False) + "\n")


@dataclass(frozen=True, slots=True)
class _Step:
    sent: int = 0
    stored: int = 0
    present: int = 0
    rejected: int = 0
    error: str = ""
    refused: tuple[tuple[dict[str, Any], str], ...] = ()


def _rejections(step: _Step) -> list[dict[str, Any]]:
    return [{"capture": capture, "reason": reason} for capture, reason in step.refused]


def _send(base_url: str, batch: list[dict[str, Any]], api_key: str | None) -> _Step:
    """One import per agent and device in the batch (the caller they act as), in the batch's order."""
    import httpx

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for capture in batch:
        groups.setdefault((str(capture.get("agent") or ""), str(capture.get("device") or "")), []).append(capture)
    stored = present = 0
    refused: list[tuple[dict[str, Any], str]] = []
    for (agent, device), captures in groups.items():
        headers = {"Content-Type": "application/x-ndjson", "X-Engram-Source": HOOK_SOURCE}
        if agent:
            headers["X-Engram-Agent-ID"] = agent
        if device:
            headers["X-Engram-Device"] = device
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        body = "".join(json.dumps(_line(c), ensure_ascii=False) + "\n" for c in captures).encode()
        try:
            answer = httpx.post(f"{base_url}/v1/memories:import", content=body, headers=headers, timeout=SEND_TIMEOUT)
        except httpx.HTTPError as e:
            return _Step(error=f"no node answers at {base_url} ({type(e).__name__})")
        if answer.status_code >= 500 or answer.status_code in (401, 403, 429):
            return _Step(error=f"the node answered {answer.status_code}: {answer.text[:200]}")
        if answer.status_code != 200:
            refused.extend((c, f"{answer.status_code}: {answer.text[:200]}") for c in captures)
            continue
        result = answer.json()
        stored += int(result.get("imported", 0))
        present += int(result.get("already_present", 0))
        refused.extend((captures[r["line"] - 1], r["reason"]) for r in result.get("rejected", []))
    return _Step(len(batch), stored, present, len(refused), refused=tuple(refused))


def _line(capture: dict[str, Any]) -> dict[str, Any]:
    """The import line of a capture: the save_memory fields and its source_id."""
    return {k: v for k, v in capture.items() if k not in ("agent", "device")}
