"""The model cache is one per machine unless ENGRAM_MODEL_CACHE names another."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.config import Settings, default_model_cache


def test_two_data_dirs_share_the_machines_model_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = Settings.from_env({}, home=tmp_path / "a")
    second = Settings.from_env({}, home=tmp_path / "b")
    assert first.model_cache_dir == second.model_cache_dir == tmp_path / "cache" / "engram" / "models"


def test_model_cache_setting_wins_over_the_machine_default(tmp_path: Path) -> None:
    env = {"ENGRAM_MODEL_CACHE": str(tmp_path / "mine")}
    assert Settings.from_env(env, home=tmp_path / "a").model_cache_dir == tmp_path / "mine"


def test_default_is_under_home_dot_cache_without_a_usable_xdg_cache_home() -> None:
    expected = Path.home() / ".cache" / "engram" / "models"
    assert default_model_cache({}) == expected
    assert default_model_cache({"XDG_CACHE_HOME": ""}) == expected
    assert default_model_cache({"XDG_CACHE_HOME": "relative/dir"}) == expected  # the XDG spec ignores relative ones


def test_the_test_session_keeps_the_default_out_of_the_users_cache(machine_cache_home: Path) -> None:
    assert Settings().model_cache_dir == machine_cache_home / "engram" / "models"
