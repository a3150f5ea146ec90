"""Consolidation jobs kept in NATS KV, so GetJob answers on every replica (and after a restart) for a week."""

from __future__ import annotations

import dataclasses

from nats.js.client import JetStreamContext

from engram.log.kv import JsonBucket
from engram.log.leases import lease_key
from engram.results import Job

BUCKET = "engram_jobs"
KEEP_SECONDS = 7 * 24 * 3600.0


class JobStore:
    """One KV entry per job id (its last state), removed by the bucket's TTL."""

    def __init__(self, bucket: JsonBucket) -> None:
        self._bucket = bucket

    @classmethod
    async def open(cls, js: JetStreamContext, *, bucket: str = BUCKET, replicas: int = 1) -> JobStore:
        opened = await JsonBucket.open(
            js, bucket, "The job store", ttl=KEEP_SECONDS, history=1, description="Engram consolidation jobs",
            replicas=replicas,
        )  # fmt: skip
        return cls(opened)

    async def put(self, job: Job) -> None:
        await self._bucket.put(lease_key(job.id), dataclasses.asdict(job))

    async def get(self, job_id: str) -> Job | None:
        stored = await self._bucket.get(lease_key(job_id))
        try:
            return Job(**stored) if isinstance(stored, dict) else None
        except TypeError:
            return None
