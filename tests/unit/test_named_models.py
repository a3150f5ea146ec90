"""Models by name: the documented list, settings that name them, pulls from a real local HTTP hub, verify, and the
data dir that keeps the embedder it started with."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.cli import models as models_command
from engram.config import Settings, SettingsError
from engram.models import catalog
from engram.models.catalog import CATALOG, EMBEDDER, EMBEDDER_FILES, NLI, RERANKER, CatalogModel
from engram.models.named import (
    RECORD_FILE,
    Hub,
    check_data_dir,
    classifier_dir,
    install_dir,
    open_embedder,
    pull_named,
    record_data_dir,
    vector_model_id,
    verify,
)
from engram.models.nli import load_nli
from engram.models.rerank import METADATA_FILE, OnnxReranker, find_reranker
from engram.models.store import DownloadError, InvalidModel, ModelError
from tests.helpers.hub import Hub as FakeHub
from tests.helpers.hub import hub_fixture  # noqa: F401  # the hub fixture
from tests.helpers.tiny_models import make_tiny_cross_encoder, make_tiny_embedder

EMBED = CatalogModel("tiny-embed", EMBEDDER, "org/tiny-embed", "MIT", 1, "a test model", dim=32, files=EMBEDDER_FILES)
RERANK = CatalogModel("tiny-rerank", RERANKER, "org/tiny-rerank", "MIT", 1, "a test model", labels=("relevance",))
TEST_CATALOG = (*CATALOG, EMBED, RERANK)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sources")
    return {"embed": make_tiny_embedder(root / "embed"), "rerank": make_tiny_cross_encoder(root / "rerank")}


def leftovers(models: Path) -> list[str]:
    return sorted(str(p.relative_to(models)) for p in models.rglob("*")) if models.exists() else []


# -- the list ------------------------------------------------------------------------------------


def test_the_list_names_each_model_once_with_what_it_produces_and_its_licence() -> None:
    assert len({m.name for m in CATALOG}) == len(CATALOG)
    assert {m.kind for m in CATALOG} <= set(catalog.KINDS)
    for model in CATALOG:
        assert model.licence and model.size_mb > 0 and "/" in model.repo
        assert (model.dim is not None) == (model.kind == EMBEDDER)
        assert set(model.sha256) <= set(model.files) and set(catalog.REQUIRED) <= set(model.files)
    default = catalog.find(catalog.DEFAULT_EMBEDDER, EMBEDDER)
    assert default is not None and default.wheel is not None and default.dim == 384
    assert Settings().embed_model == catalog.DEFAULT_EMBEDDER


def test_the_default_embedder_from_its_wheel_matches_every_pinned_digest(tmp_path: Path) -> None:
    default = catalog.find(catalog.DEFAULT_EMBEDDER, EMBEDDER)
    assert default is not None
    found = verify(default, tmp_path / "models")

    assert found.problems == ()
    assert found.checked == len(default.files) == len(default.sha256)


def test_settings_take_a_name_of_the_list_and_name_the_choices_otherwise() -> None:
    assert Settings.from_env({"ENGRAM_EMBED_MODEL": "bge-small-en"}).embed_model == "bge-small-en"
    assert Settings.from_env({"ENGRAM_RERANK_MODEL": "my-own.ce"}).rerank_model == "my-own.ce"
    with pytest.raises(SettingsError, match=r"ENGRAM_EMBED_MODEL must be minilm-l6, bge-small-en or bge-base-en"):
        Settings.from_env({"ENGRAM_EMBED_MODEL": "openai-large"})
    with pytest.raises(SettingsError, match=r"ENGRAM_RERANK_MODEL must be a model name \(ms-marco-minilm-l6, "):
        Settings.from_env({"ENGRAM_RERANK_MODEL": "cross-encoder/ms-marco-MiniLM-L-6-v2"})
    with pytest.raises(SettingsError, match=r"ENGRAM_NLI_MODEL must be a model name"):
        Settings.from_env({"ENGRAM_NLI_MODEL": "../x"})


# -- pull, verify, load --------------------------------------------------------------------------


def test_an_embedder_of_the_list_is_pulled_once_verified_and_loaded(
    hub: FakeHub, sources: dict[str, Path], tmp_path: Path
) -> None:
    hub.publish(EMBED.repo, sources["embed"])
    models = tmp_path / "models"

    path = pull_named(EMBED, models, hub=Hub(hub.url))

    assert path == install_dir(EMBED, models) == models / "embedders" / "tiny-embed"
    assert (path / "1_Pooling" / "config.json").is_file()
    meta = json.loads((path / METADATA_FILE).read_text())
    weights = hashlib.sha256((sources["embed"] / "model.safetensors").read_bytes()).hexdigest()
    assert (meta["catalog"], meta["model_id"], meta["files"]["model.safetensors"]) == (EMBED.name, EMBED.repo, weights)
    asked = len(hub.requests)
    assert pull_named(EMBED, models, hub=Hub(hub.url)) == path and len(hub.requests) == asked  # once
    assert verify(EMBED, models).problems == ()

    embedder = open_embedder("tiny-embed", models, precision="fp32", hub=Hub(hub.url), cat=TEST_CATALOG)
    vectors = embedder.embed(["the quick brown fox", "a lazy dog"])
    assert (embedder.model_id, embedder.dim, vectors.shape) == (EMBED.repo, 32, (2, 32))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vector_model_id("tiny-embed", "int8", TEST_CATALOG) == ("org/tiny-embed#int8", 32)
    assert len(hub.requests) == asked

    (path / "tokenizer.json").write_text("{}")
    (problem,) = verify(EMBED, models).problems
    assert problem.startswith("tokenizer.json does not have the sha256 ")


def test_a_file_that_differs_from_its_pin_stops_the_pull_and_leaves_nothing(
    hub: FakeHub, sources: dict[str, Path], tmp_path: Path
) -> None:
    hub.publish(EMBED.repo, sources["embed"])
    pinned = replace(EMBED, sha256={"tokenizer.json": "0" * 64})

    with pytest.raises(DownloadError, match=r"tokenizer.json has sha256 [0-9a-f]{64}, not the 0{64} pinned"):
        pull_named(pinned, tmp_path / "models", hub=Hub(hub.url))
    assert leftovers(tmp_path / "models") == []


def test_an_embedder_of_another_width_than_listed_is_refused(
    hub: FakeHub, sources: dict[str, Path], tmp_path: Path
) -> None:
    hub.publish(EMBED.repo, sources["embed"])

    with pytest.raises(InvalidModel, match=r"vectors of shape \(1, 32\), not \(1, 64\)"):
        pull_named(replace(EMBED, dim=64), tmp_path / "models", hub=Hub(hub.url))
    assert leftovers(tmp_path / "models") == []


def test_a_missing_required_file_names_the_repository(hub: FakeHub, sources: dict[str, Path], tmp_path: Path) -> None:
    hub.publish(EMBED.repo, sources["embed"])
    del hub.files[f"/{EMBED.repo}/resolve/main/tokenizer.json"]

    with pytest.raises(InvalidModel, match=r"org/tiny-embed at 'main' has no tokenizer\.json"):
        pull_named(EMBED, tmp_path / "models", hub=Hub(hub.url))


def test_a_reranker_setting_pulls_a_listed_model_or_takes_an_installed_one(
    hub: FakeHub, sources: dict[str, Path], tmp_path: Path
) -> None:
    hub.publish(RERANK.repo, sources["rerank"])
    models = tmp_path / "models"

    path = classifier_dir("tiny-rerank", RERANKER, models, hub=Hub(hub.url), cat=TEST_CATALOG)

    assert path == models / "rerankers" / "tiny-rerank" and find_reranker(models) == path
    assert OnnxReranker(path, models).model_id == RERANK.repo
    assert classifier_dir("tiny-rerank", RERANKER, models, cat=TEST_CATALOG) == path  # installed: no hub needed
    with pytest.raises(ModelError, match=r"ENGRAM_RERANK_MODEL='nope' is neither a reranker of the list \(ms-marco"):
        classifier_dir("nope", RERANKER, models, cat=TEST_CATALOG)


def test_an_nli_model_named_by_its_setting_is_loaded_and_an_unknown_name_is_refused(tmp_path: Path) -> None:
    models = tmp_path / "models"
    labels = {"id2label": {"0": "contradiction", "1": "entailment", "2": "neutral"}}
    make_tiny_cross_encoder(models / "nli" / "mine", config=labels, num_labels=3)

    model_dir = classifier_dir("mine", NLI, models)
    nli = load_nli(models, model_dir=model_dir)

    assert nli is not None and nli.infer([("a", "b")])[0].label in ("contradiction", "entailment", "neutral")
    with pytest.raises(ModelError, match=r"ENGRAM_NLI_MODEL='other' is neither an? nli of the list \(none listed\)"):
        classifier_dir("other", NLI, models)


# -- the data dir keeps its embedder ---------------------------------------------------------------


def test_a_new_data_dir_records_its_embedder_and_refuses_another(tmp_path: Path) -> None:
    home = tmp_path / "home"
    check_data_dir(home, "bge-small-en")  # a new data dir takes any: nothing is recorded until it loads
    assert not (home / RECORD_FILE).exists()
    record_data_dir(home, "minilm-l6")
    assert json.loads((home / RECORD_FILE).read_text()) == {
        "model": "minilm-l6",
        "repo": "sentence-transformers/all-MiniLM-L6-v2",
        "dim": 384,
    }
    check_data_dir(home, "minilm-l6")  # the same again

    with pytest.raises(ModelError) as refused:
        check_data_dir(home, "bge-base-en")
    message = str(refused.value)
    assert "holds vectors of the embedder minilm-l6" in message and "(BAAI/bge-base-en-v1.5, 768 dims)" in message
    assert "Set ENGRAM_EMBED_MODEL=minilm-l6" in message and "`engram import DIR`" in message


def test_a_data_dir_written_before_the_record_holds_the_default_embedders_vectors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "index").mkdir(parents=True)

    with pytest.raises(ModelError, match="holds vectors of the embedder minilm-l6"):
        check_data_dir(home, "bge-small-en")
    assert not (home / RECORD_FILE).exists()
    check_data_dir(home, "minilm-l6")
    record_data_dir(home, "minilm-l6")
    assert json.loads((home / RECORD_FILE).read_text())["model"] == "minilm-l6"


# -- the CLI ---------------------------------------------------------------------------------------


def cli(argv: list[str], models: Path, **kwargs: Any) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="engram")
    models_command.register(parser.add_subparsers(dest="command", required=True))
    out, err = io.StringIO(), io.StringIO()
    code = models_command.run(parser.parse_args(argv), models, out=out, err=err, cat=TEST_CATALOG, **kwargs)
    return code, out.getvalue(), err.getvalue()


def test_cli_lists_pulls_and_verifies_models_by_name(hub: FakeHub, sources: dict[str, Path], tmp_path: Path) -> None:
    hub.publish(EMBED.repo, sources["embed"])
    models = tmp_path / "models"
    selected = {EMBEDDER: "tiny-embed", RERANKER: "", NLI: ""}

    code, out, _ = cli(["models", "list"], models, selected=selected)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Models by name (ENGRAM_EMBED_MODEL")
    assert any(line.startswith("  embedder minilm-l6 ") and "384 dims" in line for line in lines)
    (tiny,) = [line for line in lines if "tiny-embed" in line]
    assert tiny.startswith("* embedder tiny-embed ") and tiny.endswith("not here: engram models pull tiny-embed")

    code, out, err = cli(["models", "pull", "tiny-embed"], models, endpoint=hub.url)
    assert code == 0, err
    assert out == f"tiny-embed (org/tiny-embed) is in {models / 'embedders' / 'tiny-embed'}. Choose it with " \
        "ENGRAM_EMBED_MODEL=tiny-embed.\n"  # fmt: skip
    assert "model.safetensors" in err  # a progress line per file
    listed = cli(["models", "list"], models)[1].splitlines()
    assert next(line for line in listed if "tiny-embed" in line).endswith("here")

    code, out, _ = cli(["models", "verify", "tiny-embed"], models)
    assert (code, out.split(":")[0]) == (0, "tiny-embed") and "files match their sha256" in out
    (models / "embedders" / "tiny-embed" / "config.json").write_text("{}")
    code, _, err = cli(["models", "verify"], models)
    assert code == 1 and err.startswith("engram: tiny-embed: config.json does not have the sha256")
    assert "engram models pull tiny-embed" in err


def test_cli_pull_of_an_unknown_name_lists_the_choices(tmp_path: Path) -> None:
    code, _, err = cli(["models", "pull", "e5-large"], tmp_path / "models")

    assert code == 1
    assert "'e5-large' is not a model of the list (embedders: minilm-l6, bge-small-en, bge-base-en or tiny-embed" in err
