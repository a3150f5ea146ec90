"""Consolidation jobs kept in NATS KV, so GetJob and ListJobs answer on every replica (and after a restart) for a
week. A job's key starts with its namespace's, so listing one namespace's jobs reads only those."""

from __future__ import annotations

import dataclasses
from typing import Any

from nats.js.client import JetStreamContext

from engram.log.kv import JsonBucket
from engram.log.leases import lease_key
from engram.results import Job

BUCKET = "engram_jobs"
KEEP_SECONDS = 7 * 24 * 3600.0


class JobStore:
    """One KV entry per job (its last state), removed by the bucket's TTL."""

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
        await self._bucket.put(_key(job.namespace, job.id), dataclasses.asdict(job))

    async def get(self, namespace: str, job_id: str) -> Job | None:
        """The job, if it is one of namespace's; also one stored under its id alone (before keys named the
        namespace), whose namespace is then checked by the caller."""
        stored = await self._bucket.get(_key(namespace, job_id))
        if stored is None:
            stored = await self._bucket.get(lease_key(job_id))
        return _job(stored)

    async def get_state(self, namespace: str, name: str) -> Any:
        """A namespace's job state kept under ``name`` (the `all` job's checkpoint), or None; it lapses with the jobs
        (KEEP_SECONDS after it was last written)."""
        return await self._bucket.get(_state_key(namespace, name))

    async def put_state(self, namespace: str, name: str, value: Any) -> None:
        await self._bucket.put(_state_key(namespace, name), value)

    async def list(self, namespace: str) -> list[Job]:
        """Every job of the namespace still kept, in no particular order."""
        stored = await self._bucket.matching(f"{lease_key(namespace)}.>")
        return [job for value in stored if (job := _job(value)) is not None and job.namespace == namespace]


def _key(namespace: str, job_id: str) -> str:
    return f"{lease_key(namespace)}.{lease_key(job_id)}"


def _state_key(namespace: str, name: str) -> str:
    """Beside the namespace's jobs (``name`` is KV-safe: a constant of the caller); list() skips it (not a job)."""
    return f"{lease_key(namespace)}.state.{name}"


def _job(stored: object) -> Job | None:
    try:
        return Job(**stored) if isinstance(stored, dict) else None
    except TypeError:
        return None
