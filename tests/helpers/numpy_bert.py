"""Plain numpy BERT forward pass (float64), the reference the ONNX graphs are tested against."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

TINY_CONFIG: dict[str, Any] = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
    "pad_token_id": 0,
}


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), since numpy has no erf and scipy is not a dependency."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class NumpyBert:
    """Textbook BERT: separate Q/K/V projections, explicit softmax, float64 throughout."""

    def __init__(self, weights: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> None:
        self.w = {k.removeprefix("bert."): np.asarray(v, dtype=np.float64) for k, v in weights.items()}
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        return layer_norm(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _attention(self, x: np.ndarray, mask: np.ndarray, name: str) -> np.ndarray:
        b, s, h = x.shape
        d = h // self.heads

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, s, self.heads, d).transpose(0, 2, 1, 3)

        q = split(self._linear(x, f"{name}.self.query"))
        k = split(self._linear(x, f"{name}.self.key"))
        v = split(self._linear(x, f"{name}.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
        return self._ln(self._linear(context, f"{name}.output.dense") + x, f"{name}.output.LayerNorm")

    def hidden_states(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray | None = None
    ) -> np.ndarray:
        """last_hidden_state [b, s, h] for int arrays [b, s]."""
        if token_type_ids is None:
            token_type_ids = np.zeros_like(input_ids)
        s = input_ids.shape[1]
        x = (
            self.w["embeddings.word_embeddings.weight"][input_ids]
            + self.w["embeddings.position_embeddings.weight"][np.arange(s)][None]
            + self.w["embeddings.token_type_embeddings.weight"][token_type_ids]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        for i in range(self.layers):
            name = f"encoder.layer.{i}"
            x = self._attention(x, attention_mask, f"{name}.attention")
            inner = gelu(self._linear(x, f"{name}.intermediate.dense"))
            x = self._ln(self._linear(inner, f"{name}.output.dense") + x, f"{name}.output.LayerNorm")
        return x

    def sentence_embeddings(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """sentence-transformers Transformer -> mean Pooling -> Normalize."""
        hidden = self.hidden_states(input_ids, attention_mask)
        m = attention_mask[..., None].astype(np.float64)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

    def classifier_logits(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
    ) -> np.ndarray:
        """BertForSequenceClassification logits [b, num_labels]."""
        hidden = self.hidden_states(input_ids, attention_mask, token_type_ids)
        pooled = np.tanh(self._linear(hidden[:, 0], "pooler.dense"))
        return self._linear(pooled, "classifier")


def random_bert_weights(
    config: Mapping[str, Any],
    rng: np.random.Generator,
    *,
    prefix: str = "",
    num_labels: int | None = None,
    scale: float = 0.3,
) -> dict[str, np.ndarray]:
    """A randomly initialised float32 BERT state dict; ``scale`` is large enough for peaky attention."""
    h, inter = int(config["hidden_size"]), int(config["intermediate_size"])

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ln(name: str) -> dict[str, np.ndarray]:
        return {f"{name}.weight": (1.0 + normal(h)).astype(np.float32), f"{name}.bias": normal(h)}

    def dense(name: str, out_dim: int, in_dim: int) -> dict[str, np.ndarray]:
        return {f"{name}.weight": normal(out_dim, in_dim), f"{name}.bias": normal(out_dim)}

    w: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": normal(int(config["vocab_size"]), h),
        "embeddings.position_embeddings.weight": normal(int(config["max_position_embeddings"]), h),
        "embeddings.token_type_embeddings.weight": normal(int(config["type_vocab_size"]), h),
        "embeddings.position_ids": np.arange(int(config["max_position_embeddings"]), dtype=np.int64)[None],
        **ln("embeddings.LayerNorm"),
    }
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        for n in ("query", "key", "value"):
            w |= dense(f"{p}.attention.self.{n}", h, h)
        w |= dense(f"{p}.attention.output.dense", h, h) | ln(f"{p}.attention.output.LayerNorm")
        w |= dense(f"{p}.intermediate.dense", inter, h) | dense(f"{p}.output.dense", h, inter)
        w |= ln(f"{p}.output.LayerNorm")
    w |= dense("pooler.dense", h, h)
    w = {f"{prefix}{k}": v for k, v in w.items()}
    if num_labels is not None:
        w |= dense("classifier", num_labels, h)
    return w
