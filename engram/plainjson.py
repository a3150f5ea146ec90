"""JSON read and written by the json package's own C parts (_json) without importing the package: json imports re,
and re enum and functools, ~6 ms of an `engram search` that has no other use for them (issue 34)."""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Decoder:
    """What _json's scanner reads of a json.JSONDecoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_scan = _json.make_scanner(_Decoder())  # type: ignore[arg-type]  # typeshed names json's class; it reads these


def loads(text: str) -> Any:
    """json.loads(text): the same value, or a ValueError (json.JSONDecodeError is one) for what json refuses."""
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    start = _skip(text, 0)
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError(f"Expecting value: char {start}") from None
    if _skip(text, end) != len(text):
        raise ValueError(f"Extra data: char {end}")
    return value


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def dumps(value: Any, *, ensure_ascii: bool = True, indent: int | None = None) -> str:
    """json.dumps(value, ensure_ascii=..., indent=...) with its other defaults; an indented text is the json package's
    (the C encoder writes one line only), and so is a value it cannot encode (its TypeError)."""
    if indent is not None:
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    encode = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    if isinstance(value, str):
        text: str = encode(value)
        return text
    encoder = _json.make_encoder({}, _unencodable, encode, None, ": ", ", ", False, False, True)
    return "".join(encoder(value, 0))


def _unencodable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
