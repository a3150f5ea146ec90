"""Cross-encoder reranking: BERT sequence classifiers built into ONNX, and finding the installed one."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from tokenizers import Encoding, Tokenizer

from engram.embed.embedder import cpu_session, length_batches
from engram.embed.onnx_builder import (
    BUILDER_VERSION,
    DEFAULT_OPSET,
    BertConfig,
    build_sequence_classifier_model,
    load_bert_weights,
    save_model_atomic,
)

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32  # sentence-transformers CrossEncoder.predict default
DEFAULT_MAX_LENGTH = 512
SEQUENCE_CLASSIFIER = "BertForSequenceClassification"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
METADATA_FILE = "engram-model.json"  # written by engram.models.store: model id, source, install time
RERANKERS_DIR = "rerankers"
ACTIVE_FILE = "ACTIVE"
_HASH_CHARS = 12
# tokenizer_config.json says "no limit" with a huge sentinel (int(1e30)); anything this big is not a limit.
_NO_LIMIT = 1_000_000


@runtime_checkable
class Reranker(Protocol):
    """Anything that scores (query, document) pairs; a higher score means more relevant."""

    @property
    def model_id(self) -> str:
        """Identifier of the model, reported by search's explain output."""
        ...

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """Return float32 relevance scores [len(documents)], in input order."""
        ...


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """Reranker options, filled by the caller from engram.config.Settings.

    ``model_dir`` overrides the installed model (``find_reranker``); ``enabled=False`` turns
    reranking off even when a model is installed.
    """

    enabled: bool = True
    model_dir: Path | None = None
    threads: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    max_length: int | None = None


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def architectures(config: dict[str, Any]) -> list[str]:
    """The ``architectures`` list of a Hugging Face config dict (empty when absent or malformed)."""
    raw = config.get("architectures") or []
    return [str(a) for a in raw] if isinstance(raw, list) else []


