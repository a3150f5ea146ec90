"""Pairs of memories tied to one subject (engram.subjects), for the detectors to compare besides nearest neighbours.

The contradiction job compares each memory with its nearest neighbours (a few per memory). In a namespace of
weeks, a statement's nearest neighbours are often other statements of the same template ("Kwame reviews ... on
Mondays", "Lucia reviews ... on Thursdays"), and its own earlier version, worded otherwise ("Ravi prefers blue-green
deploys" / "Ravi dislikes blue-green deploys and wants rolling updates"), is not among them. Memories that name the
same thing are grouped, and within a group the pairs about the same subject are added: few, since a thing named
by many memories ties nothing by itself and a tie needs the same attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from engram.subjects import subject, tie

MAX_GROUP = 40  # memories naming one thing beyond which the thing is too common to tie anything ("Postgres")


def tied_pairs(
    texts: Sequence[str], vectors: np.ndarray, floor: float, known: set[tuple[int, int]]
) -> list[tuple[int, int, float]]:
    """Pairs (i < j, cosine) not in ``known`` whose memories name a thing in common, are at least ``floor`` alike
    in meaning, and speak about the same subject (engram.subjects.tie), most similar first."""
    groups: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        for thing in subject(text).things:
            groups.setdefault(thing, []).append(i)
    found: dict[tuple[int, int], float] = {}
    for members in groups.values():
        if len(members) < 2 or len(members) > MAX_GROUP:
            continue
        for i, j in combinations(members, 2):
            if (i, j) in known or (i, j) in found:
                continue
            similarity = float(vectors[i] @ vectors[j])
            if similarity >= floor and (tie(texts[i], texts[j]) > 0 or tie(texts[j], texts[i]) > 0):
                found[(i, j)] = similarity
    return sorted(((i, j, s) for (i, j), s in found.items()), key=lambda p: -p[2])
