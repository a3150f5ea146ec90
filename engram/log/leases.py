"""Leases in NATS KV: one holder of a key at a time across processes and replicas, lost when the holder stops
renewing it.

A lease is a KV entry created only if absent (an atomic create) and renewed by its holder every third of the
bucket's TTL with a compare-and-set on its revision. A holder that dies stops renewing; the bucket's TTL removes
the entry and the next acquire succeeds. Releasing deletes the entry at once (only the holder's revision).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, BucketNotFoundError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from engram.errors import Unavailable

log = logging.getLogger(__name__)

BUCKET = "engram_leases"
DEFAULT_TTL_SECONDS = 30.0
ACQUIRE_ATTEMPTS = 3  # the holder's entry can expire between a refused create and the read of who holds it


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lease: what it does under it (a job id), the process, and since when (epoch seconds)."""

    job_id: str
    owner: str
    since: float

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, raw: bytes | None) -> Holder:
        try:
            data: dict[str, Any] = json.loads(raw or b"{}")
            return cls(str(data.get("job_id", "")), str(data.get("owner", "")), float(data.get("since", 0.0)))
        except (ValueError, TypeError):
            return cls("", "", 0.0)


def lease_key(*parts: str) -> str:
    """A KV key for any text (KV keys allow only [-/_=.a-zA-Z0-9]): a readable prefix and a hash of the whole."""
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    prefix = "".join(c if c.isascii() and c.isalnum() else "_" for c in parts[0])[:40] if parts else ""
    return f"{prefix or 'lease'}.{digest}"


class Lease:
    """A held lease; renews itself in the background until released (or lost to an expiry)."""

    def __init__(self, kv: KeyValue, key: str, holder: Holder, revision: int, ttl: float) -> None:
        self.key = key
        self.holder = holder
        self.lost = False
        self._kv = kv
        self._revision = revision
        self._renewing = asyncio.create_task(self._renew(ttl / 3), name=f"lease-{key}")

    async def _renew(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                self._revision = await self._kv.update(self.key, self.holder.encode(), last=self._revision)
            except (KeyWrongLastSequenceError, APIError) as e:
                if not _wrong_last(e):
                    log.warning("renewing lease %s failed (%r); retrying", self.key, e)
                    continue
                self.lost = True
                log.warning("lease %s was lost (it expired and was taken over); %s goes on", self.key, self.holder)
                return
            except ConnectionClosedError:  # this process is letting go of NATS: the TTL frees the lease
                return
            except Exception as e:  # NATS away for a moment: try again at the next tick, the TTL decides
                log.warning("renewing lease %s failed (%r); retrying", self.key, e)

    async def release(self) -> None:
        self._renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._renewing
        if not self.lost:
            with contextlib.suppress(Exception):  # an expired or unreachable entry frees itself with the TTL
                await self._kv.delete(self.key, last=self._revision)


class Leases:
    """The lease bucket of one NATS JetStream; every entry lives ``ttl`` seconds after its last renewal."""

    def __init__(self, kv: KeyValue, ttl: float) -> None:
        self._kv = kv
        self.ttl = ttl

    @classmethod
    async def open(
        cls, js: JetStreamContext, *, ttl: float = DEFAULT_TTL_SECONDS, bucket: str = BUCKET, replicas: int = 1
    ) -> Leases:
        """The bucket, created on first use (an existing bucket keeps the TTL it was created with)."""
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(
                bucket=bucket, ttl=ttl, history=1, description="Engram job leases", replicas=replicas
            )
        status = await kv.status()
        # Renewals follow the bucket's TTL, which may predate a change of the setting.
        return cls(kv, status.ttl or ttl)

    async def acquire(self, key: str, job_id: str, owner: str) -> Lease | Holder:
        """The lease on ``key`` for ``job_id``, or (without waiting) whoever holds it now. Raises Unavailable when
        NATS cannot be reached."""
        try:
            return await self._acquire(key, Holder(job_id, owner, time.time()))
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"The job lease store (NATS KV) cannot be reached ({e!r}); try again shortly.") from e

    async def _acquire(self, key: str, holder: Holder) -> Lease | Holder:
        for _ in range(ACQUIRE_ATTEMPTS):
            try:
                revision = await self._kv.create(key, holder.encode())
                return Lease(self._kv, key, holder, revision, self.ttl)
            except (KeyWrongLastSequenceError, APIError) as e:
                if not _wrong_last(e):
                    raise
                try:
                    entry = await self._kv.get(key)
                except KeyNotFoundError:
                    continue  # expired or released just now: try to take it again
                return Holder.decode(entry.value)
        return Holder("", "", 0.0)  # taken and freed in a tight loop: busy, say so without a job id

    async def holder(self, key: str) -> Holder | None:
        """Who holds ``key`` now, if anyone."""
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError:
            return None
        return Holder.decode(entry.value)


_WRONG_LAST_SEQUENCE = 10071  # JetStream's "wrong last sequence": another writer changed the key first


def _wrong_last(error: Exception) -> bool:
    """Whether a KV write lost a race: nats-py raises KeyWrongLastSequenceError, or (when two writers race on a
    create) the plain BadRequestError with JetStream's error code."""
    return isinstance(error, KeyWrongLastSequenceError) or getattr(error, "err_code", None) == _WRONG_LAST_SEQUENCE
