"""The layout DESIGN.md asks for: the kernel never imports a service, nothing but the log adapter touches NATS, and
the gateway's operations and schemas know no transport, and its MCP and REST transports never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _kernel_files() -> list[Path]:
    return [p for p in (ROOT / "engram").rglob("*.py") if "v1" not in p.relative_to(ROOT / "engram").parts]


def test_the_kernel_never_imports_a_service() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(n for n in _imports(path) if n.startswith("engram.services"))
        for path in _kernel_files()
    }
    assert not {path: names for path, names in offenders.items() if names}


def test_only_the_log_adapter_and_the_nats_server_launcher_use_nats() -> None:
    allowed = {
        "engram/log/nats.py",
        "engram/log/workqueue.py",
        "engram/log/leases.py",
        "engram/log/jobstore.py",
        "engram/log/syncstore.py",
        "engram/log/kv.py",
        "engram/process/natsd.py",
    }
    files = [*_kernel_files(), *(ROOT / "services").rglob("*.py")]
    users = {
        str(path.relative_to(ROOT))
        for path in files
        if any(name == "nats" or name.startswith("nats.") for name in _imports(path))
    }
    assert users <= allowed, users - allowed


def test_services_are_imported_by_their_package_name_only() -> None:
    """`services.x` and `engram.services.x` are the same file loaded twice: two classes per error, two registries."""
    files = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "bench").rglob("*.py"), *_kernel_files()]
    offenders = {
        str(path.relative_to(ROOT)): sorted(n for n in _imports(path) if n == "services" or n.startswith("services."))
        for path in files
    }
    assert not {path: names for path, names in offenders.items() if names}


GATEWAY = ROOT / "services" / "gateway"
TRANSPORTS = ("fastapi", "starlette", "mcp")


def _uses(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(f"{package}.") for package in packages)


def _imported(path: Path) -> set[str]:
    """Every module a file imports, ``from package import module`` included (as ``package.module``)."""
    names = _imports(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_gateway_operations_and_schemas_import_no_transport() -> None:
    """operations/ serves REST and MCP alike, schemas/ publishes their shapes: neither knows FastAPI, Starlette, MCP."""
    files = [*(GATEWAY / "operations").rglob("*.py"), *(GATEWAY / "schemas").rglob("*.py")]
    assert files
    offenders = {
        str(path.relative_to(ROOT)): sorted(n for n in _imported(path) if _uses(n, TRANSPORTS)) for path in files
    }
    assert not {path: names for path, names in offenders.items() if names}


def test_the_gateway_mcp_and_rest_transports_never_import_each_other() -> None:
    """Two transports over the same operations: what both need lives in operations/ or schemas/."""
    for own, other in (("mcp", "rest"), ("rest", "mcp")):
        files = list((GATEWAY / own).rglob("*.py"))
        assert files
        forbidden = (f"engram.services.gateway.{other}",)
        offenders = {
            str(path.relative_to(ROOT)): sorted(n for n in _imported(path) if _uses(n, forbidden)) for path in files
        }
        assert not {path: names for path, names in offenders.items() if names}, f"{own}/ imports {other}/"
