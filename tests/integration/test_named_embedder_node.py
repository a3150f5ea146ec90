"""Models by name in a running node: a data dir keeps the embedder it started with; a reranker name must resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import start_node

pytestmark = pytest.mark.integration


def test_a_node_keeps_the_embedder_its_data_dir_started_with(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    first = start_node(home, model_cache)
    assert first.stop() == 0
    assert json.loads((home / "embedder.json").read_text())["model"] == "minilm-l6"

    with pytest.raises(RuntimeError) as refused:
        start_node(home, model_cache, ENGRAM_EMBED_MODEL="bge-small-en")

    message = str(refused.value)
    assert "holds vectors of the embedder minilm-l6" in message
    assert "Set ENGRAM_EMBED_MODEL=minilm-l6 to keep this data dir" in message


def test_a_node_refuses_a_reranker_name_that_is_neither_listed_nor_installed(tmp_path: Path, model_cache: Path) -> None:
    with pytest.raises(RuntimeError) as refused:
        start_node(tmp_path / "home", model_cache, ENGRAM_RERANK_MODEL="my-missing-ce")

    message = str(refused.value)
    assert "ENGRAM_RERANK_MODEL='my-missing-ce' is neither a reranker of the list (ms-marco-minilm-l6" in message
    assert "engram models pull HUB-ID" in message
