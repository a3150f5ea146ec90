"""One benchmark run: quality on fresh nodes, speed on another, then the table and the JSON record."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from bench import background
from bench.background import DEFAULT_SIZES as DEFAULT_BACKGROUND_SIZES
from bench.console import DEFAULT_CONSOLE_LOADS, DEFAULT_CONSOLE_SIZE, ConsoleOptions, run_console
from bench.consolidation import DEFAULT_CONCURRENCY as DEFAULT_CONSOLIDATION_CONCURRENCY
from bench.consolidation import DEFAULT_DATA as DEFAULT_CONSOLIDATION_DATA
from bench.consolidation import ConsolidationOptions, run_consolidation
from bench.datasets import (
    CONTEXT_MODES,
    DEFAULT_CONTEXT_MODE,
    BeirSet,
    Conversation,
    load_beir,
    load_locomo,
    lookalike_corpus,
    speed_corpus,
    speed_queries,
)
from bench.edge import EdgeOptions, run_edge
from bench.events import DEFAULT_EVENT_SAVES, DEFAULT_SLOW_CLIENTS, EventsOptions, run_events
from bench.facts import DEFAULT_FACTS, QUICK_SESSIONS, FactsOptions, load_facts, run_facts
from bench.hooks import DEFAULT_DATA as DEFAULT_HOOKS_DATA
from bench.hooks import HooksOptions, run_hooks
from bench.node import DEFAULT_MODEL_CACHE, node_env
from bench.progress import Phases, note
from bench.quality import QualityOptions, run_beir, run_locomo
from bench.report import git_state, machine, source_fingerprint, write_json
from bench.speed import (
    DEFAULT_GIVEN_BASE,
    DEFAULT_SAVES,
    DEFAULT_SEARCHES,
    DEFAULT_SIZES,
    DEFAULT_UPDATES,
    DEFAULT_WARMUP,
    SpeedOptions,
    run_speed,
)
from bench.sync import DEFAULT_OFFLINE_MUTATIONS, SyncOptions, run_converge

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOCOMO = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
DEFAULT_BEIR = REPO_ROOT.parent / "shared" / "data" / "scifact"
DEFAULT_RESULTS_DIR = REPO_ROOT / "bench" / "results"
DEFAULT_CHUNK = 1000
QUICK_CONVERSATIONS = 1
QUICK_DOCS = 500
QUICK_SIZES = (2000,)
QUICK_CALLS = 100
QUICK_SLOW_CLIENTS = 5
QUICK_OFFLINE_MUTATIONS = 500
QUICK_CONSOLE_LOADS = 3
CONTEXT_GAIN_MODES = ("full", "full+rerank")  # the retrieval modes the other context modes are measured in


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """Everything one run does; built from the command line."""

    quality: bool = True
    speed: bool = True
    events: bool = True
    sync: bool = True
    edge: bool = True
    console: bool = False  # a browser and its own node filled to console_size: only when asked for
    facts: bool = True  # the discrete-facts dev set (issue 24)
    facts_data: Path = DEFAULT_FACTS
    consolidation: bool = True  # the contradiction and dedupe jobs on labelled pairs (issue 25)
    consolidation_data: Path = DEFAULT_CONSOLIDATION_DATA
    consolidation_concurrency: int = DEFAULT_CONSOLIDATION_CONCURRENCY
    consolidation_per_pair: bool = False  # the diagnostic: one namespace per pair, no background
    background_sizes: tuple[int, ...] = DEFAULT_BACKGROUND_SIZES  # memories around the facts and consolidation sets
    hooks: bool = True  # labelled agent sessions through the hook command (issue 26)
    hooks_data: Path = DEFAULT_HOOKS_DATA
    console_size: int = DEFAULT_CONSOLE_SIZE
    console_loads: int = DEFAULT_CONSOLE_LOADS
    offline_mutations: int = DEFAULT_OFFLINE_MUTATIONS
    sizes: tuple[int, ...] = DEFAULT_SIZES
    speed_corpus: str = "mixed"  # bench.datasets.SPEED_CORPORA: the speed run's memories
    locomo: Path = DEFAULT_LOCOMO
    beir: Path = DEFAULT_BEIR
    out: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    quick: bool = False
    context: str = DEFAULT_CONTEXT_MODE
    context_gain: bool = True
    chunk: int = DEFAULT_CHUNK
    searches: int = DEFAULT_SEARCHES
    saves: int = DEFAULT_SAVES
    updates: int = DEFAULT_UPDATES
    warmup: int = DEFAULT_WARMUP
    event_saves: int = DEFAULT_EVENT_SAVES
    slow_clients: int = DEFAULT_SLOW_CLIENTS
    model_cache: Path = DEFAULT_MODEL_CACHE
    keep: bool = False
    given_vectors: bool = False  # the speed run's import lines carry vectors made in the bench (bench/given.py)
    given_base: int = DEFAULT_GIVEN_BASE
    speed_consolidation: bool = True
    probes: bool = True

    def effective(self) -> BenchConfig:
        """``--quick`` shrinks the run: one conversation, a small corpus, one small size, fewer timed calls and
        slow SSE clients."""
        if not self.quick:
            return self
        sizes = self.sizes if self.sizes != DEFAULT_SIZES else QUICK_SIZES
        searches = min(self.searches, QUICK_CALLS)
        saves = min(self.saves, QUICK_CALLS)
        updates = min(self.updates, QUICK_CALLS)
        event_saves = min(self.event_saves, QUICK_CALLS)
        slow_clients = min(self.slow_clients, QUICK_SLOW_CLIENTS)
        offline = min(self.offline_mutations, QUICK_OFFLINE_MUTATIONS)
        console_size = self.console_size if self.console_size != DEFAULT_CONSOLE_SIZE else min(QUICK_SIZES)
        console_loads = min(self.console_loads, QUICK_CONSOLE_LOADS)
        return dataclasses.replace(self, sizes=sizes, searches=searches, saves=saves, updates=updates,
                                   event_saves=event_saves, slow_clients=slow_clients,
                                   offline_mutations=offline, console_size=console_size,
                                   console_loads=console_loads)  # fmt: skip


def run(config: BenchConfig) -> tuple[dict[str, Any], Path]:
    """Runs the benchmark; returns the results (also written as JSON) and the JSON path."""
    config = config.effective()
    began = time.monotonic()
    started_at = datetime.now(UTC)
    out = config.out or DEFAULT_RESULTS_DIR / f"{started_at.strftime('%Y%m%dT%H%M%SZ')}.json"
    _prepare_cache(config.model_cache)
    settings = node_env(config.model_cache, config.env)
    phases = Phases()
    results: dict[str, Any] = {
        "started_at": started_at.isoformat(timespec="seconds"),
        "quick": config.quick,
        "machine": machine(),
        "git": git_state(REPO_ROOT) | {"source_fingerprint": source_fingerprint(REPO_ROOT)},
        "engram_settings": settings,
        "model_cache": "shared models; each node has its own query-embedding cache (see docs/benchmarks.md)",
        "options": {
            "sizes": list(config.sizes),
            "searches": config.searches,
            "saves": config.saves,
            "updates": config.updates,
            "warmup": config.warmup,
            "chunk": config.chunk,
            "context": config.context,
            "context_gain": config.context_gain,
            "event_saves": config.event_saves,
            "slow_clients": config.slow_clients,
            "offline_mutations": config.offline_mutations,
            "console_size": config.console_size,
            "console_loads": config.console_loads,
            "facts": config.facts,
            "consolidation": config.consolidation,
            "consolidation_per_pair": config.consolidation_per_pair,
            "background_sizes": list(config.background_sizes),
            "hooks": config.hooks,
        },
        "data": {},
        "errors": {},
    }
    home_root = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    note(f"engram bench: nodes under {home_root}, model cache {config.model_cache}")
    try:
        with _sigterm_as_interrupt():
            if config.quality or config.speed or config.sync or config.edge or config.console:
                with phases("load"):
                    conversations, beir = _load(config, results)
            sections: list[tuple[str, bool, Callable[[dict[str, Any]], Coroutine[Any, Any, None]]]] = [
                ("quality", config.quality,
                 lambda out: _quality(config, conversations, beir, home_root, settings, phases, out)),
                ("speed", config.speed,
                 lambda out: _speed(config, conversations, beir, home_root, settings, phases, out)),
                ("events", config.events, lambda out: _events(config, home_root, settings, phases, out)),
                ("sync", config.sync, lambda out: _sync(config, conversations, beir, home_root, settings, phases, out)),
                ("edge", config.edge, lambda out: _edge(config, conversations, beir, home_root, settings, phases, out)),
                ("console", config.console,
                 lambda out: _console(config, conversations, beir, home_root, settings, phases, out)),
                ("facts", config.facts, lambda out: _facts(config, home_root, settings, phases, out)),
                ("consolidation", config.consolidation,
                 lambda out: _consolidation(config, home_root, settings, phases, out)),
                ("hooks", config.hooks, lambda out: _hooks(config, home_root, settings, phases, out)),
            ]  # fmt: skip
            for name, wanted, body in sections:
                if wanted:
                    _section(results, name, body)
    except KeyboardInterrupt:
        results["interrupted"] = True
        note("interrupted: nodes stopped; writing what was measured")
    finally:
        results["phases_seconds"] = phases.seconds
        results["phases_load_average"] = phases.load
        results["wall_seconds"] = round(time.monotonic() - began, 1)
        if source_fingerprint(REPO_ROOT) != results["git"]["source_fingerprint"]:
            results["code_changed_during_run"] = True
        if not results["errors"]:
            del results["errors"]
        write_json(results, out)
        if config.keep:
            note(f"node homes kept in {home_root}")
        else:
            shutil.rmtree(home_root, ignore_errors=True)
    return results, out


def _load(config: BenchConfig, results: dict[str, Any]) -> tuple[list[Conversation], BeirSet]:
    conversations = load_locomo(config.locomo)
    beir = load_beir(config.beir)
    results["data"] = {
        "locomo": {"path": str(config.locomo.resolve()), "conversations": len(conversations),
                   "turns": sum(len(c.turns) for c in conversations),
                   "answerable_questions": sum(len(c.answerable) for c in conversations)},
        "beir": {"path": str(config.beir.resolve()), "name": beir.name, "documents": len(beir.corpus),
                 "queries": len(beir.queries), "judged_queries": len(beir.judged)},
    }  # fmt: skip
    return conversations, beir


async def _quality(config: BenchConfig, conversations: list[Conversation], beir: BeirSet, home_root: Path,
                   settings: dict[str, str], phases: Phases, out: dict[str, Any]) -> None:  # fmt: skip
    options = QualityOptions(home_root=home_root, settings=settings, chunk=config.chunk, context_mode=config.context)
    locomo_set = conversations[:QUICK_CONVERSATIONS] if config.quick else conversations
    beir_set = load_beir(config.beir, limit=QUICK_DOCS) if config.quick else beir
    await run_locomo(locomo_set, options, phases, out.setdefault("locomo", {}))
    await run_beir(beir_set, options, phases, out.setdefault("beir", {}))
    if config.context_gain:
        # The same conversations with the other contexts, in the modes with a target: what a client that passes no
        # context gets with the server deriving it, against none at all.
        for mode in (m for m in CONTEXT_MODES if m != config.context):
            contexts = out.setdefault("locomo_context", {"modes_measured": list(CONTEXT_GAIN_MODES)})
            await run_locomo(locomo_set, dataclasses.replace(options, context_mode=mode), phases,
                             contexts.setdefault(mode, {}), only=CONTEXT_GAIN_MODES)  # fmt: skip


async def _speed(config: BenchConfig, conversations: list[Conversation], beir: BeirSet, home_root: Path,
                 settings: dict[str, str], phases: Phases, out: dict[str, Any]) -> None:  # fmt: skip
    options = SpeedOptions(
        home_root=home_root, settings=settings, chunk=config.chunk, sizes=config.sizes,
        searches=config.searches, saves=config.saves, updates=config.updates, warmup=config.warmup,
        backfill=config.sync, given_vectors=config.given_vectors, given_base=config.given_base,
        consolidate=config.speed_consolidation, probes=config.probes,
    )  # fmt: skip
    if config.speed_corpus == "lookalike":
        corpus = lookalike_corpus(options.texts_needed)
    else:
        corpus = speed_corpus(beir, conversations, needed=options.texts_needed)
    queries = speed_queries(beir, conversations)
    await run_speed(corpus, queries, options, phases, out)


async def _events(
    config: BenchConfig, home_root: Path, settings: dict[str, str], phases: Phases, out: dict[str, Any]
) -> None:
    options = EventsOptions(
        home_root=home_root, settings=settings, chunk=config.chunk, saves=config.event_saves,
        slow_clients=config.slow_clients,
    )  # fmt: skip
    await run_events(options, phases, out)


async def _sync(config: BenchConfig, conversations: list[Conversation], beir: BeirSet, home_root: Path,
                settings: dict[str, str], phases: Phases, out: dict[str, Any]) -> None:  # fmt: skip
    options = SyncOptions(home_root=home_root, settings=settings, chunk=config.chunk,
                          mutations=config.offline_mutations)  # fmt: skip
    corpus = speed_corpus(beir, conversations, needed=config.offline_mutations)
    await run_converge(corpus.texts, options, phases, out.setdefault("converge", {}))


async def _edge(config: BenchConfig, conversations: list[Conversation], beir: BeirSet, home_root: Path,
                settings: dict[str, str], phases: Phases, out: dict[str, Any]) -> None:  # fmt: skip
    options = EdgeOptions(home_root=home_root, settings=settings, chunk=config.chunk, sizes=config.sizes,
                          searches=config.searches, warmup=config.warmup)  # fmt: skip
    corpus = speed_corpus(beir, conversations, needed=max(config.sizes))
    await run_edge(corpus.texts, speed_queries(beir, conversations), options, phases, out)


async def _console(config: BenchConfig, conversations: list[Conversation], beir: BeirSet, home_root: Path,
                   settings: dict[str, str], phases: Phases, out: dict[str, Any]) -> None:  # fmt: skip
    options = ConsoleOptions(home_root=home_root, settings=settings, chunk=config.chunk, size=config.console_size,
                             loads=config.console_loads)  # fmt: skip
    corpus = speed_corpus(beir, conversations, needed=config.console_size)
    await run_console(corpus.texts, options, phases, out)


async def _facts(
    config: BenchConfig, home_root: Path, settings: dict[str, str], phases: Phases, out: dict[str, Any]
) -> None:
    facts = load_facts(config.facts_data, sessions=QUICK_SESSIONS if config.quick else None)
    sizes = config.background_sizes[:1] if config.quick else config.background_sizes
    out["background_sizes"] = list(sizes)
    out["shared"] = {}
    for size in sizes:  # issue 36: the set inside a namespace that holds other projects' memories too
        lines = background.for_facts(size, locomo=config.locomo)
        if len(lines) < size:  # said, not skipped silently: the figures are not those of a shared namespace then
            note(f"  facts: a background of {len(lines)} memories instead of {size}: LoCoMo is not at {config.locomo} "
                 "(--locomo PATH)")  # fmt: skip
        options = FactsOptions(home_root=home_root, settings=settings, background=lines, name=f"facts-{size}")
        run: dict[str, Any] = {}
        await run_facts(facts, options, phases, run)
        out["shared"][str(size)] = run
        if size == sizes[0]:
            out |= run


async def _consolidation(
    config: BenchConfig, home_root: Path, settings: dict[str, str], phases: Phases, out: dict[str, Any]
) -> None:
    options = ConsolidationOptions(home_root=home_root, settings=settings, data=config.consolidation_data,
                                   concurrency=config.consolidation_concurrency, quick=config.quick,
                                   per_pair=config.consolidation_per_pair, background_sizes=config.background_sizes,
                                   locomo=config.locomo)  # fmt: skip
    await run_consolidation(options, phases, out)


async def _hooks(
    config: BenchConfig, home_root: Path, settings: dict[str, str], phases: Phases, out: dict[str, Any]
) -> None:
    options = HooksOptions(home_root=home_root, settings=settings, data=config.hooks_data, quick=config.quick)
    await run_hooks(options, phases, out)


def _section(results: dict[str, Any], name: str, body: Callable[[dict[str, Any]], Coroutine[Any, Any, None]]) -> None:
    """Runs one section into results[name]; an error is recorded (and printed), what it measured is kept."""
    out = results.setdefault(name, {})
    try:
        asyncio.run(body(out))
    except Exception as e:
        traceback.print_exc()
        results["errors"][name] = f"{type(e).__name__}: {e}"


def _prepare_cache(model_cache: Path) -> None:
    """The model cache persists between runs; keep it out of git without touching the repo's .gitignore."""
    model_cache.mkdir(parents=True, exist_ok=True)
    ignore = model_cache.parent / ".gitignore"
    if model_cache.parent.name == ".cache" and not ignore.exists():
        ignore.write_text("*\n")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the run like Ctrl-C: nodes are stopped and the partial results are written."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
