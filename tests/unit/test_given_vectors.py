"""An import line's pre-computed dense vector (engram.embed.given): admin only, the node's model, its width, finite
values, unit length; each refusal names the field and what to do."""

from __future__ import annotations

import numpy as np
import pytest

from engram.embed.given import given_dense
from engram.errors import InvalidArgument, PermissionDenied
from engram.model import Caller

MODEL = "sentence-transformers/all-MiniLM-L6-v2#int8"
DIM = 8
ADMIN = Caller("default", "loader", scopes=frozenset({"read", "write", "admin"}))
WRITER = Caller("default", "agent", scopes=frozenset({"read", "write"}))


def unit(dim: int = DIM) -> np.ndarray:
    row = np.arange(1, dim + 1, dtype="<f4")
    return row / np.linalg.norm(row)


def check(raw: bytes, *, caller: Caller = ADMIN, model: str = MODEL) -> np.ndarray:
    return given_dense(caller, raw, model, expected_model=MODEL, dim=DIM)


def test_an_admins_vector_of_the_nodes_model_is_taken_as_sent() -> None:
    assert np.array_equal(check(unit().tobytes()), unit())


def test_a_key_without_admin_may_not_bring_vectors() -> None:
    with pytest.raises(PermissionDenied, match="admin key only"):
        check(unit().tobytes(), caller=WRITER)


def test_a_vector_of_another_model_is_refused_naming_the_nodes_model() -> None:
    with pytest.raises(InvalidArgument, match=r"vectors\.model.*this node embeds with") as caught:
        check(unit().tobytes(), model="other-model")
    assert MODEL in str(caught.value)


@pytest.mark.parametrize("dim", [DIM - 1, DIM + 1, 0])
def test_a_vector_of_another_width_is_refused(dim: int) -> None:
    raw = unit(dim).tobytes() if dim else b""
    with pytest.raises(InvalidArgument, match=rf"vectors\.dense.*{DIM} float32"):
        check(raw)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_value_that_is_not_finite_is_refused(bad: float) -> None:
    row = unit()
    row[3] = bad
    with pytest.raises(InvalidArgument, match="not a finite number"):
        check(row.tobytes())


def test_a_vector_that_is_not_normalised_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="L2-normalised"):
        check((unit() * 2).tobytes())
    with pytest.raises(InvalidArgument, match="L2-normalised"):
        check(np.zeros(DIM, dtype="<f4").tobytes())
