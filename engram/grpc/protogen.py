"""Generates the gRPC stubs in engram/v1 from protos/engram/v1 (run by `make proto`; a test checks for drift)."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "protos"


def generate(out_dir: Path) -> list[Path]:
    """Runs protoc for every .proto under protos/ into out_dir; returns the generated files."""
    from grpc_tools import protoc  # dev dependency: only needed to regenerate

    sources = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    include = str(resources.files("grpc_tools") / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *sources,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed for {sources}")
    return sorted(p for p in (out_dir / "engram" / "v1").iterdir() if p.suffix in {".py", ".pyi"})


def main() -> int:
    generated = generate(ROOT)
    print(f"generated {len(generated)} files in engram/v1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
