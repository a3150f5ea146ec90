"""Dense text embeddings: ONNX BERT encoders built from safetensors, run with onnxruntime."""

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from engram.embed.embedder import OnnxEmbedder

__all__ = ["Embedder", "OnnxEmbedder"]


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 vectors of a fixed width."""

    @property
    def model_id(self) -> str:
        """Identifier of the model, stored next to vectors so mismatched indexes can be detected."""
        ...

    @property
    def dim(self) -> int:
        """Width of every embedding row."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array [len(texts), dim] with unit-length rows, in input order."""
        ...
