"""The device's side of sync (`engram edge`): pushes the device's changes to the cluster and pulls the cluster's.

The device's log is its outbox: every change made here is a log entry, pushed in log order by ``source_id``
``<device>:<local seq>``, and the push mark moves on only once the cluster has answered. Changes pulled from the
cluster are appended to the device's log too (marked ``pulled``: they are never pushed back), with the cluster's
version numbers, so the device's index applies them like any other version and keeps the newest. The pull cursor
is the cluster's sequence, stored after each page; the device's clock orders nothing.

Everything here works while the cluster is unreachable: a failed round waits (exponential back-off with jitter)
and tries again; local reads and writes never wait for it. The state (marks, last times, errors, rejections) is a
small JSON file in the data dir, which `engram sync --status` reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from engram.errors import EngramError, NotFound
from engram.grpc.clients import SearchClient
from engram.log import Log, LogEntry, subject
from engram.log.events import (
    CONSOLIDATION_SOURCE,
    MEMORY_CONFLICT,
    MEMORY_CREATED_EVENTS,
    MEMORY_PURGED,
    MEMORY_STATE_EVENTS,
)
from engram.model import Caller
from engram.services.sync.inbox import SERVER_PARENT

log = logging.getLogger("engram.sync")

STATE_FILE = "state.json"
FULL_REQUEST = "full.request"  # `engram sync --full` asks the running worker for a restore push
NOW_REQUEST = "now.request"  # `engram sync --now` asks the running worker for a round at once, back-off or not
PULLED = "pulled"  # the body key of an entry the worker appended from the cluster: {"seq": server sequence}
MAX_PUSH_BYTES = 768 * 1024  # a push request stays under the gateway's default 1 MiB body limit
KEEP_ERRORS = 20
KEEP_REJECTED = 100
HTTP_TIMEOUT = 30.0
WAKE_SECONDS = 0.25  # how often a waiting worker looks for a `sync --full` request


class UpstreamError(Exception):
    """The cluster could not be reached, or refused the call as a whole (the round is retried later)."""


@dataclass(slots=True)
class SyncState:
    """What `engram sync --status` shows, kept in <home>/sync/state.json."""

    upstream: str = ""
    device: str = ""
    namespace: str = ""  # the cluster's namespace (the key's)
    pushed: int = 0  # the local log sequence pushed up to (every entry up to it answered, or not to be pushed)
    cursor: int = 0  # the cluster's sequence pulled up to
    cursor_local: int = 0  # the local log's end when the cursor was stored (entries after it are read on start)
    cluster_seq: int = 0  # the cluster log's end at the last pull
    outbox: int = 0  # local entries not yet pushed, at the last round
    pushed_total: int = 0
    pulled_total: int = 0
    conflicts: int = 0
    rejected_total: int = 0
    last_push: float | None = None
    last_pull: float | None = None
    last_error: str = ""
    errors: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    repull: bool = False  # the cluster's log restarted (restored): creates pulled again are checked first
    full: dict[str, Any] = field(default_factory=dict)  # a restore push: {"state", "done", "total", ...}

    @classmethod
    def load(cls, path: Path) -> SyncState:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls()
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known}) if isinstance(data, dict) else cls()

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, path)  # atomic: a crash leaves the old state or the new one

    def error(self, message: str, now: float) -> None:
        self.last_error = message
        self.errors = [*self.errors, {"time": now, "error": message}][-KEEP_ERRORS:]

    def line(self, upstream: str = "", now: float | None = None) -> str:
        """The sync in one line, as `engram status` and the console show it on an edge node."""
        now = time.time() if now is None else now
        where = f"edge of {self.upstream or upstream} as device {self.device or '?'}"
        where += f" (cluster namespace {self.namespace})" if self.namespace else " (not registered yet)"
        pull = f"last pull {_ago(self.last_pull, now)}, push {_ago(self.last_push, now)}"
        counts = f"{self.outbox} to push, {self.pushed_total} pushed, {self.pulled_total} pulled"
        error = f"; failing: {self.last_error} (`engram sync --now` retries at once)" if self.last_error else ""
        return f"{where}: {pull}; {counts}{error}"


class Upstream:
    """The cluster's gateway, over HTTP (/v1/sync/*) with the device's sync key."""

    def __init__(self, url: str, key: str | None, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"), headers=headers, timeout=HTTP_TIMEOUT, transport=transport
        )

    async def register(self, device: str) -> dict[str, Any]:
        return await self._call("POST", "/v1/sync/register", json={"device": device})

    async def push(self, device: str, changes: list[dict[str, Any]], *, restore: bool = False) -> list[dict[str, Any]]:
        answer = await self._call(
            "POST", "/v1/sync/push", json={"device": device, "changes": changes, "restore": restore}
        )
        results = answer.get("results")
        if not isinstance(results, list) or len(results) != len(changes):
            raise UpstreamError("the cluster answered a push with the wrong number of results")
        return results

    async def pull(self, device: str, cursor: int, limit: int) -> dict[str, Any]:
        return await self._call("GET", "/v1/sync/pull", params={"device": device, "cursor": cursor, "limit": limit})

    async def _call(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        try:
            response = await self._http.request(method, path, **options)
        except httpx.HTTPError as e:
            raise UpstreamError(
                f"the cluster at {self._http.base_url} cannot be reached ({type(e).__name__}: {e})"
            ) from e
        if response.status_code >= 400:
            raise UpstreamError(f"the cluster refused {method} {path} ({response.status_code}): {_detail(response)}")
        try:
            body = response.json()
        except ValueError as e:
            raise UpstreamError(f"the cluster answered {path} with something other than JSON") from e
        return body if isinstance(body, dict) else {}

    async def close(self) -> None:
        await self._http.aclose()


class DeviceSync:
    """The sync worker of an edge node: rounds of push, then pull, until stopped."""

    def __init__(
        self,
        event_log: Log,
        state_reader: SearchClient,
        upstream: Upstream,
        *,
        home: Path,
        device: str,
        namespace: str,
        upstream_url: str = "",
        batch: int = 200,
        interval: float = 5.0,
        retry_first: float = 1.0,
        retry_max: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._log = event_log
        self._state_reader = state_reader
        self._upstream = upstream
        self._dir = home / "sync"
        self._device = device
        self._local = namespace  # the device's namespace; the cluster's is the key's (state.namespace)
        self._batch = batch
        self._interval = interval
        self._retry = (retry_first, retry_max)
        self._clock = clock
        self.state = SyncState.load(self._dir / STATE_FILE)
        self.state.upstream, self.state.device = upstream_url, device
        self._task: asyncio.Task[None] | None = None
        self._caller = Caller(namespace=namespace, agent_id="engram-sync", scopes=frozenset({"read", "write"}))

    @property
    def state_path(self) -> Path:
        return self._dir / STATE_FILE

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="device-sync")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(OSError):
            self._save()
        await self._upstream.close()

    async def run(self) -> None:
        """Rounds until cancelled: at once while there is more to do, after the interval when idle, after a growing
        back-off (with jitter) when the cluster cannot be reached."""
        failures = 0
        await self._recover_cursor()
        while True:
            try:
                busy = await self.round()
                failures = 0
                delay = 0.0 if busy else self._interval
            except asyncio.CancelledError:
                raise
            except (UpstreamError, EngramError, OSError) as e:
                failures += 1
                delay = _backoff(failures, *self._retry)
                self.state.error(str(e), self._clock())
                log.warning("sync round failed (%s); next try in %.1fs", e, delay)
                with contextlib.suppress(OSError):
                    self._save()
            await self._wait(delay)

    async def round(self) -> bool:
        """One push and one pull (or a restore push when asked); True when either has more to do. Logged at INFO
        when it moved something, at DEBUG when not (an idle device pulls every few seconds)."""
        with contextlib.suppress(FileNotFoundError):
            (self._dir / NOW_REQUEST).unlink()  # this round is the one asked for
        before = (self.state.pushed_total, self.state.pulled_total, self.state.rejected_total)
        if not self.state.namespace:
            registered = await self._upstream.register(self._device)
            self.state.namespace = str(registered.get("namespace") or "")
            if not self.state.namespace:
                raise UpstreamError("the cluster's sync registration named no namespace")
        if (self._dir / FULL_REQUEST).exists():
            await self.push_full()
            return True
        more_push = await self.push_once()
        more_pull = await self.pull_once()
        if self.state.last_error:
            log.info("sync works again")
        self.state.last_error = ""
        self._save()
        pushed, pulled, rejected = (
            after - earlier
            for after, earlier in zip(
                (self.state.pushed_total, self.state.pulled_total, self.state.rejected_total), before, strict=True
            )
        )
        level = logging.INFO if pushed or pulled or rejected else logging.DEBUG
        log.log(level, "sync round: %d pushed, %d pulled, %d rejected; cluster at %d", pushed, pulled, rejected,
                self.state.cluster_seq)  # fmt: skip
        return more_push or more_pull

    # -- push --------------------------------------------------------------------------------------------------

    async def push_once(self) -> bool:
        """Pushes the next batch of the device's own changes; True when more are waiting."""
        entries, more = await self._log.read_after(
            self.state.pushed, subjects=subject(self._local, "*"), limit=self._batch
        )
        if not entries:
            self.state.outbox = 0
            return False
        mine = [entry for entry in entries if _pushable(entry)]
        # Known before the push: a push that fails leaves the depth in the status.
        self.state.outbox = max(len(mine), await self._log.last_seq() - self.state.pushed if more else 0)
        changes = [await self._change(entry) for entry in mine]
        for chunk in _chunks(changes, MAX_PUSH_BYTES):
            self._record(await self._upstream.push(self._device, chunk))
        self.state.pushed = entries[-1].seq
        self.state.last_push = self._clock()
        self.state.outbox = max(0, await self._log.last_seq() - self.state.pushed) if more else 0
        self._save()
        return more

    async def push_full(self) -> None:
        """Disaster recovery: pushes the device's copy of every memory (its own changes and those it pulled,
        secrets excepted) with ``restore``: the cluster keeps what it has and fills in what it lacks."""
        full: dict[str, Any] = {
            "state": "running",
            "done": 0,
            "total": await self._log.last_seq(),
            "started": self._clock(),
        }
        self.state.full = full
        after = 0
        while True:
            entries, more = await self._log.read_after(after, subjects=subject(self._local, "*"), limit=self._batch)
            changes = [self._outgoing(e, source_id=str(e.body.get("source_id") or "")) for e in entries if _state(e)]
            for chunk in _chunks(changes, MAX_PUSH_BYTES):
                results = await self._upstream.push(self._device, chunk, restore=True)
                restored = sum(1 for r in results if r.get("accepted") and not r.get("duplicate"))
                full["restored"] = full.get("restored", 0) + restored
                full["rejected"] = full.get("rejected", 0) + sum(1 for r in results if not r.get("accepted"))
            after = entries[-1].seq if entries else after
            full["done"] = after
            self._save()
            if not more:
                break
        full.update(state="done", finished=self._clock())
        with contextlib.suppress(FileNotFoundError):
            (self._dir / FULL_REQUEST).unlink()
        self._save()

    async def _change(self, entry: LogEntry) -> dict[str, Any]:
        """The change to push for one of the device's own entries, with what it was made on."""
        change = self._outgoing(entry)
        body = entry.body
        version = int(body.get("version") or 1)
        if version > 1 or body.get("event") not in MEMORY_CREATED_EVENTS:
            change["parent"] = await self._parent(str(body.get("memory_id") or ""), version - 1)
        return change

    def _outgoing(self, entry: LogEntry, *, source_id: str = "") -> dict[str, Any]:
        body = json.loads(json.dumps(entry.body))  # a copy: the namespace becomes the cluster's
        body.pop(PULLED, None)
        body.pop("seq", None)
        body["namespace"] = self.state.namespace
        if isinstance(body.get("memory"), dict):
            body["memory"]["namespace"] = self.state.namespace
        return {
            "source_id": source_id or f"{self._device}:{entry.seq}",
            "event": entry.event,
            "body": body,
            "seq": entry.seq,
            "parent": "",
        }

    async def _parent(self, memory_id: str, version: int) -> str:
        """What the device had of a memory when it changed it: the version it pulled from the cluster
        (server:<version>), or its own earlier change (its source_id); "" when it is gone."""
        if version < 1:
            return ""
        try:
            history = await self._state_reader.history(self._caller, memory_id)
        except NotFound:
            return ""
        for seq in reversed(history.seqs):
            entry = await self._log.read(seq)
            if entry is None or int(entry.body.get("version") or 0) != version or "memory" not in entry.body:
                continue
            if PULLED in entry.body:
                return f"{SERVER_PARENT}{version}"
            return f"{self._device}:{seq}"
        return ""

    def _record(self, results: list[dict[str, Any]]) -> None:
        now = self._clock()
        for result in results:
            if result.get("accepted"):
                self.state.pushed_total += not result.get("duplicate")
                self.state.conflicts += bool(result.get("conflict"))
                continue
            self.state.rejected_total += 1
            item = {"source_id": result.get("source_id"), "reason": result.get("reason"), "time": now}
            self.state.rejected = [*self.state.rejected, item][-KEEP_REJECTED:]
            log.warning("the cluster rejected %s: %s", result.get("source_id"), result.get("reason"))

    # -- pull --------------------------------------------------------------------------------------------------

    async def pull_once(self) -> bool:
        """Applies the next page of the cluster's changes; True when more are waiting."""
        page = await self._upstream.pull(self._device, self.state.cursor, self._batch)
        last = int(page.get("last_seq") or 0)
        if last < self.state.cursor:
            # The cluster's log is shorter than what this device already read: it was restored from nothing.
            log.warning("the cluster's log ends at %d, before this device's cursor %d: pulling it again", last,
                        self.state.cursor)  # fmt: skip
            self.state.cursor, self.state.repull = 0, True
            return True
        for change in page.get("changes") or []:
            await self._apply(change)
        self.state.cursor = max(self.state.cursor, int(page.get("cursor") or 0))
        self.state.cursor_local = await self._log.last_seq()
        self.state.cluster_seq = last
        self.state.last_pull = self._clock()
        more = bool(page.get("has_more"))
        if not more:
            self.state.repull = False
        self._save()
        return more

    async def _apply(self, change: dict[str, Any]) -> None:
        body = change.get("body")
        if not isinstance(body, dict):
            return
        event, server_seq = str(change.get("event") or ""), int(change.get("seq") or 0)
        if await self._have(body, str(change.get("source_id") or ""), event):
            return
        body = dict(body)
        body.pop("seq", None)
        body["namespace"] = self._local
        if isinstance(body.get("memory"), dict):
            body["memory"] = {**body["memory"], "namespace": self._local}
        body[PULLED] = {"seq": server_seq}
        if event == MEMORY_PURGED:
            await self._erase(str(body.get("memory_id") or ""))
        await self._log.append(self._local, event, body, msg_id=f"pull:{self._local}:{server_seq}")
        self.state.pulled_total += 1

    async def _have(self, body: dict[str, Any], source_id: str, event: str) -> bool:
        """Whether the device already holds this change: its own (at the same version), or a memory it already has
        being created again (a pull after the cluster was restored)."""
        if event not in MEMORY_STATE_EVENTS:
            return event != MEMORY_PURGED and event != MEMORY_CONFLICT
        prefix = f"{self._device}:"
        if source_id.startswith(prefix) and source_id[len(prefix) :].isdigit():
            mine = await self._log.read(int(source_id[len(prefix) :]))
            if mine is not None and mine.body.get("version") == body.get("version"):
                return True
        if self.state.repull and event in MEMORY_CREATED_EVENTS:
            try:
                await self._state_reader.get(self._caller, str(body.get("memory_id") or ""), for_update=True)
                return True
            except NotFound:
                return False
        return False

    async def _erase(self, memory_id: str) -> None:
        """A purge on the cluster: every local entry about the memory goes too."""
        try:
            history = await self._state_reader.history(self._caller, memory_id, min_seq=await self._log.last_seq())
        except NotFound:
            return
        await self._log.erase(history.seqs)

    async def _recover_cursor(self) -> None:
        """Pulled entries appended after the stored cursor (the worker stopped before storing it): the cursor moves
        to the newest of them, so none is appended twice. The log read so far is remembered, so the next start
        reads only what came after it (an offline device would otherwise read its whole log at every start)."""
        after = self.state.cursor_local
        while True:
            entries, more = await self._log.read_after(after, subjects=subject(self._local, "*"), limit=1000)
            for entry in entries:
                pulled = entry.body.get(PULLED)
                if isinstance(pulled, dict):
                    self.state.cursor = max(self.state.cursor, int(pulled.get("seq") or 0))
            if entries:
                after = entries[-1].seq
            if not entries or not more:
                break
            await asyncio.sleep(0)  # searches go on between pages
        self.state.cursor_local = after
        with contextlib.suppress(OSError):
            self._save()

    async def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if (self._dir / FULL_REQUEST).exists() or (self._dir / NOW_REQUEST).exists():
                return
            await asyncio.sleep(min(left, WAKE_SECONDS))

    def _save(self) -> None:
        self.state.save(self._dir / STATE_FILE)


