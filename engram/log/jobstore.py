"""Consolidation jobs kept in NATS KV, so GetJob answers on every replica (and after a restart) for a week."""

from __future__ import annotations

import dataclasses
import json

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue

from engram.errors import Unavailable
from engram.log.leases import lease_key
from engram.results import Job

BUCKET = "engram_jobs"
KEEP_SECONDS = 7 * 24 * 3600.0


class JobStore:
    """One KV entry per job id (its last state), removed by the bucket's TTL."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    @classmethod
    async def open(cls, js: JetStreamContext, *, bucket: str = BUCKET) -> JobStore:
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(
                bucket=bucket, ttl=KEEP_SECONDS, history=1, description="Engram consolidation jobs"
            )
        return cls(kv)

    async def put(self, job: Job) -> None:
        try:
            await self._kv.put(lease_key(job.id), json.dumps(dataclasses.asdict(job)).encode())
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"The job store (NATS KV) cannot be reached ({e!r}).") from e

    async def get(self, job_id: str) -> Job | None:
        try:
            entry = await self._kv.get(lease_key(job_id))
        except KeyNotFoundError:
            return None
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"The job store (NATS KV) cannot be reached ({e!r}).") from e
        try:
            return Job(**json.loads(entry.value or b"{}"))
        except (TypeError, ValueError):
            return None
