"""Installing rerankers: import_dir, pull from a real local HTTP hub, the `engram models` CLI, progress bars."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engram.models.rerank
from engram.cli import models as models_command
from engram.models.rerank import ACTIVE_FILE, METADATA_FILE, OnnxReranker, find_reranker
from engram.models.store import (
    DownloadError,
    InvalidModel,
    ModelError,
    import_dir,
    list_installed,
    pull,
    safe_name,
)
from engram.progress import ProgressBar, format_bytes
from tests.helpers.hub import Hub, hub_fixture  # noqa: F401  # the hub fixture
from tests.helpers.tiny_models import make_tiny_cross_encoder

HUB_ID = "org/tiny-ce"
QUERY = "what is the capital of france ?"
DOCS = ["paris is the capital of france .", "the lazy dog", ""]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("src") / "tiny-ce")


def leftovers(models: Path) -> list[str]:
    """Everything under the models dir, relative; empty when nothing was left behind."""
    return sorted(str(p.relative_to(models)) for p in models.rglob("*")) if models.exists() else []


def forbid_onnx_build(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the ONNX file built at install time should have been reused")

    monkeypatch.setattr(engram.models.rerank, "build_sequence_classifier_model", no_build)


# -- import_dir ------------------------------------------------------------------------------


def test_import_dir_installs_a_copy_activates_it_and_leaves_the_onnx_file_ready(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "download"
    src.mkdir()
    for f in tiny.iterdir():
        (src / f.name).write_bytes(f.read_bytes())
    (src / "pytorch_model.bin").write_bytes(b"pickle: never copied, never loaded")
    models = tmp_path / "models"

    path = import_dir(src, models, name="my-reranker")

    assert path == models / "rerankers" / "my-reranker"
    assert (models / "rerankers" / ACTIVE_FILE).read_text().strip() == "my-reranker"
    assert not (path / "pytorch_model.bin").exists()
    assert json.loads((path / METADATA_FILE).read_text())["source"] == f"import:{src.resolve()}"
    assert find_reranker(models) == path
    assert [p.name for p in (models / "rerankers").iterdir() if p.name.startswith(".")] == []
    expected = OnnxReranker(tiny, tmp_path / "fresh").score(QUERY, DOCS)
    forbid_onnx_build(monkeypatch)
    np.testing.assert_allclose(OnnxReranker(path, models).score(QUERY, DOCS), expected, atol=1e-6)


def test_import_dir_names_the_install_after_the_directory(tiny: Path, tmp_path: Path) -> None:
    assert import_dir(tiny, tmp_path / "models").name == "tiny-ce"


def _missing_safetensors(d: Path) -> None:
    (d / "model.safetensors").unlink()


def _wrong_architecture(d: Path) -> None:
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "architectures": ["BertModel"]}))


def _corrupt_weights(d: Path) -> None:
    (d / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}" + b"\x00" * 64)


def _weights_missing_classifier(d: Path) -> None:
    from safetensors.numpy import load_file, save_file

    weights = {k: v for k, v in load_file(str(d / "model.safetensors")).items() if not k.startswith("classifier")}
    save_file(weights, str(d / "model.safetensors"))


def _corrupt_tokenizer(d: Path) -> None:
    (d / "tokenizer.json").write_text("{not json")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_missing_safetensors, "Only safetensors weights are supported"),
        (_wrong_architecture, "not a BertForSequenceClassification cross-encoder"),
        (_corrupt_weights, "cannot be used as a reranker"),
        (_weights_missing_classifier, "classifier.weight"),
        (_corrupt_tokenizer, "cannot be used as a reranker"),
    ],
)
def test_import_dir_rejects_a_bad_directory_and_leaves_nothing_behind(
    tmp_path: Path, damage: Any, message: str
) -> None:
    src = make_tiny_cross_encoder(tmp_path / "bad")
    damage(src)
    models = tmp_path / "models"

    with pytest.raises(InvalidModel, match=message):
        import_dir(src, models)

    assert leftovers(models) == []


def test_a_rejected_import_keeps_the_previous_install_active(tiny: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    good = import_dir(tiny, models)
    before = leftovers(models)
    bad = make_tiny_cross_encoder(tmp_path / "bad")
    _corrupt_weights(bad)

    with pytest.raises(InvalidModel):
        import_dir(bad, models)

    assert leftovers(models) == before
    assert find_reranker(models) == good


def test_import_dir_rejects_a_file_and_unusable_names(tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="not a directory"):
        import_dir(tiny / "config.json", tmp_path / "models")
    for name in ("../escape", "a/b", ".hidden", "ACTIVE", ""):
        with pytest.raises(ModelError, match="not a usable model name"):
            import_dir(tiny, tmp_path / "models", name=name)
    assert leftovers(tmp_path / "models") == []


def test_importing_the_same_name_again_replaces_the_install(tmp_path: Path) -> None:
    models = tmp_path / "models"
    first = make_tiny_cross_encoder(tmp_path / "a" / "ce", seed=1)
    second = make_tiny_cross_encoder(tmp_path / "b" / "ce", seed=2)
    import_dir(first, models)

    path = import_dir(second, models)

    assert (path / "model.safetensors").read_bytes() == (second / "model.safetensors").read_bytes()
    assert sorted(p.name for p in (models / "rerankers").iterdir()) == [ACTIVE_FILE, "ce"]


# -- pull ------------------------------------------------------------------------------------


def test_pull_downloads_verifies_installs_and_reports_progress(
    hub: Hub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.publish(HUB_ID, tiny)
    models = tmp_path / "models"
    calls: list[tuple[str, int, int | None]] = []

    path = pull(HUB_ID, models, endpoint=hub.url, progress=lambda *c: calls.append(c))

    assert path == models / "rerankers" / "org--tiny-ce"
    assert (models / "rerankers" / ACTIVE_FILE).read_text().strip() == "org--tiny-ce"
    for f in tiny.iterdir():
        assert (path / f.name).read_bytes() == f.read_bytes()
        reports = [(done, total) for name, done, total in calls if name == f.name]
        size = f.stat().st_size
        assert reports[0] == (0, size)
        assert reports[-1] == (size, size)
        assert [d for d, _ in reports] == sorted(d for d, _ in reports)
    assert f"/cdn/{hashlib.sha256((tiny / 'model.safetensors').read_bytes()).hexdigest()}" in hub.requests
    meta = json.loads((path / METADATA_FILE).read_text())
    assert (meta["model_id"], meta["revision"]) == (HUB_ID, "main")
    assert [p.name for p in (models / "rerankers").iterdir() if p.name.startswith(".")] == []
    expected = OnnxReranker(tiny, tmp_path / "fresh").score(QUERY, DOCS)
    forbid_onnx_build(monkeypatch)
    assert find_reranker(models) == path
    reranker = OnnxReranker(path, models)
    assert reranker.model_id == HUB_ID
    np.testing.assert_allclose(reranker.score(QUERY, DOCS), expected, atol=1e-6)


def test_pull_tolerates_missing_optional_files_and_quotes_the_revision(hub: Hub, tiny: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (src / name).write_bytes((tiny / name).read_bytes())
    hub.publish(HUB_ID, src, revision="refs%2Fpr%2F1", lfs=False)

    path = pull(HUB_ID, tmp_path / "models", endpoint=hub.url, revision="refs/pr/1")

    assert sorted(p.name for p in path.iterdir()) == sorted(
        ["config.json", "model.safetensors", "tokenizer.json", METADATA_FILE]
    )
    assert f"/{HUB_ID}/resolve/refs%2Fpr%2F1/vocab.txt" in hub.requests


def test_pull_of_an_unknown_model_says_the_id_may_be_wrong(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match=r"No model 'org/nope'.*Check the model id.*token"):
        pull("org/nope", tmp_path / "models", endpoint=hub.url)

    assert leftovers(tmp_path / "models") == []


def test_pull_of_a_private_model_needs_a_token(hub: Hub, tiny: Path, tmp_path: Path) -> None:
    hub.publish(HUB_ID, tiny)
    hub.token = "hf_secret"

    with pytest.raises(DownloadError, match=r"HTTP 401.*may be wrong.*ENGRAM_HF_TOKEN"):
        pull(HUB_ID, tmp_path / "models", endpoint=hub.url)
    assert leftovers(tmp_path / "models") == []

    assert pull(HUB_ID, tmp_path / "models", endpoint=hub.url, token="hf_secret").is_dir()


def test_pull_of_a_model_without_safetensors_says_only_safetensors_are_supported(
    hub: Hub, tiny: Path, tmp_path: Path
) -> None:
    hub.publish(HUB_ID, tiny)
    del hub.redirects[f"/{HUB_ID}/resolve/main/model.safetensors"]
    hub.files[f"/{HUB_ID}/resolve/main/pytorch_model.bin"] = b"pickle"

    with pytest.raises(InvalidModel, match="Only safetensors models are supported"):
        pull(HUB_ID, tmp_path / "models", endpoint=hub.url)

    assert leftovers(tmp_path / "models") == []
    assert not any("pytorch_model.bin" in r for r in hub.requests)


def test_pull_of_a_non_classifier_stops_before_downloading_weights(hub: Hub, tiny: Path, tmp_path: Path) -> None:
    hub.publish(HUB_ID, tiny)
    config = json.loads((tiny / "config.json").read_text())
    hub.files[f"/{HUB_ID}/resolve/main/config.json"] = json.dumps({**config, "architectures": ["BertModel"]}).encode()

    with pytest.raises(InvalidModel, match="not a BertForSequenceClassification"):
        pull(HUB_ID, tmp_path / "models", endpoint=hub.url)

    assert hub.requests == [f"/{HUB_ID}/resolve/main/config.json"]
    assert leftovers(tmp_path / "models") == []


def test_pull_rejects_weights_that_do_not_match_the_announced_sha256(hub: Hub, tiny: Path, tmp_path: Path) -> None:
    hub.publish(HUB_ID, tiny)
    weights_url = f"/{HUB_ID}/resolve/main/model.safetensors"
    hub.headers[weights_url]["X-Linked-Etag"] = '"' + "0" * 64 + '"'

    with pytest.raises(DownloadError, match="sha256"):
        pull(HUB_ID, tmp_path / "models", endpoint=hub.url)

    assert leftovers(tmp_path / "models") == []


@pytest.mark.parametrize(
    "hub_id", ["", "tiny-ce", "org/", "/org/x", "org/x/y", "../x", "org/..", "org/a..b", ".org/x", "org/x?y=1", "o g/x"]
)
def test_pull_rejects_malformed_hub_ids_before_any_request(hub: Hub, tmp_path: Path, hub_id: str) -> None:
    with pytest.raises(ModelError, match="not a model id of the form org/name"):
        pull(hub_id, tmp_path / "models", endpoint=hub.url)

    assert hub.requests == []
    assert leftovers(tmp_path / "models") == []


@pytest.mark.parametrize(("revision", "endpoint"), [("../main", None), ("main", "ftp://hub"), ("main", "not a url")])
def test_pull_rejects_malformed_revisions_and_endpoints(
    hub: Hub, tmp_path: Path, revision: str, endpoint: str | None
) -> None:
    with pytest.raises(ModelError, match="is not a"):
        pull(HUB_ID, tmp_path / "models", endpoint=endpoint or hub.url, revision=revision)

    assert hub.requests == []


def test_pull_when_the_hub_is_unreachable_suggests_models_import(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    with pytest.raises(DownloadError, match=r"offline.*engram models import DIR"):
        pull(HUB_ID, tmp_path / "models", endpoint=f"http://127.0.0.1:{port}", timeout=5)

    assert leftovers(tmp_path / "models") == []


def test_safe_name_follows_the_hugging_face_cache_convention() -> None:
    assert safe_name("cross-encoder/ms-marco-MiniLM-L-6-v2") == "cross-encoder--ms-marco-MiniLM-L-6-v2"


# -- the CLI ---------------------------------------------------------------------------------


def cli(argv: list[str], models: Path, **kwargs: Any) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="engram")
    models_command.register(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    code = models_command.run(parser.parse_args(argv), models, out=out, err=err, **kwargs)
    return code, out.getvalue(), err.getvalue()


def test_cli_import_list_and_use(tmp_path: Path) -> None:
    models = tmp_path / "models"
    first = make_tiny_cross_encoder(tmp_path / "first", seed=1)
    second = make_tiny_cross_encoder(tmp_path / "second", seed=2)

    assert cli(["models", "list"], models)[1].splitlines()[-1].startswith("No reranker installed")
    code, out, _ = cli(["models", "import", str(first), "--name", "one", "--home", str(tmp_path)], models)
    assert code == 0
    assert "Installed one" in out
    assert cli(["models", "import", str(second)], models)[0] == 0

    code, out, _ = cli(["models", "list"], models)
    lines = out.split("Installed rerankers (* active when ENGRAM_RERANK_MODEL is empty):\n")[1].splitlines()
    assert code == 0
    assert [line.split("\t")[0] for line in lines] == ["* second", "  one"]
    assert f"import:{first.resolve()}" in lines[1]

    assert cli(["models", "use", "one"], models)[0] == 0
    assert find_reranker(models) == models / "rerankers" / "one"
    assert [m.name for m in list_installed(models) if m.active] == ["one"]


def test_cli_reports_errors_in_one_line_with_exit_code_1(tmp_path: Path) -> None:
    bad = make_tiny_cross_encoder(tmp_path / "bad")
    _wrong_architecture(bad)

    code, _, err = cli(["models", "import", str(bad)], tmp_path / "models")
    assert code == 1
    assert err.startswith("engram: ") and "BertForSequenceClassification" in err

    code, _, err = cli(["models", "use", "nothing"], tmp_path / "models")
    assert (code, "engram models list" in err) == (1, True)


def test_cli_pull_draws_a_progress_line_per_file(hub: Hub, tiny: Path, tmp_path: Path) -> None:
    hub.publish(HUB_ID, tiny)
    hub.token = "hf_x"

    code, out, err = cli(["models", "pull", HUB_ID], tmp_path / "models", endpoint=hub.url, token="hf_x")

    assert code == 0
    assert "org--tiny-ce" in out
    finished = [line.rsplit("\r", 1)[-1] for line in err.split("\n") if line]
    assert [line.split()[0] for line in finished][:3] == ["config.json", "tokenizer.json", "model.safetensors"]
    assert all("100%" in line for line in finished)


# -- progress bars ---------------------------------------------------------------------------


def test_progress_bar_redraws_one_line_and_ends_it_on_close() -> None:
    stream = io.StringIO()
    with ProgressBar(2048, "weights", stream=stream, width=10, min_interval=0, live=True) as bar:
        bar.update(512)
        bar.update(2048)

    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("weights [##........]  25% 512 B/2.0 KB")
    assert frames[-1].rstrip() == "weights [##########] 100% 2.0 KB/2.0 KB"
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1


def test_progress_bar_writes_only_its_final_line_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()  # a pipe or a log file: a carriage return would leave every frame in it
    with ProgressBar(2048, "weights", stream=stream, width=10, min_interval=0) as bar:
        for done in range(0, 2049, 256):
            bar.update(done)

    assert stream.getvalue() == "\rweights [##########] 100% 2.0 KB/2.0 KB\n"


def test_progress_bar_without_total_counts_items() -> None:
    stream = io.StringIO()
    bar = ProgressBar(None, "memories", unit="memories", stream=stream, min_interval=0)
    for _ in range(3):
        bar.advance()
    bar.close()
    bar.close()

    assert stream.getvalue().split("\r")[-1] == "memories 3 memories\n"


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 1023, 1536, 90 * 1024**2)] == ["0 B", "1023 B", "1.5 KB", "90.0 MB"]
