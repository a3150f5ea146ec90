"""`engram serve|edge|mcp|run|status`: the node and its services (started by engram.services.node), and the
node's status for people (text) and scripts (--json)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import IO, Any

from engram import plural
from engram.cli.common import URL_HELP, add_home, no_node, node_url, sub
from engram.config import MCP_TOOL_PROFILES, Settings
from engram.progress import format_bytes
from engram.services.node import SERVICES, SUPERVISED_FLAG

EXIT_READY = 0
EXIT_NOT_READY = 1
EXIT_UNREACHABLE = 2


def register(subparsers: Any) -> None:
    """Registers the node's commands on the ``engram`` sub-command parsers."""
    serve = add_home(sub(subparsers, "serve", "run the embedded node: NATS, all services, MCP/REST gateway"))
    serve.add_argument("--host", help="gateway bind address (ENGRAM_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="gateway port (ENGRAM_PORT, default 8765; 0 picks one)")
    serve.add_argument("--idle-exit", action="store_true", help=argparse.SUPPRESS)  # set by `engram mcp`
    serve.add_argument("--quiet", action="store_true", help="do not print the connection banner")
    serve.add_argument(SUPERVISED_FLAG, help=argparse.SUPPRESS)  # set by the node's supervisor for the node it starts
    serve.set_defaults(func=_serve)

    edge = add_home(
        subparsers.add_parser(
            "edge", help="run an edge node: the embedded node, syncing with a cluster whenever it can reach it"
        )
    )
    edge.add_argument("--upstream", help="the cluster gateway's URL, e.g. https://engram.example.com (ENGRAM_UPSTREAM)")
    edge.add_argument("--key", help="the device's API key on the cluster, scoped sync (ENGRAM_UPSTREAM_KEY)")
    edge.add_argument("--device", help="this device's name (ENGRAM_DEVICE, default the host name)")
    edge.add_argument("--host", help="local gateway bind address (ENGRAM_HOST, default 127.0.0.1)")
    edge.add_argument("--port", type=int, help="local gateway port (ENGRAM_PORT, default 8765; 0 picks one)")
    edge.add_argument("--quiet", action="store_true", help="do not print the connection banner")
    edge.add_argument(SUPERVISED_FLAG, help=argparse.SUPPRESS)
    edge.set_defaults(func=_edge)

    mcp = add_home(sub(subparsers, "mcp", "MCP over stdio, using (or starting) the node of the data dir"))
    mcp.add_argument(
        "--tools", choices=MCP_TOOL_PROFILES,
        help="the tools to list: core (the everyday ones, under 20 KB) or full (every tool); default "
        "ENGRAM_MCP_TOOLS, else core",
    )  # fmt: skip
    mcp.set_defaults(func=_mcp)

    run = subparsers.add_parser("run", help="run one service alone (cluster topology)")
    run.add_argument("service", choices=SERVICES)
    add_home(run)
    run.add_argument("--nats-url", help="NATS address (ENGRAM_NATS_URL)")
    run.add_argument("--listen", help="gRPC listen address host:port (ENGRAM_GRPC_LISTEN)")
    run.add_argument("--ingest-addr", help="gateway: ingest service address (ENGRAM_INGEST_ADDR)")
    run.add_argument(
        "--search-addr", help="gateway, ingest, consolidation: search service address (ENGRAM_SEARCH_ADDR)"
    )
    run.add_argument("--consolidation-addr", help="gateway: consolidation service address (ENGRAM_CONSOLIDATION_ADDR)")
    run.add_argument("--sync-addr", help="gateway: sync service address, for edge devices (ENGRAM_SYNC_ADDR)")
    run.add_argument("--host", help="gateway: HTTP bind address (ENGRAM_HOST)")
    run.add_argument("--port", type=int, help="gateway: HTTP port (ENGRAM_PORT)")
    run.set_defaults(func=_run)

    status = add_home(sub(subparsers, "status", "the node's readiness, index lag, counts, disk and sync"))
    status.add_argument("--url", help=URL_HELP)
    status.add_argument("--json", action="store_true", help="print the status as JSON (for scripts)")
    status.set_defaults(func=_status)


def _logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if logging.getLogger().level > logging.DEBUG:
        # httpx logs every request at INFO: an edge node's pull every 5 s alone would be 17,000 lines a day. The
        # sync worker says what moved (INFO) and what failed (WARNING) itself.
        logging.getLogger("httpx").setLevel(logging.WARNING)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """`engram serve`: the supervisor (engram.services.node.supervisor), which starts the node itself as a child
    process, given the data dir's lock and the gateway's socket; in that child, the node."""
    _logging(settings)
    if args.supervised is None:
        from engram.services.node.supervisor import supervise

        supervise(args.argv, home=settings.home, host=settings.host, port=settings.port, log_level=settings.log_level)
    import asyncio
    import faulthandler

    from engram.services.node.node import run_node
    from engram.services.node.supervisor import Inherited

    faulthandler.enable()  # a native crash still leaves its stack in the log
    inherited = Inherited.parse(args.supervised)
    idle_exit = bool(getattr(args, "idle_exit", False))
    asyncio.run(run_node(settings, idle_exit=idle_exit, announce=not args.quiet, inherited=inherited))
    return 0


def _edge(args: argparse.Namespace, settings: Settings) -> int:
    """`engram edge`: the node, with the edge profile and its sync worker."""
    from engram.services.node.edge import edge_settings

    return _serve(args, edge_settings(settings))


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from engram.services.node.stdio import run_stdio

    run_stdio(settings, before_serving=lambda: _logging(settings))
    return 0


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from engram.services.node.standalone import run_service

    _logging(settings)
    run_service(args.service, settings)
    return 0


# --- engram status ------------------------------------------------------------------------------------------


def _status(args: argparse.Namespace, settings: Settings) -> int:
    return status(node_url(args.url, settings), api_key=settings.api_key, as_json=args.json)


def status(base_url: str, *, api_key: str | None, as_json: bool, out: IO[str] | None = None) -> int:
    """Prints the node's status; exit code 0 ready, 1 not ready, 2 unreachable or refused."""
    import httpx  # here, not at the top: every `engram` command builds the parsers that import this module

    out = out or sys.stdout
    try:
        answer = fetch_status(base_url, api_key=api_key)
    except httpx.HTTPError as e:
        print(no_node(base_url, e), file=sys.stderr)
        return EXIT_UNREACHABLE
    except RuntimeError as e:
        print(f"engram: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(json.dumps(answer, indent=2) if as_json else render_status(answer, base_url), file=out)
    return EXIT_READY if answer["ready"] else EXIT_NOT_READY


def fetch_status(base_url: str, *, api_key: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """GET /v1/status; raises httpx.HTTPError when the node cannot be reached, RuntimeError when it refuses."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(f"{base_url.rstrip('/')}/v1/status", headers=headers, timeout=timeout)
    if response.status_code != 200:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise RuntimeError(f"the node at {base_url} answered {response.status_code}: {detail}")
    result: dict[str, Any] = response.json()
    return result


def render_status(status: dict[str, Any], url: str) -> str:
    """The human-readable form: one line per aspect, problems last with what to do."""
    node = status["node"]
    state = "ready" if status["ready"] else "NOT READY"
    if status["ready"] and status.get("problems"):
        state = "ready, degraded"  # problems that stop nothing (e.g. log entries the index set aside)
    uptime = _duration(node["uptime_seconds"]) if node.get("uptime_seconds") is not None else "?"
    lines = [f"Engram {node['version']} at {url}: {state} (pid {node['pid']}, up {uptime})"]
    services = " · ".join(f"{name} {state}" for name, state in status["services"].items())
    lines.append(f"  services  {services or 'none answer'}")
    index = status.get("index")
    if index:
        lines.append(
            f"  index     {index['applied_seq']:,} of {index['log_last_seq']:,} log entries applied "
            f"(lag {index['lag']:,}) · {plural.memories(index['memories'], 'active')} in your namespace"
        )
        rerank = index.get("reranker_model") or "off"
        lines.append(f"  models    embedding {index['embedding_model']} · rerank {rerank}")
        lines += _quarantine_lines(index)
    else:
        lines.append("  index     unknown (the search service does not answer)")
    disk = status.get("disk")
    if disk:
        lines.append(
            f"  disk      {format_bytes(disk['free_bytes'])} free in {disk['path']} "
            f"(writes stop below {format_bytes(disk['reserve_bytes'])})"
        )
    lines.append(f"  sync      {status['sync']['state']}")
    lines += _caller_lines(status.get("caller"))
    problems = status.get("problems") or []
    if problems:
        lines.append("  problems")
        lines.extend(f"    - {p['condition']}: {p['detail']}" for p in problems)
    return "\n".join(lines)


def _quarantine_lines(index: dict[str, Any]) -> list[str]:
    """Log entries the index set aside: how many, and the newest the caller may see with its error."""
    count = index.get("quarantined") or 0
    if not count:
        return []
    line = f"  quarantine {plural.counted(count, 'log entry', 'log entries')} set aside (the index serves the rest)"
    newest = index.get("quarantine_newest")
    if newest:
        line += f" · newest: seq {newest['seq']} in {newest['namespace']} ({newest['event']}): {newest['error']}"
    return [line, "             see them with `engram index quarantine list` (admin key)"]


def _caller_lines(caller: dict[str, Any] | None) -> list[str]:
    """Who the status was asked as, and (dev mode) the namespaces holding memories this caller does not see."""
    if not caller:
        return []
    anonymous = " (dev mode, no key)" if caller.get("dev") else ""
    lines = [f"  you       {caller['identity']} in namespace {caller['namespace']}{anonymous}"]
    others = caller.get("other_namespaces") or {}
    if others:
        held = " · ".join(f"{ns} {plural.memories(n)}" for ns, n in others.items())
        first = next(iter(others))
        lines.append(
            f"  elsewhere {held}: not shown here, you read namespace {caller['namespace']}. To see them, create a "
            f"key of that namespace (`engram keys create --namespace {first} --agent you`) and set ENGRAM_API_KEY "
            "to it (the console asks for it at sign-in)"
        )
    return lines


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"
