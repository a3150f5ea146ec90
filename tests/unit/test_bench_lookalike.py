"""The speed run's look-alike corpus: distinct notes of 14 words from one vocabulary of 24, the same every run."""

from __future__ import annotations

from bench.datasets import LOOKALIKE_VOCABULARY, LOOKALIKE_WORDS, lookalike_corpus


def test_lookalike_notes_are_distinct_seeded_and_share_their_words() -> None:
    corpus = lookalike_corpus(2000)
    assert len(corpus.texts) == len(set(corpus.texts)) == 2000
    assert corpus.sources == {"lookalike": 2000}
    assert lookalike_corpus(2000).texts == corpus.texts
    vocabulary = set(LOOKALIKE_VOCABULARY)
    for text in corpus.texts[:100]:
        words = text.rstrip(".").lower().split()
        assert len(words) == LOOKALIKE_WORDS and set(words) <= vocabulary
