"""The `engram` command: serve, edge, sync, mcp, run <service>, keys, import, status, models, the lifecycle."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import logging
import os
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from engram.config import Settings, SettingsError
from engram.process.ports import PortInUse
from engram.services.node.supervisor import SUPERVISED_FLAG

SERVICES = ("ingest", "search", "consolidation", "sync", "gateway")


T = TypeVar("T")
WAIT_NOTICE_SECONDS = 3.0  # a service still waiting for NATS after this long says so


def _parser() -> argparse.ArgumentParser:
    from engram import __version__

    parser = argparse.ArgumentParser(prog="engram", description="Engram: shared memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def home(p: argparse.ArgumentParser) -> None:
        p.add_argument("--home", help="data dir (ENGRAM_HOME, default ~/.engram)")

    serve = sub.add_parser("serve", help="run the embedded node: NATS, all services, MCP/REST gateway")
    home(serve)
    serve.add_argument("--host", help="gateway bind address (ENGRAM_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="gateway port (ENGRAM_PORT, default 8765; 0 picks one)")
    serve.add_argument("--idle-exit", action="store_true", help=argparse.SUPPRESS)  # set by `engram mcp`
    serve.add_argument("--quiet", action="store_true", help="do not print the connection banner")

    from engram.services.sync import cli as sync_cli

    sync_cli.add_parsers(sub, home)  # edge, sync
    for node_command in ("serve", "edge"):  # set by the node's supervisor for the node it starts
        sub.choices[node_command].add_argument(SUPERVISED_FLAG, help=argparse.SUPPRESS)

    mcp = sub.add_parser("mcp", help="MCP over stdio, using (or starting) the node of the data dir")
    home(mcp)

    run = sub.add_parser("run", help="run one service alone (cluster topology)")
    run.add_argument("service", choices=SERVICES)
    home(run)
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

    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key (printed once)")
    home(create)
    create.add_argument("--namespace", required=True)
    create.add_argument(
        "--agent",
        default="",
        help="the agent acting with it (name or name@device); without it the key is shared. A sync key names the "
        "agents that work on its device, comma-separated (robot,planner)",
    )
    create.add_argument("--device", default="", help="the device its callers run on, unless they send X-Engram-Device")
    create.add_argument("--team", default="", help="the team of its callers, unless they send X-Engram-Team")
    create.add_argument("--scopes", default="read,write", help="comma-separated: read, write, admin, sync")
    listing = keys_sub.add_parser("list", help="list keys (never their secrets)")
    home(listing)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    home(revoke)
    revoke.add_argument("key_id")

    importing = sub.add_parser(
        "import", help="bulk-import a JSON-lines file (one save_memory object per line) or a Markdown vault folder"
    )
    home(importing)
    importing.add_argument("file", help="the .jsonl file, or a folder of Markdown notes (as `engram export` writes)")
    importing.add_argument(
        "--url", help="gateway URL (default: the running node of --home, else http://127.0.0.1:8765)"
    )
    importing.add_argument("--restart", action="store_true", help="ignore saved progress and start at line 1")
    importing.add_argument("--chunk", type=int, default=1000, help="lines per request (default 1000)")

    exporting = sub.add_parser(
        "export", help="write every memory of your namespace to a folder: one Markdown file each, YAML frontmatter"
    )
    home(exporting)
    exporting.add_argument("dir", help="the folder (created if missing; files of the same memories are overwritten)")
    exporting.add_argument("--format", choices=("markdown",), default="markdown", help="the format (default: markdown)")
    exporting.add_argument("--include-secret", action="store_true", help="also write memories of sensitivity secret")
    exporting.add_argument(
        "--url", help="gateway URL (default: the running node of --home, else http://127.0.0.1:8765)"
    )

    from engram import models_cli

    models_cli.add_parser(sub)

    status = sub.add_parser("status", help="the node's readiness, index lag, counts, disk and sync")
    home(status)
    status.add_argument("--url", help="gateway URL (default: the running node of --home, else http://127.0.0.1:8765)")
    status.add_argument("--json", action="store_true", help="print the status as JSON (for scripts)")

    from engram import memory_cli

    memory_cli.add_parsers(sub)  # update, delete, supersede, history, at, stats, admin purge

    from engram import coordination_cli

    coordination_cli.add_parsers(sub)  # agents, teams, consolidate, handoffs

    from engram.packs import cli as packs_cli

    packs_cli.add_parsers(sub)  # packs list|install|init|lint|export

    sub.add_parser("version", help="print the version")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {
        "home": getattr(args, "home", None),
        "host": getattr(args, "host", None),
        "port": getattr(args, "port", None),
        "nats_url": getattr(args, "nats_url", None),
        "grpc_listen": getattr(args, "listen", None),
        "ingest_addr": getattr(args, "ingest_addr", None),
        "search_addr": getattr(args, "search_addr", None),
        "consolidation_addr": getattr(args, "consolidation_addr", None),
        "sync_addr": getattr(args, "sync_addr", None),
        "upstream": getattr(args, "upstream", None),
        "upstream_key": getattr(args, "key", None),
        "device": getattr(args, "device", None) if getattr(args, "command", "") == "edge" else None,
    }
    return Settings.from_env(**overrides)


def _logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except SettingsError as e:
        print(f"engram: {e}", file=sys.stderr)
        return 2
    try:
        return _dispatch(args, settings, argv)
    except KeyboardInterrupt:
        return 130
    except PortInUse as e:  # a usage problem like a bad flag: exit 2, one line
        print(f"engram: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the top of the process: one clear line, details in the log
        from engram.errors import EngramError
        from engram.process.launcher import NodeStartError
        from engram.process.natsd import NatsServerError
        from engram.services.node.owner import NodeRunningError

        expected = (EngramError, NodeRunningError, NodeStartError, NatsServerError, SettingsError, ValueError)
        if isinstance(e, expected):
            print(f"engram: {e}", file=sys.stderr)
            return 1
        raise


def _dispatch(args: argparse.Namespace, settings: Settings, argv: Sequence[str]) -> int:
    if args.command == "version":
        from engram.services.node.node import VERSION

        print(VERSION)
        return 0
    if args.command == "keys":
        return _keys(args, settings)
    if args.command == "import":
        return _import(args, settings)
    if args.command == "export":
        from pathlib import Path

        from engram import vault

        url = _node_url(args.url, settings)
        return vault.run_export(Path(args.dir), url, api_key=settings.api_key, include_secret=args.include_secret)
    if args.command == "status":
        from engram import status_cli

        return status_cli.run(_node_url(args.url, settings), api_key=settings.api_key, as_json=args.json)
    from engram import memory_cli

    if args.command in memory_cli.COMMANDS:
        return memory_cli.run(args, _node_url(args.url, settings), api_key=settings.api_key)
    from engram import coordination_cli

    if args.command in coordination_cli.COMMANDS:
        return coordination_cli.run(args, _node_url(args.url, settings), api_key=settings.api_key)
    from engram.packs import cli as packs_cli

    if args.command in packs_cli.COMMANDS:
        return packs_cli.run(args, _node_url(getattr(args, "url", None), settings), api_key=settings.api_key)
    if args.command == "sync":
        from engram.services.sync import cli as sync_cli

        return sync_cli.run(args, settings)
    if args.command == "models":
        from engram import models_cli

        return models_cli.run(args, settings.model_cache_dir, endpoint=settings.hf_endpoint, token=settings.hf_token)
    _logging(settings)
    if args.command in ("serve", "edge"):
        return _node(args, settings, argv)
    # A native crash (e.g. SIGBUS from a memory-mapped file on a full disk) still leaves a line in the log.
    faulthandler.enable()
    if args.command == "mcp":
        asyncio.run(_mcp(settings))
        return 0
    from engram.process.metrics import serving

    with serving(settings.metrics_listen):  # GET /metrics on ENGRAM_METRICS_LISTEN while the service runs
        asyncio.run(_run_service(args.service, settings))
    return 0


def _node(args: argparse.Namespace, settings: Settings, argv: Sequence[str]) -> int:
    """`engram serve` and `engram edge`: the supervisor (engram.services.node.supervisor), which starts the node
    itself as a child process, given the data dir's lock and the gateway's socket."""
    if args.command == "edge":
        from engram.services.sync.cli import edge_settings

        settings = edge_settings(settings)
    if args.supervised is None:
        from engram.services.node.supervisor import supervise

        supervise(argv, home=settings.home, host=settings.host, port=settings.port, log_level=settings.log_level)
    from engram.services.node.node import run_node
    from engram.services.node.supervisor import Inherited

    faulthandler.enable()  # a native crash still leaves its stack in the log
    idle_exit = bool(getattr(args, "idle_exit", False))
    inherited = Inherited.parse(args.supervised)
    asyncio.run(run_node(settings, idle_exit=idle_exit, announce=not args.quiet, inherited=inherited))
    return 0


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    from engram.keys import KeyStore

    store = KeyStore(settings.keys_path)
    if args.keys_command == "create":
        scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
        record, secret = store.create(
            namespace=args.namespace, agent=args.agent, device=args.device, team=args.team, scopes=scopes
        )
        print(secret)
        agent = (
            f"agent '{record.agent}'"
            if record.agent
            else "shared (each caller names itself: X-Engram-Agent-ID, ?agent_id= or its MCP client name)"
        )
        fixed = "".join(
            f", {label} '{value}'" for label, value in (("device", record.device), ("team", record.team)) if value
        )
        print(
            f"Key {record.key_id} for namespace '{record.namespace}', {agent}{fixed}, "
            f"scopes {','.join(sorted(record.scopes))}. It is shown only now: store it safely.",
            file=sys.stderr,
        )
        return 0
    if args.keys_command == "list":
        records = store.list()
        if not records:
            print(
                "no keys yet; create one with engram keys create --namespace NAMESPACE [--agent AGENT] "
                "[--device DEVICE] [--team TEAM] [--scopes read,write]",
                file=sys.stderr,
            )
        for record in records:
            # Tab-separated; the device and team columns came later, so they go last. "-": the key leaves it open.
            granted = ",".join(sorted(record.scopes))
            columns = (record.key_id, record.namespace, record.agent, granted, record.device, record.team)
            print("\t".join(value or "-" for value in columns))
        return 0
    if store.revoke(args.key_id):
        print(f"revoked {args.key_id}")
        return 0
    print(f"engram: no key with id {args.key_id}", file=sys.stderr)
    return 1


def _import(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    import httpx

    from engram.importer import ImportFailed, print_summary, run_import

    source = Path(args.file)
    if source.is_dir():  # a Markdown vault (`engram export --format markdown DIR`)
        from engram import vault

        return vault.run_import(source, _node_url(args.url, settings), api_key=settings.api_key)
    if not source.is_file():
        print(f"engram: no such file: {source}", file=sys.stderr)
        return 2
    url = _node_url(args.url, settings)
    try:
        report = run_import(source, url, api_key=settings.api_key, restart=args.restart, chunk_lines=args.chunk)
    except ImportFailed as e:
        print_summary(e.report)
        print(f"engram: {e}", file=sys.stderr)
        return 1
    except httpx.TransportError as e:
        print(f"engram: cannot reach Engram at {url}: {e}. Is the node running (engram serve)?", file=sys.stderr)
        return 1
    print_summary(report)
    return 0 if not report.rejected else 3


def _node_url(given: str | None, settings: Settings) -> str:
    """The gateway to talk to: --url, else the running node of the data dir, else the default port."""
    if given:
        return given
    from engram.process.nodeinfo import read_node_info

    info = read_node_info(settings.home)
    return info.http_url if info else f"http://127.0.0.1:{settings.port}"


async def _mcp(settings: Settings) -> None:
    from engram.process.launcher import attached, find_or_start
    from engram.services.gateway.backend import Backend
    from engram.services.gateway.mcp.stdio import serve_stdio

    info = await find_or_start(settings.home)
    if not info.dev:
        settings = settings.replace(dev_mode=False)  # the node's policy holds for its stdio clients too
    async with attached(info, client=f"engram mcp (pid {os.getpid()})"):
        backend = Backend(
            ingest_addr=info.grpc_address, search_addr=info.grpc_address, consolidation_addr=info.grpc_address
        )
        try:
            await serve_stdio(settings, backend)
        finally:
            await backend.close()


async def _run_service(name: str, settings: Settings) -> None:
    from engram.services.node.node import install_stop_signals

    stop = asyncio.Event()
    install_stop_signals(stop)
    if name == "gateway":
        await _run_gateway(settings, stop)
        return
    from importlib import import_module

    from engram.process.runtime import Resources

    module = import_module(f"engram.services.{name}.server")
    resources = Resources(settings)
    running = await _until_stopped(module.build_server(settings, resources), stop, name, settings)
    if running is None:
        await resources.close()
        return
    print(f"engram {name} ready at {running.address}", flush=True)
    try:
        await stop.wait()
    finally:
        await running.stop(grace=1.0)
        await resources.close()


async def _until_stopped(
    starting: Coroutine[Any, Any, T], stop: asyncio.Event, name: str, settings: Settings
) -> T | None:
    """What ``starting`` returns, or None when the process is asked to stop first (Ctrl-C, SIGTERM): a service
    waits for NATS as long as it takes to answer (its pods may start first), saying so, and stops while it waits."""
    task = asyncio.ensure_future(starting)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({task, stopping}, timeout=WAIT_NOTICE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            print(f"engram {name}: waiting for NATS at {settings.nats_url} to answer (Ctrl-C to stop)",
                  file=sys.stderr, flush=True)  # fmt: skip
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None
    finally:
        stopping.cancel()


async def _run_gateway(settings: Settings, stop: asyncio.Event) -> None:
    from engram.keys import KeyStore
    from engram.services.gateway.server import GatewayDeps, build_server

    if not settings.ingest_addr or not settings.search_addr:
        raise SettingsError(
            "The gateway needs --ingest-addr and --search-addr (ENGRAM_INGEST_ADDR, ENGRAM_SEARCH_ADDR)."
        )
    from engram.process.runtime import Resources

    resources = Resources(settings)
    try:
        # Live events (SSE, MCP resource updates) follow the log; without NATS the gateway serves everything else.
        event_log = await _until_stopped(resources.log(), stop, "gateway", settings) if settings.nats_url else None
        if settings.nats_url and event_log is None:
            return
        deps = GatewayDeps(
            settings.ingest_addr, settings.search_addr, KeyStore(settings.keys_path),
            consolidation_addr=settings.consolidation_addr, sync_addr=settings.sync_addr, event_log=event_log,
            replicas=True,
        )  # fmt: skip
        gateway = await build_server(settings, deps)
        print(f"engram gateway ready at {gateway.url} (MCP at {gateway.url}/mcp)", flush=True)
        try:
            await stop.wait()
        finally:
            await gateway.stop()
            await gateway.close()
    finally:
        await resources.close()


if __name__ == "__main__":
    sys.exit(main())