def _model_fingerprint(model_dir: Path) -> str:
    """Hash of everything the ONNX file is derived from, so a changed model or builder rebuilds it."""
    digest = hashlib.sha256(f"builder={BUILDER_VERSION};opset={DEFAULT_OPSET};head=classifier".encode())
    for rel in ("config.json", "model.safetensors"):
        digest.update(rel.encode())
        with (model_dir / rel).open("rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()[:_HASH_CHARS]


class OnnxReranker:
    """Cross-encoder scores from a Hugging Face ``BertForSequenceClassification`` directory.

    The directory needs config.json, model.safetensors and tokenizer.json. The ONNX graph is built
    from the safetensors by ``engram.embed.onnx_builder`` and cached in ``cache_dir`` under a name
    derived from the model's content. Pairs are tokenised as sentence-transformers' CrossEncoder
    does: both texts stripped, ``[CLS] query [SEP] document [SEP]`` with token type 0 for the query
    part and 1 for the document part, truncated "longest_first" to ``max_length`` tokens.

    ``score`` is safe to call from several threads at once: the tokenizer is configured once here
    and only read afterwards, and onnxruntime's ``run`` is thread-safe.
    """

    model_id: str
    max_length: int
    num_labels: int
    onnx_path: Path

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        model_id: str | None = None,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int | None = None,
        label_counts: tuple[int, ...] = (1, 2),
    ) -> None:
        """Build (once) and load the ONNX model for ``model_dir``.

        Args:
            model_dir: Hugging Face cross-encoder directory (see the class docstring).
            cache_dir: where the generated .onnx file is kept between runs.
            model_id: name reported as ``model_id``; defaults to the id recorded at install time
                (``engram models pull``/``import``), else the directory name.
            threads: onnxruntime intra-op threads; defaults to ``default_threads()``.
            batch_size: pairs per onnxruntime call.
            max_length: token budget per pair including special tokens; defaults to the smallest
                of 512, the model's ``max_position_embeddings`` and the tokenizer's ``model_max_length``.
            label_counts: the numbers of labels accepted (a reranker: 1 or 2; an NLI model, engram.models.nli: 3).

        Raises:
            FileNotFoundError: a required file is missing.
            ValueError: the directory is not a supported BERT sequence classifier.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        model_dir = Path(model_dir)
        missing = [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]
        if missing:
            raise FileNotFoundError(f"{model_dir}: missing {', '.join(missing)}")
        config_raw = _read_json(model_dir / "config.json")
        if SEQUENCE_CLASSIFIER not in architectures(config_raw):
            raise ValueError(
                f"{model_dir}: architectures is {architectures(config_raw)}, not [{SEQUENCE_CLASSIFIER!r}]; "
                "a reranker must be a BERT cross-encoder such as cross-encoder/ms-marco-MiniLM-L-6-v2"
            )
        self._config = BertConfig.from_dict(config_raw)
        self.model_id = model_id or str(_read_json(model_dir / METADATA_FILE).get("model_id") or model_dir.name)
        self.batch_size = batch_size
        self.max_length = self._resolve_max_length(model_dir, max_length)
        self._tokenizer = self._load_tokenizer(model_dir / "tokenizer.json", self.max_length)
        pad = self._tokenizer.token_to_id("[PAD]")
        self._pad_id = int(pad if pad is not None else config_raw.get("pad_token_id", 0))
        self.onnx_path = self._ensure_onnx(model_dir, Path(cache_dir))
        self._session = cpu_session(self.onnx_path, threads)
        self.num_labels = int(self._session.get_outputs()[0].shape[1])
        if label_counts != (1, 2) and self.num_labels not in label_counts:
            raise ValueError(f"{model_dir}: the classifier has {self.num_labels} labels, not {label_counts}")
        if label_counts == (1, 2) and self.num_labels not in (1, 2):
            raise ValueError(
                f"{model_dir}: the classifier has {self.num_labels} labels; a reranker needs 1 (a relevance "
                "logit) or 2 (not relevant / relevant)"
            )

    # -- construction helpers --------------------------------------------------------------

    def _resolve_max_length(self, model_dir: Path, requested: int | None) -> int:
        limit = self._config.max_position_embeddings
        if requested is not None:
            if requested > limit:
                raise ValueError(f"max_length {requested} exceeds the model's {limit} position embeddings")
            return requested
        # CrossEncoder with max_length=None truncates at the tokenizer's model_max_length.
        tokenizer_limit = _read_json(model_dir / "tokenizer_config.json").get("model_max_length")
        candidates = [DEFAULT_MAX_LENGTH, limit]
        if isinstance(tokenizer_limit, int | float) and 0 < tokenizer_limit < _NO_LIMIT:
            candidates.append(int(tokenizer_limit))
        return min(candidates)

    @staticmethod
    def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
        tokenizer = Tokenizer.from_file(str(path))
        if tokenizer.post_processor is None:
            raise ValueError(f"{path}: no post_processor, so pairs would lack [CLS]/[SEP] framing")
        specials = tokenizer.num_special_tokens_to_add(is_pair=True)
        if max_length <= specials + 1:
            raise ValueError(f"max_length {max_length} leaves no room for text next to {specials} special tokens")
        # A saved tokenizer.json may carry fixed padding/truncation; CrossEncoder overrides both per
        # call. We truncate here, like its truncation="longest_first", and pad ourselves per batch.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        return tokenizer

    def _ensure_onnx(self, model_dir: Path, cache_dir: Path) -> Path:
        stem = self.model_id.rsplit("/", 1)[-1]
        path = cache_dir / f"{stem}-{_model_fingerprint(model_dir)}.onnx"
        if not path.is_file():
            weights = load_bert_weights(model_dir / "model.safetensors")
            save_model_atomic(build_sequence_classifier_model(weights, self._config), path)
        return path

    # -- inference ---------------------------------------------------------------------------

    def tokenize(self, query: str, documents: Sequence[str]) -> list[Encoding]:
        """Pair encodings exactly as CrossEncoder produces them (stripped, longest_first truncated)."""
        q = str(query).strip()
        return self._tokenizer.encode_batch([(q, str(d).strip()) for d in documents])

    def _pad(self, encodings: Sequence[Encoding]) -> dict[str, np.ndarray]:
        """Right-pad to the longest pair in this batch, like ``padding=True``."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    def _scores(self, logits: np.ndarray) -> np.ndarray:
        if self.num_labels == 1:
            return logits[:, 0]
        # Two labels (0 = not relevant, 1 = relevant): the log-odds of "relevant" under softmax,
        # which ranks exactly like its softmax probability but keeps the full range.
        return logits[:, 1] - logits[:, 0]

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """Relevance of each document to ``query``: float32 [len(documents)], in input order.

        Scores are raw logits (CrossEncoder with an identity activation): for one label the logit,
        for two labels ``logit[relevant=1] - logit[0]``. Apply a sigmoid for a 0-1 value; the
        order is the same. Pairs are sorted by token count and run in chunks (``length_batches``) so
        short pairs are not padded to the length of long ones.
        """
        if isinstance(documents, str):
            raise TypeError("score() takes a sequence of documents, not a single string")
        out = np.empty(len(documents), dtype=np.float32)
        if not documents:
            return out
        encodings = self.tokenize(query, documents)
        for chunk in length_batches([len(e.ids) for e in encodings], batch_size=self.batch_size):
            (logits,) = self._session.run(["logits"], self._pad([encodings[i] for i in chunk]))
            out[chunk] = self._scores(logits)
        return out

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The classifier's raw logits for each (first, second) text pair: float32 [len(pairs), num_labels]."""
        out = np.empty((len(pairs), self.num_labels), dtype=np.float32)
        if not pairs:
            return out
        encodings = self._tokenizer.encode_batch([(str(a).strip(), str(b).strip()) for a, b in pairs])
        for chunk in length_batches([len(e.ids) for e in encodings], batch_size=self.batch_size):
            (logits,) = self._session.run(["logits"], self._pad([encodings[i] for i in chunk]))
            out[chunk] = logits
        return out


