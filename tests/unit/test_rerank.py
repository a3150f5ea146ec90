"""OnnxReranker against the numpy reference BERT classifier, and finding the installed reranker."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engram.models.rerank
from engram.models.rerank import (
    ACTIVE_FILE,
    METADATA_FILE,
    OnnxReranker,
    Reranker,
    RerankSettings,
    find_reranker,
    load_reranker,
)
from tests.helpers.numpy_bert import NumpyBert
from tests.helpers.tiny_models import TINY_VOCAB, load_weights, make_tiny_cross_encoder

ATOL = 1e-4
VOCAB_IDS = {token: i for i, token in enumerate(TINY_VOCAB)}
CLS, SEP = VOCAB_IDS["[CLS]"], VOCAB_IDS["[SEP]"]

QUERY = "What is the capital of France?"
LONG_DOC = " ".join(["the quick brown fox jumps over the lazy dog ."] * 12)  # 120 tokens, over max_length 64
LONG_QUERY = " ".join(["how does the agent search memory"] * 7)  # 42 tokens
DOCS = [
    "Paris is the capital of France.",
    "The lazy dog runs slow",
    "",
    "BERLIN is well KNOWN for people , museum and river .",
    LONG_DOC,
    "cat",
]


def words(text: str) -> list[int]:
    """Hand tokenisation for texts made of whole vocabulary words: lowercase, split off punctuation."""
    return [VOCAB_IDS[w] for w in re.findall(r"\w+|[^\w\s]", text.lower())]


def longest_first(a: list[int], b: list[int], budget: int) -> tuple[list[int], list[int]]:
    """The tokenizers library's "longest_first" pair truncation, written out."""
    if len(a) + len(b) <= budget:
        return a, b
    half = budget // 2
    if len(a) <= half:
        return a, b[: budget - len(a)]
    if len(b) <= half:
        return a[: budget - len(b)], b
    # Both long: the longer keeps the larger half; on a tie the second does.
    if len(a) > len(b):
        return a[: budget - half], b[:half]
    return a[:half], b[: budget - half]


def reference_scores(model_dir: Path, query: str, docs: Sequence[str], max_length: int) -> np.ndarray:
    """Each pair alone (no padding) through the float64 numpy BERT classifier."""
    config = json.loads((model_dir / "config.json").read_text())
    bert = NumpyBert(load_weights(model_dir), config)
    out = []
    for doc in docs:
        a, b = longest_first(words(query), words(doc), max_length - 3)
        ids = np.array([[CLS, *a, SEP, *b, SEP]])
        types = np.array([[0] * (len(a) + 2) + [1] * (len(b) + 1)])
        logits = bert.classifier_logits(ids, np.ones_like(ids), types)[0]
        out.append(logits[0] if len(logits) == 1 else logits[1] - logits[0])
    return np.array(out)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce") / "tiny-ce")


