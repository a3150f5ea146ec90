"""JSON values in a NATS KV bucket (kept beside the log, shared by every replica), with the kernel's errors."""

from __future__ import annotations

import json
from typing import Any

from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue

from engram.errors import Unavailable


class JsonBucket:
    """One JSON value per key; keys must already be KV-safe (engram.log.leases.lease_key makes any text so)."""

    def __init__(self, kv: KeyValue, what: str) -> None:
        self._kv = kv
        self._what = what  # how errors name it, e.g. "The job store"

    @classmethod
    async def open(cls, js: JetStreamContext, bucket: str, what: str, **config: Any) -> JsonBucket:
        """The bucket, created with ``config`` (ttl, history, description, replicas) the first time."""
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(bucket=bucket, **config)
        return cls(kv, what)

    async def get(self, key: str) -> Any:
        """The value, or None when the key is absent or does not hold JSON."""
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError:
            return None
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"{self._what} (NATS KV) cannot be reached ({e!r}).") from e
        try:
            return json.loads(entry.value or b"null")
        except ValueError:
            return None

    async def put(self, key: str, value: Any) -> None:
        try:
            await self._kv.put(key, json.dumps(value).encode())
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"{self._what} (NATS KV) cannot be reached ({e!r}).") from e

    async def matching(self, pattern: str) -> list[Any]:
        """The values of every key matching ``pattern`` (KV wildcards: ``ns.>``), read in one pass; values that
        are not JSON are left out."""
        values = []
        try:
            watcher = await self._kv.watch(pattern, ignore_deletes=True)
            try:
                async for entry in watcher:
                    if entry is None:  # the values present when the watch began have all come
                        break
                    try:
                        values.append(json.loads(entry.value or b"null"))
                    except ValueError:
                        continue
            finally:
                await watcher.stop()
        except (NatsError, TimeoutError) as e:
            raise Unavailable(f"{self._what} (NATS KV) cannot be reached ({e!r}).") from e
        return values
