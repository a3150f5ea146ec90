"""The committed stubs in engram/v1 are exactly what protoc generates from protos/ (run `make proto`)."""

from __future__ import annotations

from pathlib import Path

from engram.grpc.protogen import ROOT, generate


def test_committed_stubs_match_the_protos(tmp_path: Path) -> None:
    generated = generate(tmp_path)
    assert generated, "protoc produced nothing"
    for path in generated:
        committed = ROOT / "engram" / "v1" / path.name
        assert committed.exists(), f"{path.name} is not committed: run `make proto`"
        assert committed.read_text() == path.read_text(), f"{path.name} drifted from protos/: run `make proto`"
    committed_names = {p.name for p in (ROOT / "engram" / "v1").glob("*_pb2*.py*")}
    assert committed_names == {p.name for p in generated}, "stale stubs in engram/v1"
