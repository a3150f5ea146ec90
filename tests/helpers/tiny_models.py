"""Tiny randomly initialised BERT cross-encoders in Hugging Face layout, built by the tests themselves."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from tests.helpers.numpy_bert import TINY_CONFIG, random_bert_weights

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORD_TEXT = """
the a an of and to in is are what how why does do which where who memory memories agent agents
search vector store python cat dog runs fast slow database query document model engram shared
service token rerank score cross encoder fox jumps over lazy brown quick red blue green sky sea
river mountain city paris france capital population people live berlin museum known for well
"""
WORDS = tuple(_WORD_TEXT.split())
PUNCTUATION = (".", ",", "?", "!", "'", "-")
SUFFIXES = ("##s", "##ing", "##ed", "##er", "##ly")
# Fixed order: ids are positions in this list, so tests can tokenise by hand.
TINY_VOCAB: tuple[str, ...] = (*SPECIAL_TOKENS, *WORDS, *PUNCTUATION, *SUFFIXES)


def cross_encoder_config(overrides: Mapping[str, Any] | None = None, *, num_labels: int = 1) -> dict[str, Any]:
    """config.json of a BertForSequenceClassification: TINY_CONFIG dimensions unless overridden."""
    config = {
        **TINY_CONFIG,
        "vocab_size": len(TINY_VOCAB),
        "architectures": ["BertForSequenceClassification"],
        "id2label": {str(i): f"LABEL_{i}" for i in range(num_labels)},
        "label2id": {f"LABEL_{i}": i for i in range(num_labels)},
        **(overrides or {}),
    }
    if config["vocab_size"] < len(TINY_VOCAB):
        raise ValueError(f"vocab_size must be at least {len(TINY_VOCAB)} for the tiny tokenizer")
    return config


def make_tokenizer(vocab: tuple[str, ...] = TINY_VOCAB) -> Tokenizer:
    """A real BERT WordPiece tokenizer (uncased) over ``vocab``, with single and pair templates."""
    ids = {token: i for i, token in enumerate(vocab)}
    tokenizer = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer


def make_tiny_cross_encoder(
    path: Path, *, seed: int = 0, config: Mapping[str, Any] | None = None, num_labels: int = 1
) -> Path:
    """Write a random BertForSequenceClassification model directory at ``path`` and return it.

    Files: config.json, model.safetensors (``bert.``-prefixed encoder and pooler, unprefixed
    classifier, as transformers saves it), tokenizer.json, vocab.txt, tokenizer_config.json and
    special_tokens_map.json. ``config`` overrides dimensions (e.g. MiniLM-sized for benchmarks).
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    full_config = cross_encoder_config(config, num_labels=num_labels)
    weights = random_bert_weights(full_config, np.random.default_rng(seed), prefix="bert.", num_labels=num_labels)
    save_file(weights, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(full_config, indent=2), encoding="utf-8")
    make_tokenizer().save(str(path / "tokenizer.json"))
    (path / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    (path / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "BertTokenizer"}),
        encoding="utf-8",
    )
    specials = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]"}
    (path / "special_tokens_map.json").write_text(json.dumps({**specials, "mask_token": "[MASK]"}), encoding="utf-8")
    return path


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """The raw (un-normalised) state dict of a model directory, for the numpy reference."""
    return load_file(str(Path(path) / "model.safetensors"))


def make_tiny_embedder(path: Path, *, seed: int = 0, pooling: str = "cls") -> Path:
    """Write a random sentence-transformers BERT directory (a ``BertModel`` with its pooling and length configs) at
    ``path`` and return it: what `engram models pull` fetches for an embedder of the list."""
    path = Path(path)
    (path / "1_Pooling").mkdir(parents=True, exist_ok=True)
    config = {**TINY_CONFIG, "vocab_size": len(TINY_VOCAB)}
    save_file(random_bert_weights(config, np.random.default_rng(seed)), str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    make_tokenizer().save(str(path / "tokenizer.json"))
    (path / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}), encoding="utf-8")
    modes = {"pooling_mode_cls_token": pooling == "cls", "pooling_mode_mean_tokens": pooling == "mean"}
    (path / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **modes}), "utf-8")
    return path
