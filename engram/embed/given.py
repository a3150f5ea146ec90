"""Dense vectors a caller brings instead of text to embed (an admin's import of pre-computed vectors), checked."""

from __future__ import annotations

import numpy as np

from engram.errors import InvalidArgument, PermissionDenied
from engram.model import Caller
from engram.ownership import ADMIN_SCOPE

FIELD = "vectors"
# Every dense vector the node makes is L2-normalised (engram.embed.Embedder); a given one must be too, within what
# float32 rounding and another runtime's arithmetic leave.
NORM_TOLERANCE = 1e-3


def given_dense(caller: Caller, raw: bytes, model: str, *, expected_model: str, dim: int) -> np.ndarray:
    """The dense vector an import line brings (``raw``: little-endian float32 bytes, as event bodies carry them),
    after checking that the caller may bring one and that the index can take it as the node's own."""
    if ADMIN_SCOPE not in caller.scopes:
        raise PermissionDenied(
            f"'{FIELD}' (pre-computed vectors) is for an admin key only: an import with vectors skips the node's "
            "embedder, so their meaning is the caller's word. Import the line without them, or use an admin key."
        )
    if model != expected_model:
        raise InvalidArgument(
            f"{FIELD}.model", f"is {model!r}; this node embeds with {expected_model!r}. Bring vectors of that model, "
            "or import the line without vectors and the node embeds it."
        )  # fmt: skip
    if len(raw) != 4 * dim:
        raise InvalidArgument(
            f"{FIELD}.dense",
            f"holds {len(raw)} bytes; a vector of {expected_model} is {dim} float32 ({4 * dim} bytes).",
        )
    dense = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(dense).all():
        raise InvalidArgument(f"{FIELD}.dense", "holds a value that is not a finite number (NaN or infinity).")
    norm = float(np.linalg.norm(dense))
    if abs(norm - 1.0) > NORM_TOLERANCE:
        raise InvalidArgument(f"{FIELD}.dense", f"has length {norm:.4f}; vectors are L2-normalised (length 1).")
    return dense
