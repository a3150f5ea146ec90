"""API keys: created by the CLI, shown once, stored only as SHA-256 hashes in a JSON file."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engram.names import split_agent, validate_device, validate_namespace, validate_team

SCOPES = ("read", "write", "admin", "sync", "packs")  # sync: an edge device syncs; packs: installs expert packs

SECRET_PREFIX = "engram_"
# engram_<key id hex>_<secrets.token_urlsafe(32)>: the key id inside the secret lets verify find the one
# record to compare against; engram.scrub recognises the same shape so leaked keys never reach storage.
_SECRET_RE = re.compile(r"engram_([0-9a-f]{8})_[A-Za-z0-9_-]{43}")
_KEY_ID_RE = re.compile(r"k_[0-9a-f]{8}")
_SHA256_HEX_RE = re.compile(r"[0-9a-f]{64}")
_FILE_FORMAT = 1


class KeyStoreError(RuntimeError):
    """The key file exists but cannot be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's public record; the secret itself is never part of it.

    ``agent`` is empty for a shared key (its callers name themselves); ``device`` and ``team`` are empty when the
    key does not fix them.
    """

    key_id: str
    namespace: str
    agent: str
    scopes: frozenset[str]
    created_at: float
    device: str = ""
    team: str = ""

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents the key speaks for: one for an agent's key, those working on a device for a sync key (which
        may name several, comma-separated), none for a shared key."""
        return tuple(name for name in self.agent.split(",") if name)

    def allows(self, scope: str) -> bool:
        """True if the key grants ``scope``; "admin" implies "read" and "write"."""
        if scope not in SCOPES:
            # A typo in a permission check must fail loudly, not deny (or grant) silently.
            raise ValueError(f"unknown scope {scope!r}; allowed scopes: {', '.join(SCOPES)}")
        return scope in self.scopes or "admin" in self.scopes


def validate_scopes(scopes: Iterable[str] | str) -> frozenset[str]:
    """Normalise scopes ("read,write" or an iterable) to a frozenset, raising ValueError on unknown ones."""
    items = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    result = frozenset(s.strip() for s in items if isinstance(s, str) and s.strip())
    unknown = [repr(s) for s in items if not isinstance(s, str)]
    unknown += [repr(s) for s in sorted(result - set(SCOPES))]
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}; allowed scopes: {', '.join(SCOPES)}")
    if not result:
        raise ValueError(f"a key needs at least one scope; allowed scopes: {', '.join(SCOPES)}")
    return result


def _hash(secret: str) -> str:
    # A plain SHA-256 is the right hash here, unlike for passwords: secrets carry 256 random bits, so there
    # is no dictionary to slow down, and verify runs on every request where a KDF would only add latency.
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


# (inode, size, mtime, ctime) of the key file; None when it does not exist.
_Signature = tuple[int, int, int, int] | None


