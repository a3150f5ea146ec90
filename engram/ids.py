"""UUIDv7 identifiers: time-ordered, so ids sort by creation time."""

from __future__ import annotations

import os
import threading
import time
import uuid

from engram.errors import InvalidArgument

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def uuid7() -> str:
    """Returns a new UUIDv7 (RFC 9562) string, monotonic within this process."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same or earlier millisecond: keep order with a 12-bit counter in rand_a (RFC 9562 method 1).
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            ms = _last_ms
        else:
            _last_ms = ms
            _counter = int.from_bytes(os.urandom(2), "big") & 0x3FF
        rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
        value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | _counter << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))


def is_uuid(text: str) -> bool:
    """True when text is a canonical UUID string."""
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def memory_id(text: str, *, field: str = "id") -> str:
    """A memory id as given by a caller, normalised (trimmed, lower case); InvalidArgument if it is not one."""
    normalised = text.strip().lower()
    if not is_uuid(normalised):
        raise InvalidArgument(field, f"'{normalised[:40]}' is not a memory id (a UUID as returned by save_memory).")
    return normalised
