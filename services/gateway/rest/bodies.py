"""Request bodies as the routes read them: which routes take one JSON document (the HTTP edge checks those first),
and the import's body, read line by line as it arrives."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from fastapi import Request

from engram.errors import EngramError, PayloadTooLarge

IMPORT_PATH = "/v1/memories:import"

LINE_SETTING = "ENGRAM_MAX_IMPORT_LINE_BYTES"

# The routes whose body is one JSON document (the edge checks their Content-Type and nesting first).
JSON_BODY_ROUTES = (
    ("POST", re.compile(r"/v1/memories(?::search)?")),
    ("PATCH", re.compile(r"/v1/memories/[^/]+")),
    ("POST", re.compile(r"/v1/memories/[^/]+:supersede")),
    ("POST", re.compile(r"/v1/handoffs(?:/[^/]+/(?:accept|complete))?")),
    ("POST", re.compile(r"/v1/consolidation/jobs|/v1/consolidate|/v1/contradictions/resolve")),
    ("POST", re.compile(r"/v1/sync/(?:register|push)")),
    ("POST", re.compile(r"/v1/packs")),
)


def reads_json_body(method: str, path: str) -> bool:
    """True for a request to a route whose body is one JSON document."""
    return any(method == m and pattern.fullmatch(path) for m, pattern in JSON_BODY_ROUTES)


async def numbered_lines(
    request: Request, first: int, max_line_bytes: int
) -> AsyncIterator[tuple[int, bytes | EngramError]]:
    """The request body's lines, numbered from first, read as they arrive (the body is never held whole).

    A line longer than max_line_bytes is not kept: its bytes are counted and dropped up to its end, and it is
    given as a PayloadTooLarge in place of its text, to be rejected like any other invalid line.
    """
    number = first
    buffer = bytearray()
    skipped = 0  # bytes of an over-long line dropped so far (0: not inside one)

    def too_long(size: int) -> PayloadTooLarge:
        hint = "Shorten it or split it into several memories."
        return PayloadTooLarge(size, max_line_bytes, "The line", setting=LINE_SETTING, hint=hint)

    async for chunk in request.stream():
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            if skipped or len(buffer) + stop - start > max_line_bytes:
                skipped += len(buffer) + stop - start
                buffer.clear()
            else:
                buffer += chunk[start:stop]
            if end < 0:
                break
            yield number, (too_long(skipped) if skipped else bytes(buffer))
            skipped = 0
            buffer.clear()
            number += 1
            start = end + 1
    if skipped:
        yield number, too_long(skipped)
    elif buffer:
        yield number, bytes(buffer)
