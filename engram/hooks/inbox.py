"""The inbox: the events the hook took in, waiting in order for the data dir's one capture worker (issue 35).

The hook process appends its event (the payload's bytes as read, bounded by engram.hooks.limits, and the ENGRAM_
variables it ran with) to <home>/hooks/inbox/events under a lock, then starts a worker only when none holds the worker
lock: a burst of events (an agent's parallel tool calls) costs one worker, not a process each. The worker takes the
whole file (renamed to `taking`), captures its events one by one, noting after each how far it got (`done`), and
deletes it once all are in: a worker killed mid-way leaves `taking` and `done` behind, and the next worker goes on
after the last event done (that one event may be captured twice; the session's near-duplicate check merges it).

The events are unscrubbed (scrubbing costs ~80 ms of imports the agent would wait for), so the folder is private
(0700, files 0600) and short-lived: the worker removes each file as soon as its events are captured. It is bounded:
beyond MAX_INBOX_BYTES an event is dropped and errors.log says so. Standard library only, imported before the hook
answers: os and fcntl, no pathlib or json."""

from __future__ import annotations

import fcntl
import os

TYPE_CHECKING = False  # typing itself is not imported: it costs the hook ~2 ms
if TYPE_CHECKING:
    from collections.abc import Iterator

FOLDER = "inbox"
EVENTS = "events"  # appended to by the hooks
TAKING = "taking"  # the events a worker is capturing (renamed from EVENTS)
DONE = "done"  # how many bytes of TAKING are captured
LOCK = ".lock"  # guards EVENTS (appends, and the rename to TAKING)
WORKER = ".worker"  # held by the one worker of the data dir
MAX_INBOX_BYTES = 32 * 1024 * 1024  # of EVENTS: eight payloads at the largest a hook reads (4 MiB)
FILE_MODE = 0o600
DIR_MODE = 0o700
ENV_PREFIX = b"ENGRAM_"
QUIET_SECONDS = 0.1  # a new worker starts once no event came for this long (a burst's next event comes sooner)
SETTLE_SECONDS = 1.0  # or after this long in any case


def folder(hooks_dir: str) -> str:
    """<hooks>/inbox, created private (0700) with the folders above it when missing."""
    path = os.path.join(hooks_dir, FOLDER)
    if not os.path.isdir(path):
        os.makedirs(path, mode=DIR_MODE, exist_ok=True)
        os.chmod(path, DIR_MODE)
    return path


def record(agent: str, name: str, raw: bytes, total: int, env: bytes) -> bytes:
    """One event as the inbox keeps it: a header line of lengths, then the agent, event name, variables, payload."""
    head = agent.encode(errors="replace"), name.encode(errors="replace")
    sizes = (len(head[0]), len(head[1]), len(env), len(raw), total)
    return b"%d %d %d %d %d\n" % sizes + head[0] + head[1] + env + raw


def engram_env() -> bytes:
    """The ENGRAM_ variables the hook runs with, NUL-separated: the worker captures each event with its own."""
    return b"\0".join(k + b"=" + v for k, v in sorted(os.environb.items()) if k.startswith(ENV_PREFIX))


def put(inbox: str, data: bytes) -> bool:
    """Appends one record; False when the inbox is full (the event is dropped: its worker has not taken the
    earlier ones)."""
    lock = _open(os.path.join(inbox, LOCK), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fd = _open(os.path.join(inbox, EVENTS), os.O_WRONLY | os.O_APPEND)
        try:
            if os.fstat(fd).st_size + len(data) > MAX_INBOX_BYTES:
                return False
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    finally:
        os.close(lock)
    return True


def claim(inbox: str) -> int | None:
    """The worker lock's descriptor when no worker holds it (the caller becomes the worker: the lock lasts while any
    process, a forked child too, keeps the descriptor open), else None."""
    fd = _open(os.path.join(inbox, WORKER), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def settle(inbox: str, *, quiet: float = QUIET_SECONDS, most: float = SETTLE_SECONDS) -> None:
    """Waits until no event came for ``quiet`` seconds (at most ``most``): a new worker's start (imports, the
    scrubber's rules: ~0.3 s of CPU) then competes with no hook of the burst that started it."""
    import time

    deadline = time.monotonic() + most
    size = _size(os.path.join(inbox, EVENTS))
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _size(os.path.join(inbox, EVENTS))
        if now == size:
            return
        size = now


def waiting(inbox: str) -> bool:
    """Whether events wait for a worker (new ones, or ones a worker left when it died)."""
    return any(_size(os.path.join(inbox, name)) for name in (EVENTS, TAKING))


def take(inbox: str) -> tuple[bytes, int]:
    """The worker's next events: what a dead worker left (and how far it got), else the events appended so far
    (moved aside, so that new events start a new file); (b"", 0) when none wait."""
    taking, done = os.path.join(inbox, TAKING), os.path.join(inbox, DONE)
    if not _size(taking):
        _remove(done)  # left by a worker that died between its last two steps: it was for an older file
        lock = _open(os.path.join(inbox, LOCK), os.O_RDWR)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _size(os.path.join(inbox, EVENTS)):
                return b"", 0
            os.replace(os.path.join(inbox, EVENTS), taking)
        finally:
            os.close(lock)
    with open(taking, "rb") as handle:
        data = handle.read()
    return data, taken(inbox)


def taken(inbox: str) -> int:
    """How many bytes of TAKING a worker captured before it died (0: none)."""
    try:
        with open(os.path.join(inbox, DONE), "rb") as handle:
            return int(handle.read() or b"0")
    except (OSError, ValueError):
        return 0


def events(data: bytes, offset: int) -> Iterator[tuple[int, str, str, bytes, bytes, int]]:
    """The records of ``data`` after ``offset``: (end offset, agent, name, env, payload, payload's whole size). A
    damaged record (cut by a full disk) ends the file."""
    at = offset
    while at < len(data):
        line_end = data.find(b"\n", at)
        try:
            sizes = [int(n) for n in data[at:line_end].split()] if line_end >= 0 else []
        except ValueError:
            return
        if len(sizes) != 5 or line_end + 1 + sum(sizes[:4]) > len(data):
            return
        at = line_end + 1
        parts = []
        for size in sizes[:4]:
            parts.append(data[at : at + size])
            at += size
        yield at, parts[0].decode(errors="replace"), parts[1].decode(errors="replace"), parts[2], parts[3], sizes[4]


def mark(inbox: str, offset: int) -> None:
    """Notes that the taken events up to ``offset`` are captured (atomically: a rename)."""
    done = os.path.join(inbox, DONE)
    tmp = f"{done}.{os.getpid()}.tmp"
    fd = _open(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, b"%d" % offset)
    finally:
        os.close(fd)
    os.replace(tmp, done)


def finish(inbox: str) -> None:
    """The taken events are all captured: their file goes (then the note of how far)."""
    _remove(os.path.join(inbox, TAKING))
    _remove(os.path.join(inbox, DONE))


def variables(env: bytes) -> dict[str, str]:
    """The recorded ENGRAM_ variables as a mapping."""
    out = {}
    for item in env.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def _open(path: str, flags: int) -> int:
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
        os.fchmod(fd, FILE_MODE)  # a file an older umask or version left wider
    return fd


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _remove(path: str) -> None:
    try:  # noqa: SIM105 (contextlib is not imported in the hook process)
        os.unlink(path)
    except FileNotFoundError:
        pass