@pytest.fixture(scope="module")
def reranker(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> OnnxReranker:
    return OnnxReranker(model_dir, tmp_path_factory.mktemp("onnx"), threads=2)


def test_scores_match_numpy_reference_including_truncated_documents(reranker: OnnxReranker, model_dir: Path) -> None:
    scores = reranker.score(QUERY, DOCS)

    assert scores.dtype == np.float32
    assert scores.shape == (len(DOCS),)
    assert reranker.max_length == 64  # min(512, max_position_embeddings=64)
    np.testing.assert_allclose(scores, reference_scores(model_dir, QUERY, DOCS, 64), atol=ATOL, rtol=0)


def test_pair_encoding_is_cls_query_sep_document_sep_with_type_ids(reranker: OnnxReranker) -> None:
    (enc,) = reranker.tokenize("  What is  ", ["Paris is\n"])

    assert enc.tokens == ["[CLS]", "what", "is", "[SEP]", "paris", "is", "[SEP]"]
    assert enc.type_ids == [0, 0, 0, 0, 1, 1, 1]


def test_long_query_and_document_are_both_truncated_longest_first(reranker: OnnxReranker, model_dir: Path) -> None:
    docs = [LONG_DOC, "the cat", " ".join(["red blue green"] * 20)]

    scores = reranker.score(LONG_QUERY, docs)

    assert all(len(e.ids) <= 64 for e in reranker.tokenize(LONG_QUERY, docs))
    np.testing.assert_allclose(scores, reference_scores(model_dir, LONG_QUERY, docs, 64), atol=ATOL, rtol=0)


def test_max_length_keyword_truncates_with_odd_budgets_and_ties(model_dir: Path, tmp_path: Path) -> None:
    reranker = OnnxReranker(model_dir, tmp_path, max_length=14)
    query = "red blue green sky sea river mountain"  # 7 tokens
    # fits; a tie; the document longer; the query longer; the document short enough to keep whole
    docs = [
        "city paris france",
        "the a an of and to in",
        "cat dog " * 10,
        "cat dog cat dog cat dog",
        "the cat is blue .",
    ]

    scores = reranker.score(query, docs)

    assert reranker.max_length == 14
    assert [len(e.ids) for e in reranker.tokenize(query, docs)] == [13, 14, 14, 14, 14]
    np.testing.assert_allclose(scores, reference_scores(model_dir, query, docs, 14), atol=ATOL, rtol=0)


def test_batching_preserves_input_order(model_dir: Path, tmp_path: Path) -> None:
    small = OnnxReranker(model_dir, tmp_path, batch_size=2)
    docs = [*DOCS, "the sky is blue", "paris", LONG_DOC[:40]]

    batched = small.score(QUERY, docs)
    one_by_one = np.array([small.score(QUERY, [d])[0] for d in docs])

    np.testing.assert_allclose(batched, one_by_one, atol=1e-5, rtol=0)
    np.testing.assert_allclose(batched, reference_scores(model_dir, QUERY, docs, 64), atol=ATOL, rtol=0)


def test_empty_document_list_returns_empty_float32_array(reranker: OnnxReranker) -> None:
    scores = reranker.score(QUERY, [])

    assert scores.shape == (0,)
    assert scores.dtype == np.float32


def test_single_string_instead_of_documents_is_rejected(reranker: OnnxReranker) -> None:
    with pytest.raises(TypeError, match="sequence of documents"):
        reranker.score(QUERY, "Paris is the capital")


def test_concurrent_calls_from_threads_give_the_serial_results(reranker: OnnxReranker) -> None:
    queries = [QUERY, LONG_QUERY, "cat", "which city"] * 4
    serial = [reranker.score(q, DOCS) for q in queries]

    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda q: reranker.score(q, DOCS), queries))

    for expected, actual in zip(serial, parallel, strict=True):
        np.testing.assert_allclose(actual, expected, atol=1e-6, rtol=0)


def test_two_label_classifier_scores_relevant_minus_not_relevant(tmp_path: Path) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "two", seed=3, num_labels=2)

    scores = OnnxReranker(model_dir, tmp_path / "cache").score(QUERY, DOCS)

    np.testing.assert_allclose(scores, reference_scores(model_dir, QUERY, DOCS, 64), atol=ATOL, rtol=0)


def test_onnx_file_is_built_once_and_rebuilt_when_weights_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "m")
    cache = tmp_path / "cache"
    first = OnnxReranker(model_dir, cache)

    def no_build(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the cached ONNX file should have been reused")

    with monkeypatch.context() as patch:
        patch.setattr(engram.models.rerank, "build_sequence_classifier_model", no_build)
        second = OnnxReranker(model_dir, cache)
    make_tiny_cross_encoder(model_dir, seed=1)  # new weights, same directory
    third = OnnxReranker(model_dir, cache)

    assert second.onnx_path == first.onnx_path
    assert third.onnx_path != first.onnx_path
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.onnx_path.name, third.onnx_path.name])
    assert not np.allclose(first.score(QUERY, DOCS), third.score(QUERY, DOCS))