def request_now(home: Path) -> Path:
    """Asks the edge node of ``home`` for a sync round at once, whatever its back-off (`engram sync --now`)."""
    path = home / "sync" / NOW_REQUEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(time.time()))
    return path


def request_full(home: Path) -> Path:
    """Asks the edge node of ``home`` to re-push everything (`engram sync --full`)."""
    path = home / "sync" / FULL_REQUEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(time.time()))
    return path


def _pushable(entry: LogEntry) -> bool:
    """The device's own changes of memories that may leave it: never one pulled from the cluster, never a secret,
    and never the local consolidation's upkeep (expiry, decay, merges): the cluster keeps the shared memory itself,
    and devices get its results with the pull."""
    return _state(entry) and PULLED not in entry.body and entry.body.get("source") != CONSOLIDATION_SOURCE


def _state(entry: LogEntry) -> bool:
    memory = entry.body.get("memory")
    return entry.event in MEMORY_STATE_EVENTS and isinstance(memory, dict) and memory.get("sensitivity") != "secret"


def _chunks(changes: list[dict[str, Any]], max_bytes: int) -> list[list[dict[str, Any]]]:
    """Consecutive runs of changes whose JSON stays under max_bytes (at least one change each)."""
    chunks: list[list[dict[str, Any]]] = []
    size = 0
    for change in changes:
        length = len(json.dumps(change))
        if not chunks or size + length > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(change)
        size += length
    return chunks


def _backoff(failures: int, first: float, most: float) -> float:
    """Exponential back-off with full jitter around it: between half and all of first * 2^(failures-1)."""
    ceiling = min(most, first * 2 ** min(failures - 1, 30))
    return random.uniform(ceiling / 2, ceiling)


def _ago(epoch: float | None, now: float) -> str:
    return "never" if not epoch else f"{max(0.0, now - epoch):.0f}s ago"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or body)[:300]
    return str(body)[:300]
