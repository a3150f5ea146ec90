"""list_memories page tokens: opaque, versioned, exact, strictly validated; the pre-v1 float still accepted."""

from __future__ import annotations

import base64
import json

import pytest

from engram.errors import InvalidArgument
from engram.ids import uuid7
from engram.index import Position
from engram.services.search import page_token


def raw(body: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


@pytest.mark.parametrize("ts", [1_763_900_000.123, 0.1 + 0.2, 0.0, 1e-7, 1_763_900_000.0])
def test_a_token_round_trips_the_position_exactly(ts: float) -> None:
    position = Position(ts, uuid7())

    token = page_token.encode(position)

    assert page_token.decode(token) == position
    assert token.isascii() and "=" not in token and len(token) <= page_token.MAX_TOKEN_CHARS


def test_no_token_means_the_first_page() -> None:
    assert page_token.decode("") is None


def test_a_legacy_float_token_resumes_with_its_whole_timestamp_group() -> None:
    assert page_token.decode("1763900000.123") == Position(1763900000.123, "")
    assert page_token.decode("1.7e+09") == Position(1.7e9, "")


MEMORY_ID = "01a207a2-9d4c-735e-8ba7-f9f300f124e1"


@pytest.mark.parametrize(
    "token",
    [
        "nope", "1e999", "nan", "inf", "-inf", "1_000", " 1.5", "x" * 300, "eyJ2IjoyfQ", "====", "é",
        raw([1, 2]), raw("v1"), raw({"v": 2, "ts": 1.0, "id": MEMORY_ID}), raw({"v": 1, "ts": 1.0}),
        raw({"v": 1, "ts": 1.0, "id": MEMORY_ID, "extra": 1}), raw({"v": 1, "ts": "1.0", "id": MEMORY_ID}),
        raw({"v": 1, "ts": True, "id": MEMORY_ID}), raw({"v": 1, "ts": 1.0, "id": "not-a-uuid"}),
        raw({"v": 1, "ts": 1.0, "id": MEMORY_ID.upper()}), raw({"v": True, "ts": 1.0, "id": MEMORY_ID}),
        raw({"v": 1, "ts": 1.0, "id": 7}), raw({"v": 1, "ts": 1e308 * 10, "id": MEMORY_ID}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)  # fmt: skip
def test_anything_else_is_rejected_saying_to_start_over(token: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        page_token.decode(token)

    assert raised.value.field == "page_token"
    assert str(raised.value) == "page_token: is not a token returned by list_memories; omit it to start over."