def _signature(st: os.stat_result) -> _Signature:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class KeyStore:
    """API keys kept in one JSON file (e.g. ``<home>/keys.json``) shared by the CLI and running servers.

    Only SHA-256 hashes of secrets and the keys' metadata are written. Writers (create, revoke) serialise on
    an exclusive ``flock`` of a sidecar ``<file>.lock`` and replace the file atomically, so concurrent CLI
    processes never lose each other's keys and readers never see a half-written file. Readers reload the file
    whenever it changed on disk, so a key created or revoked by the CLI takes effect in a running server
    without a restart. A missing file means no keys; a file that can't be parsed raises KeyStoreError from
    every method (failing closed rather than treating it as "no keys, auth off").
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._mutex = threading.Lock()  # guards the cache below against concurrent request threads
        self._loaded = False
        self._signature: _Signature = None
        self._entries: dict[str, tuple[ApiKey, str]] = {}  # key_id -> (record, sha256 hex of the secret)

    # --- public API -------------------------------------------------------------------------------------

    def create(
        self,
        *,
        namespace: str,
        agent: str = "",
        device: str = "",
        team: str = "",
        scopes: Iterable[str] = ("read", "write"),
    ) -> tuple[ApiKey, str]:
        """Create a key; return its record and the plaintext secret, which is stored nowhere: show it once.

        Without ``agent`` the key is shared: every caller using it must name itself. A sync key may name several
        agents ("robot,planner"): those that work on its device.
        """
        namespace = validate_namespace(namespace)
        agent, device, team = _optional_names(agent, device, team)
        scope_set = validate_scopes(scopes)
        if "," in agent and scope_set != {"sync"}:
            raise ValueError(
                "only a device's sync key names several agents (--scopes sync); a key that reads or writes acts as "
                "one agent: create one key per agent"
            )
        with self._exclusive():
            entries, _ = self._read()  # fresh from disk: another process may have written since our last look
            key_hex = secrets.token_hex(4)
            while f"k_{key_hex}" in entries:
                key_hex = secrets.token_hex(4)
            secret = f"{SECRET_PREFIX}{key_hex}_{secrets.token_urlsafe(32)}"
            record = ApiKey(
                key_id=f"k_{key_hex}",
                namespace=namespace,
                agent=agent,
                scopes=scope_set,
                created_at=time.time(),
                device=device,
                team=team,
            )
            entries[record.key_id] = (record, _hash(secret))
            self._write(entries)
        return record, secret

    def verify(self, secret: str) -> ApiKey | None:
        """Return the key whose secret this is, or None (malformed, unknown, revoked or wrong secret)."""
        if not isinstance(secret, str):
            return None
        secret = secret.strip()
        match = _SECRET_RE.fullmatch(secret)
        if match is None:
            return None
        entry = self._current().get(f"k_{match.group(1)}")
        if entry is None:
            return None
        record, stored = entry
        # Constant-time comparison, so response timing says nothing about how much of a guess was right.
        return record if hmac.compare_digest(_hash(secret), stored) else None

    def list(self) -> list[ApiKey]:
        """All keys, oldest first."""
        return sorted((r for r, _ in self._current().values()), key=lambda r: (r.created_at, r.key_id))

    def revoke(self, key_id: str) -> bool:
        """Delete a key; False if there was no such key."""
        with self._exclusive():
            entries, _ = self._read()
            if entries.pop(key_id, None) is None:
                return False
            self._write(entries)
        return True

    def __len__(self) -> int:
        """Number of keys; 0 means authentication is not configured."""
        return len(self._current())

    # --- file handling ----------------------------------------------------------------------------------

    def _current(self) -> dict[str, tuple[ApiKey, str]]:
        """The cached entries, reloaded first if the file changed since they were read."""
        with self._mutex:
            try:
                changed = not self._loaded or _signature(os.stat(self.path)) != self._signature
            except FileNotFoundError:
                changed = not self._loaded or self._signature is not None
            if changed:
                self._entries, self._signature = self._read()
                self._loaded = True
            return self._entries

    def _read(self) -> tuple[dict[str, tuple[ApiKey, str]], _Signature]:
        """Parse the file; the signature comes from the same open file, so a concurrent replace can only make
        the cache look stale (and reload once more), never make stale contents look current."""
        try:
            with open(self.path, "rb") as f:
                sig = _signature(os.fstat(f.fileno()))
                raw = f.read()
        except FileNotFoundError:
            return {}, None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
                raise ValueError('expected an object with a "keys" list')
            if data.get("format", _FILE_FORMAT) != _FILE_FORMAT:
                raise ValueError(f"unsupported format {data.get('format')!r}, expected {_FILE_FORMAT}")
            entries: dict[str, tuple[ApiKey, str]] = {}
            for item in data["keys"]:
                record, digest = _decode(item)
                entries[record.key_id] = (record, digest)
        except (ValueError, TypeError, KeyError) as e:  # JSONDecodeError is a ValueError
            raise KeyStoreError(
                f"key file {self.path} is corrupt ({e}); restore it from a backup or move it away and create new keys"
            ) from e
        return entries, sig

    def _write(self, entries: dict[str, tuple[ApiKey, str]]) -> None:
        """Atomically replace the file: a 0600 temp file in the same directory, fsync, os.replace."""
        data = {
            "format": _FILE_FORMAT,
            "keys": [_encode(r, h) for r, h in sorted(entries.values(), key=lambda e: e[0].created_at)],
        }
        payload = json.dumps(data, indent=2, sort_keys=True).encode("utf-8") + b"\n"
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o600)  # mkstemp already uses 0600; say so explicitly, the file holds credentials
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        # Make the rename itself durable, so a crash can't bring back a revoked key.
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold an exclusive flock on the sidecar lock file (not the key file, which os.replace swaps out)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _encode(record: ApiKey, digest: str) -> dict[str, object]:
    return {
        "key_id": record.key_id,
        "sha256": digest,
        "namespace": record.namespace,
        "agent": record.agent,
        "device": record.device,
        "team": record.team,
        "scopes": sorted(record.scopes),
        "created_at": record.created_at,
    }


def _decode(item: object) -> tuple[ApiKey, str]:
    if not isinstance(item, dict):
        raise ValueError(f"key entry is not an object: {item!r}")
    key_id, digest = item["key_id"], item["sha256"]
    if not isinstance(key_id, str) or not _KEY_ID_RE.fullmatch(key_id):
        raise ValueError(f"bad key_id {key_id!r}")
    if not isinstance(digest, str) or not _SHA256_HEX_RE.fullmatch(digest):
        raise ValueError(f"bad sha256 for {key_id}")
    created_at = item["created_at"]
    if isinstance(created_at, bool) or not isinstance(created_at, int | float):
        raise ValueError(f"bad created_at for {key_id}")
    scopes = item["scopes"]
    if not isinstance(scopes, list):
        raise ValueError(f"bad scopes for {key_id}")
    # Files written before keys had a device and a team (or could be shared) load unchanged.
    agent, device, team = _optional_names(item["agent"], item.get("device", ""), item.get("team", ""))
    record = ApiKey(
        key_id=key_id,
        namespace=validate_namespace(item["namespace"]),
        agent=agent,
        scopes=validate_scopes(scopes),
        created_at=float(created_at),
        device=device,
        team=team,
    )
    return record, digest


def _optional_names(agent: object, device: object, team: object) -> tuple[str, str, str]:
    """The key's agent, device and team, each validated unless empty (a key need not fix any of them)."""
    return _optional(agent, _validate_key_agent), _optional(device, validate_device), _optional(team, validate_team)


def _optional(value: object, validate: Callable[[object], str]) -> str:
    return "" if value == "" else validate(value)


def _validate_key_agent(agent: object) -> str:
    """One agent, or a sync key's agents separated by commas; "name@device" is a usable agent id only if its
    device part is a valid device."""
    names = str(agent).split(",") if isinstance(agent, str) else [agent]
    for name in names:
        split_agent(name)
    return str(agent)
