"""ONNX BERT graphs from engram.embed.onnx_builder against a plain numpy BERT, on a tiny random model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from safetensors.numpy import save_file

from engram.embed.onnx_builder import (
    BertConfig,
    build_sentence_embedding_model,
    build_sequence_classifier_model,
    load_bert_weights,
    normalize_weight_names,
    save_model_atomic,
)
from tests.helpers.numpy_bert import TINY_CONFIG, NumpyBert, random_bert_weights

ATOL = 1e-4


def write_model(tmp_path: Path, weights: dict[str, np.ndarray]) -> Path:
    save_file(weights, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    return tmp_path


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def batch(rng: np.random.Generator, lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids/mask with [CLS]=1 ... [SEP]=2 framing, padding id 0."""
    width = max(lengths)
    ids = np.zeros((len(lengths), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(3, TINY_CONFIG["vocab_size"], n)
        ids[row, 0], ids[row, n - 1] = 1, 2
        mask[row, :n] = 1
    return ids, mask


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    assert np.abs(actual - expected).max() < ATOL
    if actual.shape[-1] > 1:
        cos = (actual * expected).sum(-1) / (np.linalg.norm(actual, axis=-1) * np.linalg.norm(expected, axis=-1))
        assert cos.min() > 0.9999


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def embedding_dir(tmp_path: Path, rng: np.random.Generator) -> Path:
    """A BertModel-style checkpoint: names without the "bert." prefix."""
    return write_model(tmp_path, random_bert_weights(TINY_CONFIG, rng))


def test_sentence_embedding_matches_numpy(embedding_dir: Path, rng: np.random.Generator) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    model = build_sentence_embedding_model(weights, BertConfig.from_json(embedding_dir / "config.json"))
    onnx.checker.check_model(model, full_check=True)
    ids, mask = batch(rng, [12, 5, 9, 2])

    (out,) = session(model).run(["embeddings"], {"input_ids": ids, "attention_mask": mask})

    assert out.dtype == np.float32
    assert_close(out, NumpyBert(weights, TINY_CONFIG).sentence_embeddings(ids, mask))
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_padding_does_not_change_embedding(embedding_dir: Path, rng: np.random.Generator) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    sess = session(build_sentence_embedding_model(weights, BertConfig.from_json(embedding_dir / "config.json")))
    ids, mask = batch(rng, [4, 11])

    (padded,) = sess.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})
    (alone,) = sess.run(["embeddings"], {"input_ids": ids[:1, :4], "attention_mask": mask[:1, :4]})

    np.testing.assert_allclose(padded[0], alone[0], atol=1e-6)


def test_unnormalised_cls_pooling_and_token_type_input(embedding_dir: Path, rng: np.random.Generator) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    config = BertConfig.from_json(embedding_dir / "config.json")
    model = build_sentence_embedding_model(weights, config, pooling="cls", normalize=False, token_type_input=True)
    ids, mask = batch(rng, [7, 3])
    types = np.zeros_like(ids)

    (out,) = session(model).run(["embeddings"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})

    expected = NumpyBert(weights, TINY_CONFIG).hidden_states(ids, mask, types)[:, 0]
    assert_close(out, expected)


@pytest.mark.parametrize("num_labels", [1, 3])
def test_sequence_classifier_matches_numpy(tmp_path: Path, rng: np.random.Generator, num_labels: int) -> None:
    # BertForSequenceClassification checkpoints prefix the encoder with "bert.".
    raw = random_bert_weights(TINY_CONFIG, rng, prefix="bert.", num_labels=num_labels)
    model_dir = write_model(tmp_path, raw)
    weights = load_bert_weights(model_dir / "model.safetensors")
    model = build_sequence_classifier_model(weights, BertConfig.from_json(model_dir / "config.json"))
    onnx.checker.check_model(model, full_check=True)
    # Query/passage pairs: [CLS] a [SEP] b [SEP], type 0 for the first segment, 1 for the second.
    ids, mask = batch(rng, [10, 6, 13])
    types = np.zeros_like(ids)
    for row, (first, total) in enumerate([(4, 10), (3, 6), (8, 13)]):
        ids[row, first - 1] = 2
        types[row, first:total] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    (logits,) = session(model).run(["logits"], feeds)

    assert logits.shape == (3, num_labels)
    assert_close(logits, NumpyBert(raw, TINY_CONFIG).classifier_logits(ids, mask, types))


def test_token_types_change_classifier_output(tmp_path: Path, rng: np.random.Generator) -> None:
    raw = random_bert_weights(TINY_CONFIG, rng, prefix="bert.", num_labels=1)
    model = build_sequence_classifier_model(normalize_weight_names(raw), BertConfig.from_dict(TINY_CONFIG))
    ids, mask = batch(rng, [9])
    types = np.zeros_like(ids)
    sess = session(model)

    (zero,) = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
    types[0, 5:] = 1
    (pair,) = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})

    assert abs(float(zero[0, 0]) - float(pair[0, 0])) > 1e-3


def test_weight_names_are_normalised() -> None:
    w = np.zeros(2, dtype=np.float32)
    names = normalize_weight_names(
        {"bert.embeddings.LayerNorm.gamma": w, "bert.embeddings.LayerNorm.beta": w, "classifier.bias": w}
    )
    assert set(names) == {"embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias", "classifier.bias"}


def test_missing_parameter_is_named(embedding_dir: Path) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    del weights["encoder.layer.1.attention.self.key.weight"]
    with pytest.raises(KeyError, match=r"encoder\.layer\.1\.attention\.self\.key\.weight"):
        build_sentence_embedding_model(weights, BertConfig.from_dict(TINY_CONFIG))


def test_classifier_requires_classifier_weights(embedding_dir: Path) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    with pytest.raises(KeyError, match=r"classifier\.weight"):
        build_sequence_classifier_model(weights, BertConfig.from_dict(TINY_CONFIG))


@pytest.mark.parametrize(
    ("override", "message"),
    [({"hidden_act": "relu"}, "hidden_act"), ({"position_embedding_type": "relative_key"}, "position")],
)
def test_unsupported_config_is_rejected(override: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BertConfig.from_dict(TINY_CONFIG | override)


def test_save_model_atomic_leaves_only_the_model(embedding_dir: Path, tmp_path: Path) -> None:
    weights = load_bert_weights(embedding_dir / "model.safetensors")
    model = build_sentence_embedding_model(weights, BertConfig.from_dict(TINY_CONFIG))
    target = tmp_path / "cache" / "nested" / "tiny.onnx"

    save_model_atomic(model, target)
    save_model_atomic(model, target)  # overwriting an existing file is fine too

    assert [p.name for p in target.parent.iterdir()] == ["tiny.onnx"]
    assert onnx.load(str(target)).graph.output[0].name == "embeddings"
