"""The pairs the `all` job compares: a run from a checkpoint finds the same pairs of its new memories, and the gate
lets the same ones through, as a run over the whole namespace."""

from __future__ import annotations

import asyncio

import numpy as np

from engram.errors import Unavailable
from engram.model import Memory
from engram.services.consolidation import gate
from engram.services.consolidation.checkpoint import RULES, Checkpoint, Checkpoints
from engram.services.consolidation.maintenance import Corpus

FLOOR, NEIGHBOURS = 0.55, 16


def _corpus(n: int = 400, seed: int = 7) -> Corpus:
    """Memories in crowds (30 centres) and a few close pairs of their own: seq i + 1 for row i."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(30, 32))
    rows = centres[rng.integers(0, 30, n)] + 0.6 * rng.normal(size=(n, 32))
    rows[1::20] = rows[0::20] + 0.05 * rng.normal(size=rows[0::20].shape)  # a statement and its update
    vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    memories = [Memory(id=f"m{i}", namespace="ns", content=f"memory {i}", owner_agent="a", seq=i + 1) for i in range(n)]
    return Corpus(memories, vectors)


def _near(corpus: Corpus) -> set[tuple[int, int]]:
    pairs = corpus.pairs(FLOOR, NEIGHBOURS)
    kth = gate.kth_similarities(corpus.vectors, pairs, complete=corpus.fresh)
    return {(i, j) for i, j, s in pairs if gate.near_each_other(kth, i, j, s)}


def test_a_run_from_a_checkpoint_compares_the_new_memories_pairs_and_gates_them_as_a_full_run() -> None:
    whole, since = _corpus(), _corpus()
    since.since(Checkpoint(seq=300, rules=RULES))  # rows 300.. are new
    assert since.fresh is not None and list(since.fresh) == list(range(300, 400))
    full_pairs = {(i, j) for i, j, _ in whole.pairs(FLOOR, 10_000)}
    new_pairs = {(i, j) for i, j, _ in since.pairs(FLOOR, 10_000)}
    assert new_pairs == {(i, j) for i, j in full_pairs if j >= 300}, "every pair with a new memory, no old pair"
    near_full, near_since = _near(whole), _near(since)
    assert near_since == {(i, j) for i, j in near_full if j >= 300}
    assert 0 < len(near_full) < len(whole.pairs(FLOOR, NEIGHBOURS)) / 2, "the crowds' pairs are left out"
    assert {(i, i + 1) for i in range(0, 400, 20)} <= near_full, "each statement and its update are let through"


def test_pairs_left_by_the_last_run_are_compared_again_and_a_checkpoint_of_other_rules_compares_everything() -> None:
    corpus = _corpus()
    corpus.since(Checkpoint(seq=400, rules=RULES, pending=(("m3", "m250"), ("m7", "gone"))))
    assert corpus.fresh is not None and len(corpus.fresh) == 0
    assert [(i, j) for i, j, _ in corpus.pairs(FLOOR, NEIGHBOURS)] == [(3, 250)]
    other = _corpus()
    other.since(Checkpoint(seq=400, rules="older rules"))
    assert other.fresh is None and len(other.pairs(FLOOR, NEIGHBOURS)) > 100


def test_a_checkpoint_survives_its_json_and_an_unreadable_one_compares_everything() -> None:
    checkpoint = Checkpoint(seq=12, rules=RULES, pending=(("a", "b"),))
    assert Checkpoint.from_dict(checkpoint.to_dict()) == checkpoint
    assert Checkpoint.from_dict({"seq": "x"}) == Checkpoint() and not Checkpoint.from_dict(None).usable()


class _Down:
    """A job store that cannot be reached."""

    async def get_state(self, namespace: str, name: str) -> object:
        raise Unavailable("The job store (NATS KV) cannot be reached.")

    async def put_state(self, namespace: str, name: str, value: object) -> None:
        raise Unavailable("The job store (NATS KV) cannot be reached.")


def test_a_store_that_cannot_be_reached_makes_the_run_compare_everything_and_fails_no_job() -> None:
    checkpoints = Checkpoints(_Down())

    async def both() -> Checkpoint:
        await checkpoints.put("ns", Checkpoint(seq=5, rules=RULES))
        return await checkpoints.get("ns")

    assert asyncio.run(both()) == Checkpoint()


def test_records_of_a_series_are_not_contradictions_of_each_other_but_an_attributes_values_and_updates_are() -> None:
    from engram.services.consolidation import stance
    from engram.services.consolidation.maintenance import SERIES, _without_series

    def memory(key: str, content: str, created: float) -> Memory:
        return Memory(id=key, namespace="ns", content=content, owner_agent="a", created_at=created)

    runs = [memory(f"run{k}", f"Run {200 + k}: press the elevator button - {k % 5}/5 succeeded", k) for k in range(8)]
    runs.append(memory("fixed", "Run 208: press the elevator button - now 5/5 succeeded", 8.0))  # states a change
    port = [memory("old", "The API dev server listens on port 8080", 100.0),
            memory("new", "The API dev server listens on port 9090", 101.0),
            memory("moved", "The API dev server moved to port 7070", 102.0)]  # fmt: skip
    found = []
    for group in (runs, port):
        for i, older in enumerate(group):
            for newer in group[i + 1 :]:
                conflict = stance.conflict(older.content, newer.content, 0.95)
                if conflict is not None:
                    found.append((newer, older, conflict))
    assert sum(1 for _, o, c in found if o.id.startswith("run") and c.rule == "value") >= SERIES
    kept = {(newer.id, older.id) for newer, older, _ in _without_series(found)}
    assert {newer for newer, older in kept if older.startswith("run")} == {"fixed"}, "records differ by what they are"
    assert {("new", "old"), ("moved", "old"), ("moved", "new")} <= kept, "an attribute's few values stay"
