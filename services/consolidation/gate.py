"""Which close pairs the contradiction rules read: those whose memories are each among the other's nearest few.

A statement and its update or contradiction speak about one subject (a host, a setting, a person's schedule), so
each is among the closest memories of the other, whatever else the namespace holds. Texts that only share a topic
or a register (the sentences of one field's abstracts, chat small talk) sit in crowds, each close to many: a pair of
them is rarely mutual among the nearest few, and the rules, which read words, not subjects, found "another value"
or "a stated change" in thousands of such pairs (docs/benchmarks.md, the candidate flood). The gate reads cosines
only, so it costs a fraction of the rules it spares.
"""

from __future__ import annotations

import numpy as np

NEAREST = 5  # each memory of a compared pair is among the other's this many nearest (ties included)
BLOCK_ROWS = 1024  # rows of the similarity matrix computed at once
SLACK = 1e-5  # one cosine computed in two matrix products may differ in its last bits


def kth_similarities(
    vectors: np.ndarray, pairs: list[tuple[int, int, float]], *, complete: np.ndarray | None, k: int = NEAREST
) -> np.ndarray:
    """The cosine of each row's k-th nearest neighbour (-1.0 when it has fewer within ``pairs``).

    ``pairs`` (most similar first) hold every close pair of the ``complete`` rows (None: of every row): their
    k-th is read off the pairs. A row of a pair that is not complete (an old memory beside a new one, in a run
    that compares only what is new) has it computed against every row, when the pair is among the nearest of its
    complete row (else the gate closes on that side anyway): about k rows per new memory.
    """
    n = len(vectors)
    kth = np.full(n, -1.0, dtype=np.float32)
    counts = np.zeros(n, dtype=np.int64)
    for i, j, similarity in pairs:
        for row in (i, j):
            counts[row] += 1
            if counts[row] == k:
                kth[row] = similarity
    if complete is None:
        return kth
    whole = np.zeros(n, dtype=bool)
    whole[complete] = True
    wanted = np.zeros(n, dtype=bool)
    for i, j, similarity in pairs:
        if whole[i] and whole[j]:
            continue
        if whole[i] or whole[j]:  # the other row matters only when the pair is among the complete row's nearest
            inner = i if whole[i] else j
            if similarity >= kth[inner] - SLACK:
                wanted[j if whole[i] else i] = True
        else:  # a pair of two old rows (one left for this run by the last)
            wanted[i] = wanted[j] = True
    rows = np.flatnonzero(wanted)
    for start in range(0, len(rows), BLOCK_ROWS):
        block_rows = rows[start : start + BLOCK_ROWS]
        block = vectors[block_rows] @ vectors.T
        block[np.arange(len(block_rows)), block_rows] = -2.0  # not its own neighbour
        if n - 1 >= k:
            kth[block_rows] = np.partition(block, n - k, axis=1)[:, n - k]
    return kth


def near_each_other(kth: np.ndarray, i: int, j: int, similarity: float) -> bool:
    """Whether rows i and j (of cosine ``similarity``) are each among the other's nearest (kth_similarities)."""
    return similarity >= kth[i] - SLACK and similarity >= kth[j] - SLACK
