"""list_memories page tokens: an opaque, versioned encoding of the listing position (time, id) and its order.

A token of the default order (created) is {"v", "ts", "id"}; another order adds "o" (e.g. "updated"), so a
token only continues the listing it came from.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re

from engram.errors import InvalidArgument
from engram.ids import is_uuid
from engram.index import DEFAULT_ORDER, Position

VERSION = 1
MAX_TOKEN_CHARS = 200  # a v1 token is about 110
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
# Before v1 a token was repr() of the last memory's creation time. Such a token resumes with that whole
# timestamp group (it cannot say which of its memories were seen): a repeat or two rather than a skip.
_LEGACY = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_NOT_A_TOKEN = "is not a token returned by list_memories; omit it to start over."
_FIELDS = {"v", "ts", "id"}


def encode(position: Position, order: str = DEFAULT_ORDER) -> str:
    """The token for the page after `position`: URL-safe base64 of a small JSON object, without padding."""
    fields: dict[str, object] = {"v": VERSION, "ts": position.ts, "id": position.id}
    if order != DEFAULT_ORDER:
        fields["o"] = order
    body = json.dumps(fields, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def decode(token: str, order: str = DEFAULT_ORDER) -> Position | None:
    """The position a token of a listing in `order` stands for; None for no token.

    Raises InvalidArgument for anything else, a token of a listing in another order included.
    """
    if not token:
        return None
    if len(token) > MAX_TOKEN_CHARS:
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    if _LEGACY.fullmatch(token) and order == DEFAULT_ORDER:
        return Position(_finite(float(token)))
    return _decode_v1(token, order)


def _decode_v1(token: str, order: str) -> Position:
    if not _BASE64URL.fullmatch(token):
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    try:
        body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError) as e:
        raise InvalidArgument("page_token", _NOT_A_TOKEN) from e
    if not isinstance(body, dict) or set(body) - {"o"} != _FIELDS or type(body["v"]) is not int:
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    if body["v"] != VERSION:
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    if body.get("o", DEFAULT_ORDER) != order:
        raise InvalidArgument(
            "page_token", f"continues a listing in another order than {order!r}; pass that order, or omit the token."
        )
    ts, memory_id = body["ts"], body["id"]
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not isinstance(memory_id, str):
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    if not is_uuid(memory_id) or memory_id != memory_id.lower():
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    return Position(_finite(float(ts)), memory_id)


def _finite(ts: float) -> float:
    if not math.isfinite(ts):  # e.g. "1e999"
        raise InvalidArgument("page_token", _NOT_A_TOKEN)
    return ts
