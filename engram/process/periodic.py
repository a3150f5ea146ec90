"""A background task that runs one step every few seconds until stopped: the access-count flush, the expiry job."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from engram.errors import EngramError

log = logging.getLogger(__name__)


class Periodic:
    """Calls ``step`` every ``interval`` seconds (the first call after one interval).

    A step that fails with an EngramError (a dependency briefly away) is retried at the next interval; any
    other failure is logged with its traceback and retried too: a background job never dies silently.
    """

    def __init__(self, name: str, interval: float, step: Callable[[], Awaitable[object]]) -> None:
        self._name = name
        self._interval = interval
        self._step = step
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self._step()
            except EngramError as e:
                log.info("%s postponed: %s", self._name, e)
            except Exception:
                log.exception("%s failed; it runs again in %.0fs", self._name, self._interval)
