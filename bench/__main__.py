"""`python -m bench`: parse the command line, run the benchmark, print the table, write the JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.background import DEFAULT_SIZES as DEFAULT_BACKGROUND_SIZES
from bench.console import DEFAULT_CONSOLE_LOADS, DEFAULT_CONSOLE_SIZE
from bench.consolidation import DEFAULT_CONCURRENCY as DEFAULT_CONSOLIDATION_CONCURRENCY
from bench.consolidation import DEFAULT_DATA as DEFAULT_CONSOLIDATION_DATA
from bench.datasets import CONTEXT_MODES, DEFAULT_CONTEXT_MODE, SPEED_CORPORA
from bench.events import DEFAULT_EVENT_SAVES, DEFAULT_SLOW_CLIENTS
from bench.facts import DEFAULT_FACTS
from bench.hooks import DEFAULT_DATA as DEFAULT_HOOKS_DATA
from bench.report import table
from bench.run import DEFAULT_BEIR, DEFAULT_CHUNK, DEFAULT_LOCOMO, DEFAULT_MODEL_CACHE, BenchConfig, run
from bench.speed import (
    DEFAULT_GIVEN_BASE,
    DEFAULT_SAVES,
    DEFAULT_SEARCHES,
    DEFAULT_SIZES,
    DEFAULT_UPDATES,
    DEFAULT_WARMUP,
)
from bench.sync import DEFAULT_OFFLINE_MUTATIONS


def parse_args(argv: list[str] | None = None) -> BenchConfig:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure Engram's retrieval quality and speed against a real node, in one run.",
    )
    parser.add_argument(
        "--quality",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="LoCoMo recall@k and BEIR nDCG@10 per retrieval mode (default on)",
    )
    parser.add_argument(
        "--speed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="import rate, search/save latency and RSS at each size (default on)",
    )
    parser.add_argument(
        "--events",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="SSE delivery latency (save ack -> event) and memory per slow SSE client (default on)",
    )
    parser.add_argument(
        "--sync",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="edge sync: time to converge --offline-mutations made offline; the speed run adds a new device's "
        "backfill at its largest size (default on)",
    )
    parser.add_argument(
        "--edge",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="edge footprint: an offline `engram edge` at each size: RSS (node, nats-server), search latency, "
        "start-up time with its index (default on)",
    )
    parser.add_argument(
        "--facts",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the discrete-facts dev set (issue 24): agents' unrelated saves through MCP, then top-1, recall@5 and "
        "MRR per query kind on its tune and untouched halves (default on)",
    )
    parser.add_argument(
        "--facts-data", type=Path, default=DEFAULT_FACTS,
        help=f"the dev set's directory (default {DEFAULT_FACTS})",
    )  # fmt: skip
    parser.add_argument(
        "--consolidation",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="consolidation (issues 25, 36): the contradiction and dedupe jobs on labelled pairs, each set in one "
        "namespace among other projects' memories; precision and recall per split (tune, untouched), per kind and on "
        "tests/data (default on)",
    )
    parser.add_argument(
        "--consolidation-data", type=Path, default=DEFAULT_CONSOLIDATION_DATA,
        help=f"the labelled pairs' directory (default {DEFAULT_CONSOLIDATION_DATA})",
    )  # fmt: skip
    parser.add_argument(
        "--consolidation-per-pair",
        action="store_true",
        help="diagnostic: each labelled pair in a namespace of its own with nothing around it (issue 25's mode); by "
        "default each set runs in one namespace among --background-sizes other memories (issue 36)",
    )
    parser.add_argument(
        "--background-sizes", type=_sizes, default=DEFAULT_BACKGROUND_SIZES,
        help="memories of other projects and agents around the facts set and the consolidation pairs, one shared "
        f"namespace per size (default {','.join(map(str, DEFAULT_BACKGROUND_SIZES))}; --quick: the first)",
    )  # fmt: skip
    parser.add_argument(
        "--consolidation-concurrency", type=_positive, default=DEFAULT_CONSOLIDATION_CONCURRENCY,
        help=f"pairs asked at once (default {DEFAULT_CONSOLIDATION_CONCURRENCY})",
    )  # fmt: skip
    parser.add_argument(
        "--hooks",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="agents' hooks (issue 26): labelled recorded sessions replayed through the hook command against a "
        "fresh node; capture precision and recall, duplicates, secrets leaked, questions answered at rank 1, "
        "session-start tokens and hook latency per event, per split (default on)",
    )
    parser.add_argument(
        "--hooks-data", type=Path, default=DEFAULT_HOOKS_DATA,
        help=f"the labelled sessions' directory (default {DEFAULT_HOOKS_DATA})",
    )  # fmt: skip
    parser.add_argument(
        "--console",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="the web console's first paint in headless chromium (/usr/bin/chromium): first-contentful-paint and "
        "first memory rows of /console#/memories on a node holding --console-size memories (default off)",
    )
    parser.add_argument(
        "--console-size", type=_positive, default=DEFAULT_CONSOLE_SIZE,
        help=f"memories of the console's node (default {DEFAULT_CONSOLE_SIZE}; --quick: the quick size)",
    )  # fmt: skip
    parser.add_argument(
        "--console-loads", type=_positive, default=DEFAULT_CONSOLE_LOADS,
        help=f"timed page loads, each in a fresh browser context; the median is reported (default "
        f"{DEFAULT_CONSOLE_LOADS})",
    )  # fmt: skip
    parser.add_argument(
        "--offline-mutations", type=_positive, default=DEFAULT_OFFLINE_MUTATIONS,
        help="mutations an edge node makes offline before its cluster starts (default 10000)",
    )  # fmt: skip
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=DEFAULT_SIZES,
        help="memory counts for the speed run, e.g. 10000,50000 (the default)",
    )
    parser.add_argument(
        "--given-vectors", action="store_true",
        help="the speed run's import lines carry dense vectors the bench made from --given-base distinct texts "
        "(admin-only import field), so sizes such as 1000000 load without embedding each memory (bench/given.py)",
    )  # fmt: skip
    parser.add_argument(
        "--given-base", type=_positive, default=DEFAULT_GIVEN_BASE,
        help=f"distinct texts embedded once for --given-vectors (default {DEFAULT_GIVEN_BASE})",
    )  # fmt: skip
    parser.add_argument(
        "--speed-consolidation", action=argparse.BooleanOptionalAction, default=True,
        help="one `all` consolidation job at each speed size (default on; minutes at 50k)",
    )  # fmt: skip
    parser.add_argument(
        "--probes", action=argparse.BooleanOptionalAction, default=True,
        help="a search and a save every 100 ms during the import to the largest speed size (default on)",
    )  # fmt: skip
    parser.add_argument(
        "--speed-corpus", choices=SPEED_CORPORA, default="mixed",
        help="the speed run's memories: SciFact and LoCoMo texts (mixed, the default), or look-alike notes of 14 words "
        "drawn from 24, as captured sessions write them (lookalike)",
    )  # fmt: skip
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help=f"LoCoMo JSON (default {DEFAULT_LOCOMO})")
    parser.add_argument("--beir", type=Path, default=DEFAULT_BEIR, help=f"BEIR directory (default {DEFAULT_BEIR})")
    parser.add_argument("--out", type=Path, help="JSON results file (default bench/results/<UTC timestamp>.json)")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=_setting,
        help="an ENGRAM_* setting for the nodes, e.g. ENGRAM_RRF_K=20 (repeatable)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: one LoCoMo conversation, 500 SciFact docs, size 2000, 100 timed calls, 12 sessions of "
        "the facts set",
    )
    parser.add_argument(
        "--context",
        choices=CONTEXT_MODES,
        default=DEFAULT_CONTEXT_MODE,
        help="LoCoMo memory context: the previous turn passed by the client (default), none passed and derived by "
        "the server, or none at all",
    )
    parser.add_argument(
        "--context-gain",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure LoCoMo with the other --context modes (modes full and full+rerank; default on)",
    )
    parser.add_argument("--chunk", type=_positive, default=DEFAULT_CHUNK, help="NDJSON lines per import request")
    parser.add_argument("--searches", type=_positive, default=DEFAULT_SEARCHES, help="timed searches per size")
    parser.add_argument("--saves", type=_positive, default=DEFAULT_SAVES, help="timed saves per size")
    parser.add_argument(
        "--updates",
        type=int,
        default=DEFAULT_UPDATES,
        help="memories updated (timed) at each size before its searches, so they run with versions present",
    )
    parser.add_argument(
        "--event-saves", type=_positive, default=DEFAULT_EVENT_SAVES, help="timed saves for the SSE delivery latency"
    )
    parser.add_argument(
        "--slow-clients", type=_positive, default=DEFAULT_SLOW_CLIENTS, help="SSE clients that stop reading"
    )
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed searches before each series")
    parser.add_argument(
        "--model-cache",
        type=Path,
        default=DEFAULT_MODEL_CACHE,
        help="persistent ONNX model cache shared by every run (ENGRAM_MODEL_CACHE)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the nodes' data dirs (logs) after the run")
    args = parser.parse_args(argv)  # fmt: skip
    if not any((args.quality, args.speed, args.events, args.sync, args.edge, args.console, args.facts,
                args.consolidation, args.hooks)):  # fmt: skip
        parser.error(
            "nothing to do: --no-quality, --no-speed, --no-events, --no-sync, --no-edge, --no-facts, "
            "--no-consolidation and --no-hooks without --console"
        )
    return BenchConfig(
        quality=args.quality, speed=args.speed, events=args.events, sync=args.sync, edge=args.edge,
        console=args.console, console_size=args.console_size, console_loads=args.console_loads,
        facts=args.facts, facts_data=args.facts_data,
        consolidation=args.consolidation, consolidation_data=args.consolidation_data,
        consolidation_concurrency=args.consolidation_concurrency,
        consolidation_per_pair=args.consolidation_per_pair, background_sizes=args.background_sizes,
        hooks=args.hooks, hooks_data=args.hooks_data,
        offline_mutations=args.offline_mutations, sizes=args.sizes, speed_corpus=args.speed_corpus, locomo=args.locomo,
        beir=args.beir, out=args.out, env=dict(args.env), quick=args.quick, context=args.context,
        context_gain=args.context_gain, chunk=args.chunk,
        searches=args.searches, saves=args.saves, updates=args.updates, warmup=args.warmup,
        event_saves=args.event_saves, slow_clients=args.slow_clients,
        model_cache=args.model_cache.resolve(),
        keep=args.keep, given_vectors=args.given_vectors, given_base=args.given_base,
        speed_consolidation=args.speed_consolidation, probes=args.probes,
    )  # fmt: skip


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"sizes are comma-separated counts, e.g. 10000,50000; got {text!r}") from e
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError("sizes must be positive counts")
    return sizes


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.startswith("ENGRAM_"):
        raise argparse.ArgumentTypeError(f"expected ENGRAM_<NAME>=<value>, got {text!r}")
    if key in {"ENGRAM_HOME", "ENGRAM_PORT"}:
        raise argparse.ArgumentTypeError(f"{key} is chosen by the bench (a fresh home per node, port 0)")
    return key, value


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def main(argv: list[str] | None = None) -> int:
    results, path = run(parse_args(argv))
    print(table(results))
    print(f"\nresults: {path}", file=sys.stderr)
    return 1 if results.get("errors") or results.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
