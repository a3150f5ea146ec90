"""list_memories page tokens carry their listing's order: a token only continues the listing it came from."""

from __future__ import annotations

import pytest

from engram.errors import InvalidArgument
from engram.ids import uuid7
from engram.index import Position
from engram.services.search import page_token


def test_a_token_of_the_updated_order_round_trips_in_that_order() -> None:
    position = Position(1_763_900_000.25, uuid7())

    token = page_token.encode(position, "updated")

    assert page_token.decode(token, "updated") == position
    assert len(token) <= page_token.MAX_TOKEN_CHARS


def test_a_created_token_is_what_it_was_before_orders_existed() -> None:
    position = Position(1_763_900_000.25, uuid7())

    assert page_token.encode(position, "created") == page_token.encode(position)


@pytest.mark.parametrize(("made_for", "used_for"), [("created", "updated"), ("updated", "created")])
def test_a_token_of_one_order_is_refused_for_the_other_saying_what_to_do(made_for: str, used_for: str) -> None:
    token = page_token.encode(Position(1.5, uuid7()), made_for)

    with pytest.raises(InvalidArgument) as raised:
        page_token.decode(token, used_for)

    assert raised.value.field == "page_token"
    assert f"another order than {used_for!r}; pass that order, or omit the token" in str(raised.value)


def test_a_legacy_float_token_only_continues_the_created_order() -> None:
    with pytest.raises(InvalidArgument, match="omit it to start over"):
        page_token.decode("1763900000.123", "updated")