# -- installed models ---------------------------------------------------------------------


def rerankers_dir(models_dir: Path) -> Path:
    """Where installed cross-encoders live: ``<models_dir>/rerankers``."""
    return Path(models_dir) / RERANKERS_DIR


def read_active(models_dir: Path) -> str | None:
    """The model name in ``rerankers/ACTIVE``, or None when there is no such file."""
    path = rerankers_dir(models_dir) / ACTIVE_FILE
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8").strip() or None


def looks_installed(model_dir: Path) -> bool:
    """Cheap check (no weights loaded): the required files exist and config.json names a BERT classifier."""
    if not all((model_dir / name).is_file() for name in REQUIRED_FILES):
        return False
    try:
        return SEQUENCE_CLASSIFIER in architectures(_read_json(model_dir / "config.json"))
    except (OSError, ValueError):
        return False


def installed_at(model_dir: Path) -> float:
    """Install time recorded by engram.models.store, else the directory's modification time."""
    try:
        value = _read_json(model_dir / METADATA_FILE).get("installed_at")
    except (OSError, ValueError):  # a damaged metadata file only costs the ordering hint
        value = None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else model_dir.stat().st_mtime


def installed_models(models_dir: Path) -> list[Path]:
    """Every installed-looking reranker directory, newest first; dot-named (staging) dirs are skipped."""
    root = rerankers_dir(models_dir)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and looks_installed(p)]
    return sorted(found, key=installed_at, reverse=True)


def find_reranker(models_dir: Path) -> Path | None:
    """The reranker to load: the one named in ``rerankers/ACTIVE``, else the newest installed, else None."""
    active = read_active(models_dir)
    if active is not None:
        candidate = rerankers_dir(models_dir) / active
        # ACTIVE holds a bare directory name; anything path-like is not ours to follow.
        if Path(active).name == active and not active.startswith(".") and looks_installed(candidate):
            return candidate
        log.warning("rerankers/ACTIVE names %r, which is not an installed model; using the newest", active)
    models = installed_models(models_dir)
    return models[0] if models else None


def load_reranker(
    models_dir: Path, *, cache_dir: Path | None = None, settings: RerankSettings | None = None
) -> OnnxReranker | None:
    """The configured reranker, or None when reranking is off or no model is installed.

    ``cache_dir`` (for the .onnx file) defaults to ``models_dir``, where the embedder's ONNX
    files live too and where ``engram models pull``/``import`` leave the file they built.
    """
    settings = settings or RerankSettings()
    if not settings.enabled:
        return None
    model_dir = settings.model_dir or find_reranker(models_dir)
    if model_dir is None:
        return None
    return OnnxReranker(
        model_dir,
        cache_dir or models_dir,
        threads=settings.threads,
        batch_size=settings.batch_size,
        max_length=settings.max_length,
    )
