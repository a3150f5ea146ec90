"""The active memory a save repeats (engram.sameness): found in the search index, or in the log entries the index
has not applied yet.

A save looks its content key up in the index as it is, without waiting for it to apply the log's newest entries,
then appends conditionally, based on the sequence the index had applied: an entry appended after it which creates
the same memory (one the index has not applied yet, a repeat another replica acknowledged, a save racing this one)
makes the append fail with that entry, and the save answers with its memory instead. An index further behind than
MAX_UNAPPLIED entries (the append would read them all) is waited for instead, up to the log's end as this process
last saw it (Log.seen_seq). During a bulk import a save waited 140 ms on average for the index (measured under
load), where the append reads the few hundred entries in one page. A lookup the search service cannot answer in time
leaves the save unconditional: a save never fails for want of this check.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection

from engram.config import MAX_SEARCH_LIMIT
from engram.errors import EngramError
from engram.log import LogEntry, Stale
from engram.log.events import MEMORY_STATE_EVENTS
from engram.model import Caller, Memory, SearchFilter
from engram.sameness import content_key, key_of
from engram.services.ingest.conversations import RecentMemories  # the search service's listing

log = logging.getLogger(__name__)

MAX_UNAPPLIED = 500  # log entries a save reads itself after the index's position rather than wait for the index
DEFAULT_LOOKUP_TIMEOUT = 5.0  # a save waits at most this long for the index before it goes on without the check
MAX_LOOKUP_PAGES = 20


class Duplicates:
    """Finds the caller's active memories that new memories repeat."""

    def __init__(self, source: RecentMemories | None = None, *, lookup_timeout: float = DEFAULT_LOOKUP_TIMEOUT) -> None:
        self.source = source  # set by the composition root once the search service's address is known
        self._lookup_timeout = lookup_timeout

    async def existing(self, caller: Caller, keys: Collection[str], *, min_seq: int) -> dict[str, Memory] | None:
        """The caller's active, unexpired memory with each content key (the oldest when there are several), as the
        index has them once it has applied ``min_seq``; None when that cannot be known now (no search service, an
        error, too slow)."""
        looked = await self._looked_up(caller, keys, min_seq)
        return None if looked is None else looked[0]

    async def existing_now(self, caller: Caller, keys: Collection[str]) -> tuple[dict[str, Memory], int] | None:
        """As existing, from the index as it is (no wait for it to apply anything), with the log sequence it had
        applied (0 also from a search service that does not say it): the entries after it are for the caller to
        check, with a conditional append based on it. None as for existing."""
        return await self._looked_up(caller, keys, 0)

    async def _looked_up(
        self, caller: Caller, keys: Collection[str], min_seq: int
    ) -> tuple[dict[str, Memory], int] | None:
        wanted = sorted({key for key in keys if key})
        if self.source is None or not wanted:
            return None if self.source is None else ({}, 0)
        try:
            async with asyncio.timeout(self._lookup_timeout):
                return await self._oldest(self.source, caller, wanted, min_seq)
        except (EngramError, TimeoutError) as e:
            log.warning("no duplicate check for a save of %r: %s", caller.agent_id, e or "timed out")
            return None

    @staticmethod
    async def _oldest(
        source: RecentMemories, caller: Caller, keys: list[str], min_seq: int
    ) -> tuple[dict[str, Memory], int]:
        """The memories found, and the log sequence the index had applied at the first page (the lowest)."""
        now = time.time()
        found: dict[str, Memory] = {}
        flt = SearchFilter(owner_agent=caller.agent_id, content_keys=keys, statuses=["active"])
        token, applied = "", 0
        for _ in range(MAX_LOOKUP_PAGES):
            page = await source.list(
                caller, limit=MAX_SEARCH_LIMIT, flt=flt, page_token=token, min_seq=min_seq, order="created"
            )
            applied = applied or page.index_seq
            for memory in page.memories:  # newest first: the last one seen of a key is its oldest
                if memory.expires_at is None or memory.expires_at > now:
                    found[key_of(memory)] = memory
            if not page.next_page_token:
                break
            token = page.next_page_token
        return found, applied


def repeated_by(caller: Caller, key: str) -> Stale:
    """True for a log entry that leaves an active memory of the caller with content key ``key``: a save's
    conditional append fails on it (the entry's memory is the one the save repeats)."""

    def repeats(entry: LogEntry) -> bool:
        memory = entry.body.get("memory")
        return (
            entry.event in MEMORY_STATE_EVENTS
            and isinstance(memory, dict)
            and memory.get("namespace") == caller.namespace
            and memory.get("owner_agent") == caller.agent_id
            and memory.get("status", "active") == "active"
            and content_key(memory) == key
        )

    return repeats


def memory_of(entry: LogEntry) -> Memory:
    """The memory an entry flagged by repeated_by leaves, as of that entry."""
    memory = Memory.from_dict(entry.body["memory"])
    memory.seq = entry.seq
    return memory