def test_model_id_comes_from_install_metadata_then_directory_name(tmp_path: Path) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "ms-marco")
    assert OnnxReranker(model_dir, tmp_path / "c").model_id == "ms-marco"

    (model_dir / METADATA_FILE).write_text(json.dumps({"model_id": "cross-encoder/ms-marco-MiniLM-L-6-v2"}))
    reranker = OnnxReranker(model_dir, tmp_path / "c")

    assert reranker.model_id == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert reranker.onnx_path.name.startswith("ms-marco-MiniLM-L-6-v2-")
    assert isinstance(reranker, Reranker)


def test_non_classifier_architecture_is_rejected_with_an_example(tmp_path: Path) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "m", config={"architectures": ["BertModel"]})

    with pytest.raises(ValueError, match=r"BertForSequenceClassification.*ms-marco"):
        OnnxReranker(model_dir, tmp_path / "c")


def test_three_label_classifier_is_rejected(tmp_path: Path) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "m", num_labels=3)

    with pytest.raises(ValueError, match="3 labels"):
        OnnxReranker(model_dir, tmp_path / "c")


def test_max_length_beyond_position_embeddings_is_rejected(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="position embeddings"):
        OnnxReranker(model_dir, tmp_path, max_length=65)


def test_missing_files_are_named(tmp_path: Path) -> None:
    model_dir = make_tiny_cross_encoder(tmp_path / "m")
    (model_dir / "tokenizer.json").unlink()

    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        OnnxReranker(model_dir, tmp_path / "c")


# -- find_reranker ---------------------------------------------------------------------------


def install(models_dir: Path, name: str, model_dir: Path, *, at: float) -> Path:
    """Place a model the way engram.models.store does: a directory with metadata under rerankers/."""
    target = models_dir / "rerankers" / name
    shutil.copytree(model_dir, target)
    (target / METADATA_FILE).write_text(json.dumps({"model_id": name, "installed_at": at}))
    return target


def test_find_reranker_without_models_returns_none(tmp_path: Path) -> None:
    assert find_reranker(tmp_path / "models") is None
    (tmp_path / "models" / "rerankers").mkdir(parents=True)
    assert find_reranker(tmp_path / "models") is None


def test_find_reranker_returns_newest_valid_install(tmp_path: Path, model_dir: Path) -> None:
    models = tmp_path / "models"
    install(models, "old", model_dir, at=1000.0)
    newest = install(models, "new", model_dir, at=2000.0)
    install(models, ".staging-abc", model_dir, at=3000.0)  # an install in progress
    broken = install(models, "broken", model_dir, at=4000.0)
    (broken / "model.safetensors").unlink()

    assert find_reranker(models) == newest


def test_find_reranker_follows_active_file(tmp_path: Path, model_dir: Path) -> None:
    models = tmp_path / "models"
    old = install(models, "old", model_dir, at=1000.0)
    install(models, "new", model_dir, at=2000.0)
    (models / "rerankers" / ACTIVE_FILE).write_text("old\n")

    assert find_reranker(models) == old


@pytest.mark.parametrize("active", ["gone", "../new", ".staging-abc"])
def test_find_reranker_ignores_an_active_file_naming_no_install(tmp_path: Path, model_dir: Path, active: str) -> None:
    models = tmp_path / "models"
    newest = install(models, "new", model_dir, at=2000.0)
    install(models, ".staging-abc", model_dir, at=3000.0)
    (models / "rerankers" / ACTIVE_FILE).write_text(active)

    assert find_reranker(models) == newest


def test_load_reranker_honours_settings(tmp_path: Path, model_dir: Path) -> None:
    models = tmp_path / "models"
    assert load_reranker(models) is None
    install(models, "new", model_dir, at=2000.0)

    loaded = load_reranker(models, settings=RerankSettings(batch_size=4, max_length=32))

    assert loaded is not None
    assert (loaded.model_id, loaded.batch_size, loaded.max_length) == ("new", 4, 32)
    assert loaded.onnx_path.parent == models
    assert load_reranker(models, settings=RerankSettings(enabled=False)) is None
    explicit = load_reranker(tmp_path / "elsewhere", settings=RerankSettings(model_dir=model_dir))
    assert explicit is not None
    assert explicit.model_id == model_dir.name
