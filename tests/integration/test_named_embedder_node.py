"""A node records the embedder of its data dir at its first start and refuses to start with another one."""

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
