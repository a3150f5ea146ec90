"""What the cluster answered to each change an edge device pushed, in NATS KV: a re-push gets the same answer.

One entry per ``source_id`` (``<device>:<local seq>``) and namespace, kept without a time limit: a device that
crashed after the cluster applied a batch, but before it stored that, sends the batch again, maybe days later.
"""

from __future__ import annotations

import json
from typing import Any

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue

from engram.errors import Unavailable
from engram.log.leases import lease_key

BUCKET = "engram_sync"


class SyncStore:
    """The answer given to each pushed change (accepted with its server sequence and version, or rejected)."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    @classmethod
    async def open(cls, js: JetStreamContext, *, bucket: str = BUCKET) -> SyncStore:
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(bucket=bucket, history=1, description="Engram: changes pushed by devices")
        return cls(kv)

    async def get(self, namespace: str, source_id: str) -> dict[str, Any] | None:
        try:
            entry = await self._kv.get(lease_key(namespace, source_id))
        except KeyNotFoundError:
            return None
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"The sync store (NATS KV) cannot be reached ({e!r}).") from e
        try:
            record = json.loads(entry.value or b"{}")
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    async def put(self, namespace: str, source_id: str, record: dict[str, Any]) -> None:
        try:
            await self._kv.put(lease_key(namespace, source_id), json.dumps(record).encode())
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"The sync store (NATS KV) cannot be reached ({e!r}).") from e
