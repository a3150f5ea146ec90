"""The latest memories of each conversation, so that a save without context gets the previous turn as one.

Agents rarely pass ``context``, yet the previous turn as BM25 context lifts recall (issue 8, point 8; measured in
docs/search.md). Ingest remembers the last two memories of the conversations it wrote recently (a bounded LRU per
process) and, on a miss (this process restarted or evicted the conversation, or another replica wrote its last
turn), asks the search service for them. MemoryWriter._situate is where a memory gets its derived context.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from engram.errors import EngramError
from engram.model import Caller, Memory, SearchFilter
from engram.results import Page

log = logging.getLogger(__name__)

DEFAULT_MAX_CONVERSATIONS = 10_000
DEFAULT_MAX_CHARS = 16 * 1024 * 1024  # the text held for all conversations together
DEFAULT_LOOKUP_TIMEOUT = 2.0  # a save waits at most this long for the search service before going on without
LOOKUP_PAGE = 50
MAX_LOOKUP_PAGES = 20


class RecentMemories(Protocol):
    """Where the memories of a conversation are listed, newest first: the search service (SearchClient)."""

    async def list(
        self,
        caller: Caller,
        *,
        limit: int,
        flt: SearchFilter,
        page_token: str = "",
        min_seq: int = 0,
        order: str = "created",
    ) -> Page: ...


@dataclass(frozen=True, slots=True)
class Turn:
    """A memory of a conversation, as much of it as a later memory's context needs."""

    memory_id: str
    content: str
    sensitivity: str


_Key = tuple[str, str]  # (namespace, conversation_id)


class Conversations:
    """The last two turns (oldest first, never two that say the same) of recently written conversations."""

    def __init__(
        self,
        source: RecentMemories | None = None,
        *,
        max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
        max_chars: int = DEFAULT_MAX_CHARS,
        lookup_timeout: float = DEFAULT_LOOKUP_TIMEOUT,
    ) -> None:
        self.source = source  # set by the composition root once the search service's address is known
        self._max_conversations = max_conversations
        self._max_chars = max_chars
        self._lookup_timeout = lookup_timeout
        self._turns: OrderedDict[_Key, tuple[Turn, ...]] = OrderedDict()
        self._keys: dict[str, _Key] = {}  # memory id -> the conversation it is a turn of
        self._chars = 0

    async def previous(self, caller: Caller, memory: Memory) -> Turn | None:
        """The memory written before ``memory`` in its conversation and namespace, or None when there is none or
        it cannot be known now. Never one that says the same as ``memory`` (a retried save, a re-imported item)."""
        key = (memory.namespace, memory.conversation_id)
        turns = self._turns.get(key)
        if turns is not None:
            self._turns.move_to_end(key)
        else:
            turns = await self._lookup(caller, memory.conversation_id)
            if turns:
                self._put(key, turns)
        return next(
            (t for t in reversed(turns or ()) if t.content != memory.content and t.memory_id != memory.id), None
        )

    def remember(self, memory: Memory) -> None:
        """``memory`` is now the latest turn of its conversation; one saying the same as the latest replaces it."""
        if not memory.conversation_id:
            return
        key = (memory.namespace, memory.conversation_id)
        turn = Turn(memory.id, memory.content, memory.sensitivity)
        before = [t for t in self._pop(key) if t.content != turn.content][-1:]
        self._put(key, (*before, turn))

    def forget(self, memory_id: str) -> None:
        """Drops the conversation ``memory_id`` is a remembered turn of (it changed, or was never stored): its next
        turn asks the search service, which has the memory as it now is."""
        if (key := self._keys.get(memory_id)) is not None:
            self._pop(key)

    def renamed(self, old_id: str, new_id: str) -> None:
        """A remembered turn turned out to be stored already as ``new_id`` (a re-imported item)."""
        key = self._keys.pop(old_id, None)
        if key is None:
            return
        self._turns[key] = tuple(
            dataclasses.replace(t, memory_id=new_id) if t.memory_id == old_id else t for t in self._turns[key]
        )
        self._keys[new_id] = key

    def __len__(self) -> int:
        return len(self._turns)

    async def _lookup(self, caller: Caller, conversation_id: str) -> tuple[Turn, ...] | None:
        """The conversation's last two turns as the search service has them; None when it cannot say (no service,
        an error, too slow): a lookup never fails the save that asked."""
        if self.source is None:
            return None
        try:
            async with asyncio.timeout(self._lookup_timeout):
                newest = await self._newest(self.source, caller, conversation_id)
        except (EngramError, TimeoutError) as e:
            log.debug("no previous memory for conversation %r: %s", conversation_id, e)
            return None
        if not newest:
            return ()
        last = newest[0]
        before = next((m for m in newest[1:] if m.content != last.content), None)
        return tuple(Turn(m.id, m.content, m.sensitivity) for m in (before, last) if m is not None)

    @staticmethod
    async def _newest(source: RecentMemories, caller: Caller, conversation_id: str) -> list[Memory]:
        """The conversation's newest memories, newest first by (creation time, id).

        A listing orders the memories of one creation time by id, oldest first, and an import creates all its
        memories at one time: the pages of the newest time are read to its end (boundedly) to find its last one.
        """
        flt = SearchFilter(conversation_id=conversation_id)
        found: list[Memory] = []
        token = ""
        for _ in range(MAX_LOOKUP_PAGES):
            page = await source.list(caller, limit=LOOKUP_PAGE, flt=flt, page_token=token, order="created")
            found.extend(page.memories)
            if not page.next_page_token or not found or found[-1].created_at != found[0].created_at:
                break
            token = page.next_page_token
        return sorted(found, key=lambda m: (m.created_at or 0.0, m.id), reverse=True)

    def _pop(self, key: _Key) -> tuple[Turn, ...]:
        turns = self._turns.pop(key, ())
        for turn in turns:
            self._keys.pop(turn.memory_id, None)
            self._chars -= len(turn.content)
        return turns

    def _put(self, key: _Key, turns: tuple[Turn, ...]) -> None:
        self._pop(key)
        self._turns[key] = turns
        for turn in turns:
            self._keys[turn.memory_id] = key
            self._chars += len(turn.content)
        while self._turns and (len(self._turns) > self._max_conversations or self._chars > self._max_chars):
            self._pop(next(iter(self._turns)))
