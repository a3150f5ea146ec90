"""How texts are grouped into onnxruntime runs: shortest first, each run bounded in rows and in attention size."""

from __future__ import annotations

from engram.embed.embedder import DEFAULT_ATTENTION_CELLS, length_batches


def test_every_text_runs_once_shortest_first_and_each_run_stays_within_its_bounds() -> None:
    lengths = [(i * 37) % 512 + 1 for i in range(300)]
    runs = list(length_batches(lengths, batch_size=32))
    flat = [i for run in runs for i in run]
    assert sorted(flat) == list(range(300))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for run in runs:
        width = max(lengths[i] for i in run)
        assert len(run) <= 32
        assert len(run) == 1 or len(run) * width**2 <= DEFAULT_ATTENTION_CELLS


def test_short_texts_fill_a_whole_batch_and_a_text_longer_than_the_budget_runs_alone() -> None:
    assert list(length_batches([10] * 40, batch_size=32)) == [list(range(32)), list(range(32, 40))]
    assert list(length_batches([512, 512], batch_size=32)) == [[0], [1]]
    assert list(length_batches([], batch_size=32)) == []
