"""The log entries the search index set aside (DESIGN.md principle 6): listed, applied again, or purged by an admin.

An admin key manages its own namespace's entries only (the namespace is the boundary, in dev mode too).
Purging drops entries from the quarantine; with ``erase``, their memories are purged first, through the one purge
path every admin purge takes (every log entry about the memory is erased, the quarantined ones included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engram import plural
from engram.errors import InvalidArgument, NotFound
from engram.model import Caller
from engram.results import Quarantined
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import require_scope


@dataclass(frozen=True, slots=True)
class Purged:
    dropped: list[Quarantined]
    erased: list[str]  # memory ids purged


class QuarantineOperations:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def entries(self, caller: Caller) -> tuple[list[Quarantined], int]:
        require_scope(caller, "admin")
        return await self._backend.search_client.quarantined(caller)

    async def retry(self, caller: Caller, seqs: Sequence[int]) -> tuple[list[Quarantined], list[Quarantined]]:
        require_scope(caller, "admin")
        return await self._backend.search_client.retry_quarantined(caller, seqs)

    async def purge(self, caller: Caller, seqs: Sequence[int], *, erase: bool) -> Purged:
        require_scope(caller, "admin")
        if not erase:
            dropped = await self._backend.search_client.drop_quarantined(caller, seqs)
            return Purged(dropped, [])
        chosen = await self._chosen(caller, seqs)
        erased: list[str] = []
        for memory_id in sorted({e.memory_id for e in chosen if e.memory_id}):
            # The purge's record takes the memory's entries out of the quarantine when the index applies it;
            # NotFound: nothing of it but the entries set aside, which are dropped below.
            try:
                await self._backend.delete(caller, memory_id, purge=True)
            except NotFound:
                pass
            except InvalidArgument:
                continue  # an id no memory can have (the entry is malformed): it is only dropped
            erased.append(memory_id)
        remaining = {e.seq for e in (await self.entries(caller))[0]}
        if left := [e.seq for e in chosen if e.seq in remaining]:
            await self._backend.search_client.drop_quarantined(caller, left)
        return Purged(chosen, erased)

    async def _chosen(self, caller: Caller, seqs: Sequence[int]) -> list[Quarantined]:
        """The entries named (none: every one the caller may see); InvalidArgument for a sequence not there."""
        entries, _ = await self.entries(caller)
        wanted = set(seqs)
        if missing := sorted(wanted - {e.seq for e in entries}):
            raise InvalidArgument(
                "seqs", f"{plural.listed(missing)} not in the quarantine; list it to see what is there."
            )
        return [e for e in entries if not wanted or e.seq in wanted]
