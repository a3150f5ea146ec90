"""Natural language inference with a local cross-encoder: does one text contradict, entail or leave open another?

An NLI model is a BERT sequence classifier with three labels (contradiction, entailment, neutral), such as the
cross-encoder/nli-* models; ``engram models pull`` installs one under ``<models_dir>/nli`` when its labels say so.
Consolidation uses it, when one is installed, to confirm the contradictions its rules find and to veto a merge of
two texts it reads as contradicting (services/consolidation/maintenance.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engram.models.rerank import OnnxReranker, installed_at, looks_installed

log = logging.getLogger(__name__)

NLI_DIR = "nli"
LABELS = ("contradiction", "entailment", "neutral")
DEFAULT_BATCH_SIZE = 16


@dataclass(frozen=True, slots=True)
class Inference:
    """The model's probabilities that the second text contradicts, follows from, or is neutral to the first."""

    contradiction: float
    entailment: float
    neutral: float

    @property
    def label(self) -> str:
        scores = {"contradiction": self.contradiction, "entailment": self.entailment, "neutral": self.neutral}
        return max(scores, key=lambda k: scores[k])


class Nli(Protocol):
    """Anything that reads text pairs as NLI does (engram.models.nli.OnnxNli; a test double)."""

    @property
    def model_id(self) -> str: ...

    def infer(self, pairs: Sequence[tuple[str, str]]) -> list[Inference]: ...


def label_order(config: dict[str, Any]) -> dict[str, int] | None:
    """Where each NLI label sits among the classifier's outputs, read from config.json's id2label; None when the
    model is not an NLI model (not three labels, or labels that name something else)."""
    id2label = config.get("id2label") or {}
    if not isinstance(id2label, dict) or len(id2label) != 3:
        return None
    names = {str(name).lower(): int(index) for index, name in id2label.items()}
    return names if set(names) == set(LABELS) else None  # unnamed labels (LABEL_0 ...) are not known to be NLI


def is_nli(model_dir: Path) -> bool:
    """Whether ``model_dir``'s config.json names the three NLI labels."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and label_order(config) is not None


class OnnxNli:
    """NLI from a Hugging Face BertForSequenceClassification directory with contradiction/entailment/neutral labels,
    built into ONNX and run like the reranker (engram.models.rerank.OnnxReranker)."""

    def __init__(
        self, model_dir: Path, cache_dir: Path, *, threads: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> None:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
        order = label_order(config) if isinstance(config, dict) else None
        if order is None:
            raise ValueError(f"{model_dir}: config.json does not name the labels {', '.join(LABELS)}")
        self._order = order
        self._classifier = OnnxReranker(model_dir, cache_dir, threads=threads, batch_size=batch_size,
                                        label_counts=(3,))  # fmt: skip
        self.onnx_path = self._classifier.onnx_path

    @property
    def model_id(self) -> str:
        return self._classifier.model_id

    def infer(self, pairs: Sequence[tuple[str, str]]) -> list[Inference]:
        """For each (premise, hypothesis): the softmax of the three labels."""
        logits = self._classifier.logits(pairs).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        o = self._order
        return [
            Inference(float(p[o["contradiction"]]), float(p[o["entailment"]]), float(p[o["neutral"]])) for p in probs
        ]


def nli_dir(models_dir: Path) -> Path:
    """Where installed NLI models live: ``<models_dir>/nli``."""
    return Path(models_dir) / NLI_DIR


def find_nli(models_dir: Path) -> Path | None:
    """The newest installed NLI model, or None."""
    root = nli_dir(models_dir)
    if not root.is_dir():
        return None
    found = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and looks_installed(p)]
    found = [p for p in found if is_nli(p)]
    return max(found, key=installed_at) if found else None


def load_nli(
    models_dir: Path, *, cache_dir: Path | None = None, threads: int | None = None, model_dir: Path | None = None
) -> OnnxNli | None:
    """The NLI model in ``model_dir`` (one a setting names), else the newest installed, or None when there is none
    (or the found one cannot be loaded: consolidation goes on without; a named one that cannot be loaded raises)."""
    if model_dir is not None:
        return OnnxNli(model_dir, cache_dir or models_dir, threads=threads)
    model_dir = find_nli(models_dir)
    if model_dir is None:
        return None
    try:
        return OnnxNli(model_dir, cache_dir or models_dir, threads=threads)
    except (OSError, ValueError) as e:
        log.warning("the NLI model in %s cannot be loaded (%s); consolidation runs without it", model_dir, e)
        return None
