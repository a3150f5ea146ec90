"""The optional NLI stage of consolidation (engram.models.nli, issue 25 point 4) with a tiny three-label BERT
cross-encoder built by the test (tests/helpers/tiny_models.py), installed by the model store and run through ONNX:
it lands under nli/ (never as the reranker), and on a real embedded node it confirms or rejects the contradictions
the rules find and vetoes a merge it reads as a contradiction."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from engram.grpc.clients import IngestClient, SearchClient
from engram.model import Caller, MemoryInput, SearchFilter
from engram.models.nli import OnnxNli, find_nli, load_nli
from engram.models.rerank import find_reranker
from engram.models.store import import_dir
from engram.services.consolidation.jobs import Progress
from engram.services.consolidation.maintenance import Maintenance
from tests.conftest import NodeHandle, start_node
from tests.helpers.tiny_models import make_tiny_cross_encoder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LABELS = ("contradiction", "entailment", "neutral")


def tiny_nli(path: Path, answer: str) -> Path:
    """A tiny NLI model whose classifier always answers ``answer`` (zero weights, a bias on that label)."""
    config = {"id2label": dict(enumerate(LABELS)), "label2id": {name: i for i, name in enumerate(LABELS)}}
    make_tiny_cross_encoder(path, num_labels=3, config=config)
    weights = load_file(str(path / "model.safetensors"))
    weights["classifier.weight"] = np.zeros_like(weights["classifier.weight"])
    weights["classifier.bias"] = np.array([8.0 if name == answer else 0.0 for name in LABELS], dtype=np.float32)
    save_file(weights, str(path / "model.safetensors"))
    return path


def test_an_nli_model_is_installed_beside_the_rerankers_and_reads_pairs_as_three_probabilities(tmp_path: Path) -> None:
    models = tmp_path / "models"
    installed = import_dir(tiny_nli(tmp_path / "nli-tiny", "entailment"), models)
    assert installed.parent.name == "nli" and find_nli(models) == installed
    assert find_reranker(models) is None, "an NLI model never becomes the search reranker"
    model = load_nli(models)
    assert isinstance(model, OnnxNli) and model.model_id == "nli-tiny"
    (read,) = model.infer([("The API listens on port 80.", "The API listens on port 90.")])
    assert read.label == "entailment"
    assert read.contradiction + read.entailment + read.neutral == pytest.approx(1.0)


def test_no_nli_model_installed_means_none_and_consolidation_runs_on_its_rules(tmp_path: Path) -> None:
    assert load_nli(tmp_path / "empty") is None


# -- on a real node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("nli"), model_cache, ENGRAM_CONSOLIDATION_INTERVAL_SECONDS="0")
    yield handle
    assert handle.stop() == 0


@pytest.fixture
async def clients(node: NodeHandle) -> AsyncIterator[tuple[SearchClient, IngestClient]]:
    search, ingest = SearchClient(node.grpc_address), IngestClient(node.grpc_address)
    yield search, ingest
    await search.close()
    await ingest.close()


async def _namespace(clients: tuple[SearchClient, IngestClient], *contents: str) -> str:
    search, ingest = clients
    ns = f"ns{uuid.uuid4().hex[:10]}"
    me = Caller(ns, "alice", source="alice", scopes=frozenset({"read", "write"}))
    for content in contents:
        await ingest.save(me, MemoryInput(content=content, topics=["api"]))
    seq = (await search.stats()).log_last_seq
    await search.list(me, limit=1, flt=SearchFilter(), min_seq=seq)
    return ns


async def test_the_nli_model_confirms_a_contradiction_and_names_itself_in_the_rule(
    clients: tuple[SearchClient, IngestClient], tmp_path: Path
) -> None:
    ns = await _namespace(clients, "The billing API listens on port 8080.", "The billing API listens on port 9090.")
    nli = OnnxNli(tiny_nli(tmp_path / "says-no", "contradiction"), tmp_path / "onnx")
    maintenance = Maintenance(*clients, nli=nli)
    summary, result = await maintenance.run_contradictions(ns, Progress())
    assert (result["flagged"], result["rejected_by_judge"]) == (1, 0), summary
    (flag,) = await maintenance.list_contradictions(Caller(ns, "x", scopes=frozenset({"read"})), topics=[], limit=5)
    assert flag.rule == "value+nli:says-no" and "confirmed by says-no" in flag.why


async def test_the_nli_model_rejects_a_candidate_it_reads_as_entailed_unless_the_judge_is_off(
    clients: tuple[SearchClient, IngestClient], tmp_path: Path
) -> None:
    ns = await _namespace(clients, "The search API listens on port 8080.", "The search API listens on port 9090.")
    maintenance = Maintenance(*clients, nli=OnnxNli(tiny_nli(tmp_path / "says-same", "entailment"), tmp_path / "o"))
    summary, result = await maintenance.run_contradictions(ns, Progress())
    assert (result["flagged"], result["rejected_by_judge"]) == (0, 1), summary
    _, unjudged = await maintenance.run_contradictions(ns, Progress(), confirm=False)
    assert unjudged["flagged"] == 1, "the rules alone flag it"


async def test_a_merge_the_nli_model_reads_as_a_contradiction_is_vetoed(
    clients: tuple[SearchClient, IngestClient], tmp_path: Path
) -> None:
    ns = await _namespace(clients, "The staging database is Postgres 16.", "Staging DB is Postgres 16.")
    vetoing = Maintenance(*clients, nli=OnnxNli(tiny_nli(tmp_path / "veto", "contradiction"), tmp_path / "o"))
    _, result = await vetoing.run_dedupe(ns, Progress())
    assert (result["merged"], result["vetoed_by_nli"]) == (0, 1)
    agreeing = Maintenance(*clients, nli=OnnxNli(tiny_nli(tmp_path / "agree", "entailment"), tmp_path / "o"))
    _, result = await agreeing.run_dedupe(ns, Progress())
    assert (result["merged"], result["vetoed_by_nli"]) == (1, 0)
