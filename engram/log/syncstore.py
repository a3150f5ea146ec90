"""What the cluster answered to each change an edge device pushed, in NATS KV: a re-push gets the same answer.

One entry per ``source_id`` (``<device>:<local seq>``) and namespace, kept without a time limit: a device that
crashed after the cluster applied a batch, but before it stored that, sends the batch again, maybe days later.
"""

from __future__ import annotations

from typing import Any

from nats.js.client import JetStreamContext

from engram.log.kv import JsonBucket
from engram.log.leases import lease_key

BUCKET = "engram_sync"


class SyncStore:
    """The answer given to each pushed change (accepted with its server sequence and version, or rejected)."""

    def __init__(self, bucket: JsonBucket) -> None:
        self._bucket = bucket

    @classmethod
    async def open(cls, js: JetStreamContext, *, bucket: str = BUCKET, replicas: int = 1) -> SyncStore:
        opened = await JsonBucket.open(
            js, bucket, "The sync store", history=1, description="Engram: changes pushed by devices", replicas=replicas
        )
        return cls(opened)

    async def get(self, namespace: str, source_id: str) -> dict[str, Any] | None:
        record = await self._bucket.get(lease_key(namespace, source_id))
        return record if isinstance(record, dict) else None

    async def put(self, namespace: str, source_id: str, record: dict[str, Any]) -> None:
        await self._bucket.put(lease_key(namespace, source_id), record)
