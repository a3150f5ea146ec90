"""Bulk import: JSON lines, each a memory, stored in order; a bad line is rejected with its reason."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator

from pydantic import ValidationError

from engram.errors import EngramError, ImportStopped, InvalidArgument
from engram.model import Caller, MemoryInput
from engram.results import ImportItem
from engram.services.gateway.backend import redactions_json
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.memories import MemoryOperations, memory_input
from engram.services.gateway.schemas.requests import ImportLineIn
from engram.services.gateway.schemas.results import ImportedOut, ImportRejectionOut, ImportResult, RedactionOut
from engram.services.gateway.schemas.validation import describe_validation


class ImportOperations(MemoryOperations):
    """The bulk import of memories for an already resolved caller."""

    async def import_lines(
        self, caller: Caller, lines: AsyncIterator[tuple[int, bytes | EngramError]], *, first_line: int = 1
    ) -> ImportResult:
        """Bulk import of JSON lines: a bad line is rejected with its reason, the others are imported in order.

        ``lines`` gives each line's bytes, or the error that makes it unreadable (e.g. too long). If the import
        stops part-way (the body passes its limit, the log goes away) ImportStopped carries what was stored.
        """
        require_scope(caller, "write")
        rejected: list[ImportRejectionOut] = []
        handled = first_line - 1  # the last line this gateway rejected or handed to ingest
        stop: EngramError | None = None

        async def items() -> AsyncIterator[ImportItem]:
            nonlocal handled, stop
            try:
                async for number, raw in lines:
                    handled = number
                    if isinstance(raw, EngramError):
                        rejected.append(ImportRejectionOut(line=number, reason=str(raw)))
                        continue
                    if not raw.strip():
                        continue
                    try:
                        line = ImportLineIn.model_validate_json(raw)
                        item = _item(number, line, memory_input(line))
                    except (ValidationError, InvalidArgument) as e:
                        rejected.append(ImportRejectionOut(line=number, reason=_reason(e)))
                        continue
                    yield item
            except EngramError as e:  # the body itself failed (e.g. passed its size limit): stop reading it
                stop = e

        outcome = await self._backend.ingest.import_memories(caller, items())
        if outcome.last_seq:
            self._cursors.observe(caller.namespace, outcome.last_seq)
        # Ingest stopping (log or disk gone) ends the import at its last line; lines read past it do not count.
        cause = outcome.stopped or stop
        last_line = outcome.last_line if outcome.stopped else max(handled, outcome.last_line)
        rejected = [r for r in rejected if r.line <= last_line]
        rejected.extend(ImportRejectionOut(line=line, reason=reason) for line, reason in outcome.rejected)
        result = ImportResult(
            imported=len(outcome.imported),
            already_present=len(outcome.present),
            rejected=sorted(rejected, key=lambda r: r.line),
            last_line=last_line,
            resume_from=last_line + 1,
            last_seq=outcome.last_seq,
            items=[
                ImportedOut(line=line, id=mid, already_present=present)
                for line, mid, _, present in sorted(
                    [(*item, False) for item in outcome.imported] + [(*item, True) for item in outcome.present]
                )
            ],
            redactions=[RedactionOut(**r) for r in redactions_json(outcome.redactions)],
            stopped=str(cause) if cause else None,
        )
        if cause is not None:
            raise ImportStopped(cause, result.model_dump(), last_line + 1)
        return result


def _item(number: int, line: ImportLineIn, draft: MemoryInput) -> ImportItem:
    """The line for ingest; its given vector decoded (ingest checks that the caller may give one, and the vector)."""
    if line.vectors is None:
        return ImportItem(number, draft, line.source_id or "")
    try:
        dense = base64.b64decode(line.vectors.dense, validate=True)
    except binascii.Error as e:
        raise InvalidArgument("vectors.dense", f"is not base64 ({e}).") from e
    return ImportItem(number, draft, line.source_id or "", dense, line.vectors.model)


def _reason(error: ValidationError | InvalidArgument) -> str:
    """One line saying what is wrong with an import line."""
    if isinstance(error, InvalidArgument):
        return str(error)
    return describe_validation(error.errors()[:3], where="line")
