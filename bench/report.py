"""The benchmark's output: one aligned plain-text table with targets and reference figures, and a JSON record."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Targets from the brief; reference figures from /work/shared/data/README.md (same data, same metric).
LOCOMO_TARGET_R10 = 0.72
BEIR_TARGET_NDCG10 = 0.72
SEARCH_P95_TARGET_MS = 30.0
SEARCH_P95_TARGET_SIZE = 50_000
RERANK_DELTA_TARGET_MS = 100.0
IMPORT_TARGET_PER_S = 300.0
CONSOLIDATE_ALL_TARGET_SECONDS = 120.0  # one `all` consolidation job (issue 25)
CONSOLIDATE_ALL_TARGET_SIZE = 50_000
FLAGS_PER_1000_TARGET = 1.0  # contradictions and updates one `all` job flags per 1,000 memories (issue 25)
IMPORT_EMBEDDER_TARGET = 0.8  # import rate / the embedder alone (issue 27)
SEARCH_REFERENCE_TARGET = 1.5  # search p50 / the in-process flat dense search (issue 27, MCP at 10k)
MCP_OVER_REST_TARGET_MS = 2.0  # MCP search p50 - REST search p50, the same searches in turn (issue 27)
STALL_MAX_TARGET_MS = 250.0  # the longest wait of a search or save issued every 100 ms during an import (issue 27)
STALL_P99_TARGET_MS = 100.0
EDGE_RSS_TARGET_MIB = 600  # the edge node process at 50k memories (issue 10)
EDGE_RSS_TARGET_SIZE = 50_000
EDGE_START_TARGET_SECONDS = 3.0  # from process start until /readyz answers 200
CONSOLE_FIRST_PAINT_TARGET_MS = 1000.0  # the web console on a node with 50k memories (issue 13)
LOCOMO_REFERENCE = {  # recall@5, @10, @25
    "bm25": ("BM25", (0.541, 0.608, 0.677)),
    "dense": ("MiniLM dense", (0.434, 0.531, 0.669)),
    "full": ("RRF(k=60)", (0.528, 0.608, 0.701)),
}
SCIFACT_REFERENCE = {"bm25": ("BM25", 0.659), "dense": ("MiniLM dense", 0.645), "full": ("RRF(k=60)", 0.687)}
MODE_ORDER = ("bm25", "dense", "full", "full+rerank")
TARGET_MODES = ("full", "full+rerank")
MIB = 1024 * 1024
KIB = 1024
SOURCE_DIRS = ("engram", "services", "protos")
SOURCE_SUFFIXES = (".py", ".proto")


@dataclass(frozen=True, slots=True)
class Row:
    figure: str
    value: str
    target: str = ""
    reference: str = ""
    status: str = ""


def table(results: dict[str, Any]) -> str:
    """Every figure of a run as one aligned table: figure, value, target, reference, status."""
    rows = [Row("figure", "value", "target", "reference", "status")]
    rows += list(_quality_rows(results.get("quality") or {}))
    rows += list(_speed_rows(results.get("speed") or {}))
    rows += list(_reference_rows(results.get("speed") or {}))
    rows += list(_recovery_rows(results.get("speed") or {}))
    rows += list(_events_rows(results.get("events") or {}))
    rows += list(_sync_rows(results.get("sync") or {}, (results.get("speed") or {}).get("edge_backfill") or {}))
    rows += list(_edge_rows(results.get("edge") or {}))
    rows += list(_console_rows(results.get("console") or {}))
    rows += list(_facts_rows(results.get("facts") or {}))
    rows += list(_consolidation_rows(results.get("consolidation") or {}))
    rows += list(_hooks_rows(results.get("hooks") or {}))
    for section, error in (results.get("errors") or {}).items():
        rows.append(Row(f"ERROR in {section}", "-", reference=_short(error, 100), status="FAIL"))
    if results.get("code_changed_during_run"):
        rows.append(Row("source changed during the run", "yes", reference="nodes may have run different code",
                        status="WARN"))  # fmt: skip
    if results.get("interrupted"):
        rows.append(Row("run interrupted", "partial figures", status="FAIL"))
    rows.append(Row("wall time, whole run (s)", f"{results.get('wall_seconds', 0):.0f}"))
    box = results.get("machine") or {}
    if box:
        load = box.get("load_average_at_start") or []
        busy = f", load {load[0]:.1f} at start" if load else ""
        memory = f"{box.get('memory_bytes', 0) / 1024**3:.0f} GiB"
        rows.append(Row("machine", f"{box.get('cores')} cores", reference=f"{box.get('cpu_model')}, {memory}{busy}"))
    commit = (results.get("git") or {}).get("commit")
    if commit:
        dirty = " (dirty)" if results["git"].get("dirty") else ""
        rows.append(Row("commit", commit[:12] + dirty))
    widths = [max(len(getattr(r, col)) for r in rows) for col in Row.__slots__]
    lines = []
    for i, row in enumerate(rows):
        cells = [getattr(row, col).ljust(width) for col, width in zip(Row.__slots__, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _quality_rows(quality: dict[str, Any]) -> Iterator[Row]:
    locomo = quality.get("locomo")
    if locomo:
        modes = locomo.get("modes", {})
        skipped = locomo.get("skipped_modes", {})
        for k_index, k in enumerate((5, 10, 25)):
            for mode in MODE_ORDER:
                figure = f"LoCoMo recall@{k} [{mode}]"
                if mode in skipped and mode not in modes:
                    if k == 10:
                        yield Row(figure, "skipped", reference=_short(skipped[mode]))
                    continue
                value = modes.get(mode, {}).get(f"recall@{k}")
                target = f">= {LOCOMO_TARGET_R10:.2f}" if k == 10 and mode in TARGET_MODES else ""
                name, figures = LOCOMO_REFERENCE.get(mode, ("", ()))
                reference = f"{name} {figures[k_index]:.3f}" if figures else ""
                status = _verdict(value, LOCOMO_TARGET_R10, higher=True) if target else ""
                yield Row(figure, _num(value, 3) + _flag(modes.get(mode)), target, reference, status)
        for mode in MODE_ORDER:
            per = modes.get(mode, {})
            counts = per.get("questions_by_category", {})
            for category, value in per.get("recall@10_by_category", {}).items():
                yield Row(f"LoCoMo recall@10 {category} (n={counts.get(category, '?')}) [{mode}]", _num(value, 3))
    yield from _context_rows(quality)
    beir = quality.get("beir")
    if beir:
        name = beir.get("name", "beir")
        label = "SciFact" if name == "scifact" else name
        modes = beir.get("modes", {})
        skipped = beir.get("skipped_modes", {})
        for mode in MODE_ORDER:
            figure = f"{label} nDCG@10 [{mode}]"
            if mode in skipped and mode not in modes:
                yield Row(figure, "skipped", reference=_short(skipped[mode]))
                continue
            value = modes.get(mode, {}).get("ndcg@10")
            target = f">= {BEIR_TARGET_NDCG10:.2f}" if mode in TARGET_MODES else ""
            ref_name, ref = SCIFACT_REFERENCE.get(mode, ("", math.nan)) if name == "scifact" else ("", math.nan)
            reference = f"{ref_name} {ref:.3f}" if ref_name else ""
            status = _verdict(value, BEIR_TARGET_NDCG10, higher=True) if target else ""
            yield Row(figure, _num(value, 3) + _flag(modes.get(mode)), target, reference, status)
        if beir.get("note"):
            yield Row(f"{label} note", "-", reference=_short(beir["note"]))
    for key, data in quality.items():
        if data and data.get("import"):
            imp = data["import"]
            counts = f"{imp['imported']} imported, {imp['rejected']} rejected"
            yield Row(f"quality import {key}: memories/s", _num(imp["memories_per_second"], 0), reference=counts)


CONTEXT_LABELS = {
    "previous-turn": "client passes the previous turn",
    "server": "client passes none, server derives it",
    "none": "client passes none, server derives none",
}


def _context_rows(quality: dict[str, Any]) -> Iterator[Row]:
    """LoCoMo recall@10 per context mode (the main run's and the --context-gain runs'), and what derivation gains."""
    main = quality.get("locomo") or {}
    runs = {main.get("context"): main}
    runs.update((m, r) for m, r in (quality.get("locomo_context") or {}).items() if m in CONTEXT_LABELS)
    if len(runs) < 2:
        return
    for mode in TARGET_MODES:
        recall = {c: (r.get("modes") or {}).get(mode, {}).get("recall@10") for c, r in runs.items()}
        if all(v is None for v in recall.values()):
            continue
        for context, label in CONTEXT_LABELS.items():
            if context in recall:
                yield Row(f"LoCoMo recall@10 [{mode}], context {context}", _num(recall[context], 3), reference=label)
        derived, bare = recall.get("server"), recall.get("none")
        if derived is not None and bare is not None:
            yield Row(f"LoCoMo recall@10 [{mode}], gain of server-derived context", f"{derived - bare:+.3f}",
                      "> 0", "over none; issue 8: about 0.65 -> 0.70 with the previous turn",
                      "ok" if derived > bare else "FAIL")  # fmt: skip


def _consolidate_all_rows(job: dict[str, Any] | None, size: int, at: str) -> Iterator[Row]:
    """One `all` consolidation job at this size: its time (issue 25: <= 120 s at 50k) and the flags it wrote per
    1,000 memories (<= 1), with every candidate found beside them (the rest wait for later runs)."""
    if not job:
        return
    seconds = job.get("seconds")
    at_target = size >= CONSOLIDATE_ALL_TARGET_SIZE
    found = (job.get("result") or {}).get("contradictions") or {}
    checked = f"{found.get('pairs_checked', '?')} pairs checked, {job.get('state', '?')}"
    yield Row(f"consolidation `all` job {at} (s)", _num(seconds, 1),
              f"<= {CONSOLIDATE_ALL_TARGET_SECONDS:.0f}" + ("" if at_target else " (at 50k)"), checked,
              _verdict(seconds, CONSOLIDATE_ALL_TARGET_SECONDS, higher=False) if at_target else "")  # fmt: skip
    flags = job.get("flags_per_1000")
    if flags is not None:
        candidates = f"{job.get('candidates_per_1000')} candidates per 1,000 ({found.get('deferred', 0)} deferred)"
        yield Row(f"consolidation flags per 1,000 memories {at}", _num(flags, 2), f"<= {FLAGS_PER_1000_TARGET:g}",
                  candidates, _verdict(flags, FLAGS_PER_1000_TARGET, higher=False))  # fmt: skip


def _speed_rows(speed: dict[str, Any]) -> Iterator[Row]:
    given = speed.get("import_vectors")
    if given:
        yield Row("import lines carry their dense vectors", "yes", "",
                  f"made in the bench from {given.get('base_texts')} texts (bench/given.py)")  # fmt: skip
    for step in speed.get("steps", []):
        size = step["size"]
        at = f"@{size // 1000}k" if size % 1000 == 0 else f"@{size}"
        imp = step.get("import", {})
        rate = imp.get("memories_per_second")
        yield Row(f"bulk import {at}: memories/s (ack)", _num(rate, 0), f">= {IMPORT_TARGET_PER_S:.0f}",
                  f"{imp.get('imported', 0)} in {imp.get('request_seconds', 0):.1f}s",
                  _verdict(rate, IMPORT_TARGET_PER_S, higher=True))  # fmt: skip
        caught_up = f"index caught up {step.get('index_catch_up_seconds', 0):.1f}s after the last ack"
        indexed = _num(step.get("indexed_memories_per_second"), 0)
        yield Row(f"bulk import {at}: memories/s (indexed)", indexed, reference=caught_up)
        settle = step.get("settle_before_search_seconds")
        if settle is not None:
            yield Row(f"first search after the writes {at} (s)", _num(settle, 1),
                      reference="incl. 1.5 s idle; the node is stopped while it builds the vector graph")  # fmt: skip
        search = step.get("search")
        if search:
            target = f"p95 <= {SEARCH_P95_TARGET_MS:.0f}" + ("" if size >= SEARCH_P95_TARGET_SIZE else " (at 50k)")
            status = (
                _verdict(search["p95_ms"], SEARCH_P95_TARGET_MS, higher=False) if size >= SEARCH_P95_TARGET_SIZE else ""
            )
            versions = f", {step['versions']} updated" if step.get("versions") else ""
            yield Row(f"search {at}{versions} p50/p95/p99 ms", _triple(search), target, _errors(search), status)
        yield from _mcp_and_rest_rows(step, at)
        for source in ("dense", "bm25"):
            only = step.get(f"search_{source}_only")
            if only:
                note = ", ".join(x for x in (f"{only['count']} searches", _errors(only)) if x)
                yield Row(f"search [{source} only] {at} p50/p95/p99 ms", _triple(only), reference=note)
        rerank = step.get("search_rerank")
        if rerank:
            yield Row(f"search+rerank {at} p50/p95/p99 ms", _triple(rerank), "", _errors(rerank))
            delta = step.get("rerank_p95_delta_ms")
            yield Row(f"rerank cost {at}: p95 delta ms", _num(delta, 1), f"<= +{RERANK_DELTA_TARGET_MS:.0f}", "",
                      _verdict(delta, RERANK_DELTA_TARGET_MS, higher=False))  # fmt: skip
        elif speed.get("rerank_skipped"):
            yield Row(f"search+rerank {at}", "skipped", reference=_short(speed["rerank_skipped"]))
        save = step.get("save")
        if save:
            yield Row(f"save_memory {at} p50/p95/p99 ms", _triple(save), "", _errors(save))
        update = step.get("update")
        if update:
            yield Row(f"update_memory {at} p50/p95/p99 ms", _triple(update), "", _errors(update))
        as_of = step.get("search_as_of")
        if as_of:
            yield Row(f"search as_of {at} p50/p95/p99 ms", _triple(as_of), "", _errors(as_of))
        yield from _consolidate_all_rows(step.get("consolidate_all"), size, at)
        rss = step.get("rss_bytes", {})
        if rss:
            yield Row(f"node RSS {at} (MiB, node+nats)", f"{rss.get('total', 0) / MIB:.0f}", "",
                      f"node {rss.get('node', 0) / MIB:.0f} + nats {rss.get('nats', 0) / MIB:.0f}")  # fmt: skip
        disk = step.get("disk_bytes") or {}
        if disk:
            parts = ", ".join(f"{k} {v / MIB:.0f} MiB" for k, v in disk.items() if k != "total" and v >= MIB)
            yield Row(f"disk per memory {at} (bytes)", _num(step.get("disk_bytes_per_memory"), 0), "",
                      _short(f"{disk['total'] / MIB:.0f} MiB: {parts}", 70))  # fmt: skip


def _mcp_and_rest_rows(step: dict[str, Any], at: str) -> Iterator[Row]:
    """The same search over REST, taken in turn with the MCP one (issue 27: MCP costs what REST costs)."""
    rest, over = step.get("search_rest"), step.get("search_mcp_minus_rest_ms")
    if not rest or not over:
        return
    yield Row(f"search over REST {at} p50/p95/p99 ms", _triple(rest), "", _errors(rest))
    yield Row(f"search MCP - REST {at}: p50/p95 ms", f"{_num(over['p50_ms'], 1)} / {_num(over['p95_ms'], 1)}",
              f"p50 <= +{MCP_OVER_REST_TARGET_MS:.0f}", f"{rest['count']} searches each, in turn",
              _verdict(over["p50_ms"], MCP_OVER_REST_TARGET_MS, higher=False))  # fmt: skip


def _reference_rows(speed: dict[str, Any]) -> Iterator[Row]:
    """Issue 27: the waits met while importing, and Engram against the in-process reference (bench/reference.py)."""
    reference = speed.get("reference") or {}
    embed_rate = reference.get("embed_per_second")
    if embed_rate:
        yield Row("reference: embedder alone, texts/s", _num(embed_rate, 0),
                  reference=f"{reference.get('embedded', 0)} speed-corpus texts, in the bench process")  # fmt: skip
    for step in speed.get("steps", []):
        size = step["size"]
        at = f"@{size // 1000}k" if size % 1000 == 0 else f"@{size}"
        probes = step.get("during_import") or {}
        for kind in ("search", "save"):
            waits = probes.get(kind)
            if waits:
                value = f"{_num(waits.get('max_ms'), 0)} / {_num(waits.get('p99_ms'), 0)}"
                status = _verdict(waits.get("max_ms"), STALL_MAX_TARGET_MS, higher=False)
                if status == "ok":
                    status = _verdict(waits.get("p99_ms"), STALL_P99_TARGET_MS, higher=False)
                yield Row(f"{kind} every 100 ms during import {at}: longest/p99 ms", value,
                          f"<= {STALL_MAX_TARGET_MS:.0f} / {STALL_P99_TARGET_MS:.0f}",
                          ", ".join(x for x in (f"{waits.get('count', 0)} calls", _errors(waits)) if x),
                          status)  # fmt: skip
        rate = (step.get("import") or {}).get("memories_per_second")
        if embed_rate and rate and not speed.get("import_vectors"):  # with given vectors the import embeds nothing
            share = rate / embed_rate
            probed = " (searches and saves every 100 ms meanwhile)" if step.get("import_probed") else ""
            yield Row(f"import {at} / embedder alone", f"{share:.2f}", f">= {IMPORT_EMBEDDER_TARGET:.1f}",
                      f"{rate:.0f} / {embed_rate:.0f} per s{probed}",
                      _verdict(share, IMPORT_EMBEDDER_TARGET, higher=True))  # fmt: skip
        flat = (reference.get("flat_search") or {}).get(str(size))
        if flat:
            yield Row(f"reference: flat numpy dense search {at} p50/p95/p99 ms", _triple(flat),
                      reference="query embedding + matmul + top-10, in the bench process")  # fmt: skip
            for name in ("search", "search_dense_only"):
                mine = step.get(name)
                if mine and flat.get("p50_ms"):
                    share = mine["p50_ms"] / flat["p50_ms"]
                    target = f"<= {SEARCH_REFERENCE_TARGET:.1f}" if name == "search" else ""
                    status = _verdict(share, SEARCH_REFERENCE_TARGET, higher=False) if target else ""
                    yield Row(f"{name} {at} p50 / reference p50", f"{share:.2f}", target,
                              f"{mine['p50_ms']:.1f} / {flat['p50_ms']:.1f} ms (MCP)", status)  # fmt: skip


def _recovery_rows(speed: dict[str, Any]) -> Iterator[Row]:
    if "restart_seconds" in speed:
        yield Row("node restart with its index (s)", _num(speed["restart_seconds"], 1))
    rebuild = speed.get("rebuild")
    if rebuild:
        yield Row(f"rebuild a damaged index of {rebuild['memories']:,} memories (s)", _num(rebuild["seconds"], 1),
                  reference="start to /readyz 200, index moved aside and rebuilt from the log")  # fmt: skip


def _events_rows(events: dict[str, Any]) -> Iterator[Row]:
    latency = events.get("latency")
    if latency:
        signed = latency.get("ack_to_event_signed", {}).get("p50_ms")
        early = (
            f"{latency['events_before_ack']} of {latency['saves']} came before the ack (as 0; median {_num(signed, 1)})"
        )
        yield Row("SSE delivery, save ack -> event p50/p95/p99 ms", _triple(latency["ack_to_event"]), reference=early)
        yield Row("SSE delivery, save sent -> event p50/p95/p99 ms", _triple(latency["send_to_event"]))
    slow = events.get("slow_clients")
    if slow:
        bound = (
            f"queue {slow['queue_events']} x {slow['live']['mean_frame_bytes']} B = "
            f"{slow['bound_bytes_typical'] / KIB:.0f} KiB; worst case {slow['bound_bytes_worst'] / MIB:.1f} MiB"
        )
        held = slow["live"]
        yield Row(
            "gateway RSS per slow SSE client, live events (KiB)",
            f"{held['bytes_per_client'] / KIB:.0f}",
            reference=f"2nd batch of {slow['clients']} stalled clients; {bound}",
            status="" if held["queues_overflowed"] == held["clients"] else "WARN: queues not all overflowed",
        )
        held = slow["replay"]
        whole = held["clients_complete"] == held["clients"] and not held["queues_overflowed"]
        yield Row(
            "gateway RSS per slow SSE client, replay of the log (KiB)",
            f"{held['bytes_per_client'] / KIB:.0f}",
            reference=f"{held['events_per_client']} events each, read at the client's pace",
            status="" if whole else "WARN: a replay dropped or did not finish",
        )


def _sync_rows(sync: dict[str, Any], backfill: dict[str, Any]) -> Iterator[Row]:
    converge = sync.get("converge") or {}
    if "converge_seconds" in converge:
        yield Row(
            f"edge: converge {converge['offline_mutations']} offline mutations (s)",
            _num(converge["converge_seconds"], 1),
            reference=f"{converge['saves']} saves + {converge['updates']} updates; "
            f"{_num(converge['mutations_per_second'], 0)}/s from the cluster's start",
        )
    if "entries_per_second" in backfill:
        rss = backfill["edge_rss_bytes"]
        yield Row(
            f"edge: new device backfill @{backfill['cluster_memories']} (entries/s)",
            _num(backfill["entries_per_second"], 0),
            reference=f"{backfill['entries_pulled']} entries in {_num(backfill['pull_seconds'], 1)}s; "
            f"searchable after {_num(backfill['searchable_seconds'], 1)}s",
        )
        yield Row(
            f"edge node RSS after backfill @{backfill['cluster_memories']} (MiB, node+nats)",
            f"{rss['total'] / MIB:.0f}",
            target="node <= 600 (at 50k)",
            reference=f"node {rss['node'] / MIB:.0f} + nats {rss['nats'] / MIB:.0f}",
        )
    elif "error" in backfill:
        yield Row("edge: new device backfill", "-", reference=_short(backfill["error"], 100), status="FAIL")


def _edge_rows(edge: dict[str, Any]) -> Iterator[Row]:
    """The offline edge node's footprint (bench/edge.py): RSS and search latency per size, start-up with its index."""
    for step in edge.get("steps") or []:
        size, rss, search = step["size"], step.get("rss_bytes"), step.get("search")
        at_target = size >= EDGE_RSS_TARGET_SIZE
        if rss:
            node = rss["node"] / MIB
            yield Row(
                f"edge node RSS @{size // 1000}k (MiB, node)",
                f"{node:.0f}",
                target=f"<= {EDGE_RSS_TARGET_MIB} (at {EDGE_RSS_TARGET_SIZE // 1000}k)",
                reference=f"anon {rss['node_anon'] / MIB:.0f} + file {rss['node_file'] / MIB:.0f}; "
                f"nats-server {rss['nats'] / MIB:.0f} more",
                status=_verdict(node, EDGE_RSS_TARGET_MIB, higher=False) if at_target else "",
            )
        if search:
            yield Row(
                f"edge search @{size // 1000}k p50/p95/p99 ms",
                _triple(search),
                target=f"p95 <= {SEARCH_P95_TARGET_MS:.0f}" + ("" if at_target else " (at 50k)"),
                reference=_errors(search),
                status=_verdict(search["p95_ms"], SEARCH_P95_TARGET_MS, higher=False) if at_target else "",
            )
    if "restart_seconds" in edge:
        size = max(edge.get("sizes") or [0])
        rss = edge.get("rss_bytes_restarted_searched") or edge.get("rss_bytes_restarted") or {}
        yield Row(
            f"edge node start-up with {size // 1000}k memories (s)",
            _num(edge["restart_seconds"], 2),
            target=f"<= {EDGE_START_TARGET_SECONDS:.0f}",
            reference=f"empty: {_num(edge.get('start_seconds_empty'), 2)} s; then RSS node "
            f"{rss.get('node', 0) / MIB:.0f} + nats {rss.get('nats', 0) / MIB:.0f} MiB",
            status=_verdict(edge["restart_seconds"], EDGE_START_TARGET_SECONDS, higher=False),
        )
        if edge.get("search_restarted"):
            yield Row(f"edge search after restart @{size // 1000}k p50/p95/p99 ms", _triple(edge["search_restarted"]),
                      reference=_errors(edge["search_restarted"]))  # fmt: skip


def _console_rows(console: dict[str, Any]) -> Iterator[Row]:
    """The web console's first paint (bench/console.py): medians of fresh-context loads of the memory browser."""
    if "first_rows_ms" not in console:
        return
    size, loads = console["size"], console["loads"]
    fcp, rows = console["first_contentful_paint_ms"], console["first_rows_ms"]
    yield Row(f"console first contentful paint @{size // 1000}k (ms, median of {loads})", _num(fcp["median"], 0),
              reference=f"min {_num(fcp['min'], 0)}, max {_num(fcp['max'], 0)}")  # fmt: skip
    yield Row(
        f"console first memory rows @{size // 1000}k (ms, median of {loads})",
        _num(rows["median"], 0),
        f"< {CONSOLE_FIRST_PAINT_TARGET_MS:.0f}",
        f"min {_num(rows['min'], 0)}, max {_num(rows['max'], 0)}; {console.get('api_calls_per_load')} API calls, "
        f"largest limit {console.get('largest_limit')}",
        _verdict(rows["median"], CONSOLE_FIRST_PAINT_TARGET_MS, higher=False) if rows["median"] is not None else "",
    )


FACT_KINDS = ("paraphrase", "identifier", "who", "latest-version", "multi-hop")
FACT_TOP1_TARGETS = {"overall": 0.85, "identifier": 0.95, "latest-version": 0.80}  # issue 24; paraphrase: >= dense
TOOLS_LIST_TARGET_BYTES = 20480
SEARCH_ANSWER_TARGET_BYTES = 1536


def _facts_rows(facts: dict[str, Any]) -> Iterator[Row]:
    """The discrete-facts dev set (bench/facts.py): top-1 / recall@5 / MRR per half and kind, dense-only beside."""
    modes = facts.get("modes") or {}
    default, dense = modes.get("default") or {}, modes.get("dense") or {}
    save = facts.get("save") or {}
    if save:
        yield Row(
            "facts: memories saved through MCP",
            str(save.get("saved", 0)),
            reference=f"{save.get('superseded', 0)} superseded, {save.get('supersessions_refused', 0)} supersessions "
            f"refused ({save.get('supersessions_refused_cross_agent', 0)} cross-agent), {save.get('errors', 0)} errors",
            status="FAIL" if save.get("errors") else "",
        )
    sizes = facts.get("answer_bytes") or {}
    if sizes:
        yield Row(
            "facts: tools/list, default (bytes)",
            str(sizes.get("tools_list")),
            f"<= {TOOLS_LIST_TARGET_BYTES}",
            f"{sizes.get('tools')} tools (issue 34: the default profile is core)",
            _verdict(sizes.get("tools_list"), TOOLS_LIST_TARGET_BYTES, higher=False),
        )
        if sizes.get("tools_list_full") is not None:
            yield Row(
                "facts: tools/list, every tool (bytes)",
                str(sizes["tools_list_full"]),
                reference=f"{sizes.get('tools_full')} tools (?tools=full)",
            )
        if sizes.get("tools_list_core") is not None:
            core = sizes["tools_list_core"]
            yield Row(
                "facts: tools/list, core profile (bytes)",
                str(core),
                f"<= {TOOLS_LIST_TARGET_BYTES}",
                f"{sizes.get('tools_core')} tools (?tools=core)",
                _verdict(core, TOOLS_LIST_TARGET_BYTES, higher=False),
            )
        yield Row(
            "facts: search answer, limit 5, median (bytes)",
            _num(sizes.get("search_limit5_median"), 0),
            f"<= {SEARCH_ANSWER_TARGET_BYTES}",
            "the compact text block an agent reads",
            _verdict(sizes.get("search_limit5_median"), SEARCH_ANSWER_TARGET_BYTES, higher=False),
        )
        yield Row("facts: save answer, median (bytes)", _num(sizes.get("save_median"), 0))
    for split in ("tune", "untouched"):
        figures, reference = default.get(split) or {}, dense.get(split) or {}
        for kind in (*FACT_KINDS, "overall"):
            mine = figures.get("overall") if kind == "overall" else (figures.get("kinds") or {}).get(kind)
            if not mine:
                continue
            theirs = reference.get("overall") if kind == "overall" else (reference.get("kinds") or {}).get(kind)
            notes = [f"dense-only {_facts_triple(theirs)}"] if theirs else []
            if "both@5" in mine:
                notes.append(f"both facts in top 5: {_num(mine['both@5'], 3)}")
            target = FACT_TOP1_TARGETS.get(kind)
            if kind == "paraphrase" and theirs:
                target = theirs.get("top1")
            verdict = _verdict(mine.get("top1"), target, higher=True) if target is not None else ""
            shown = (
                "" if target is None else (f">= {target:.3f} top-1" if kind == "paraphrase" else f">= {target} top-1")
            )
            yield Row(f"facts [{split}] {kind} (n={mine['queries']}) top-1 / R@5 / MRR", _facts_triple(mine),
                      shown, "; ".join(notes), verdict)  # fmt: skip
            if kind == "overall" and "next_saved_above" in mine:
                yield Row(f"facts [{split}] the memory saved next ranked above the answer",
                          f"{mine['next_saved_above']} of {mine['queries']}", "0",
                          status=_verdict(mine["next_saved_above"], 0, higher=False))  # fmt: skip
            if "outdated_above" in mine:
                yield Row(f"facts [{split}] latest-version: outdated ranked above current",
                          f"{mine['outdated_above']} of {mine['queries']}",
                          reference=f"outdated first: {mine['outdated_first']}")  # fmt: skip
    for size, run in list((facts.get("shared") or {}).items())[1:]:  # the first size's figures are those above
        for split in ("tune", "untouched"):
            figures = ((run.get("modes") or {}).get("default") or {}).get(split) or {}
            latest = (figures.get("kinds") or {}).get("latest-version") or {}
            if figures:
                yield Row(f"facts [{split}, {size} around] overall top-1 / R@5 / MRR",
                          _facts_triple(figures["overall"]),
                          reference=f"latest-version top-1 {_num(latest.get('top1'), 3)}")  # fmt: skip
    if default.get("errors"):
        yield Row("facts: failed searches", str(default["errors"]), status="FAIL")
    if facts.get("note"):
        yield Row("facts note", "-", reference=_short(facts["note"]))


def _hooks_rows(hooks: dict[str, Any]) -> Iterator[Row]:
    """Agents' hooks on labelled sessions (bench/hooks.py): capture quality and recall per split, then latency."""
    for split, f in (hooks.get("splits") or {}).items():
        yield Row(
            f"hooks [{split}] capture precision / recall ({f['keep_labels']} labels, {f['observations']} kept)",
            f"{_num(f['precision'], 3)} / {_num(f['recall'], 3)}",
            reference=f"duplicates {f['duplicates']}",
        )
        yield Row(
            f"hooks [{split}] secrets leaked",
            str(f["secrets_leaked"]),
            "0",
            status=_verdict(f["secrets_leaked"], 0, higher=False),
        )
        yield Row(
            f"hooks [{split}] questions answered at rank 1",
            f"{f['answered_rank1']} of {f['questions']}",
            reference=f"top 5: {f['answered_top5']}",
        )
        tokens = f.get("context_tokens") or {}
        if tokens:
            yield Row(
                f"hooks [{split}] session-start tokens mean / max",
                f"{tokens['mean']} / {tokens['max']}",
                f"<= {tokens['budget']}",
                status=_verdict(tokens["max"], tokens["budget"], higher=False),
            )
    for name, figures in (hooks.get("latency_ms") or {}).items():
        posttool = name.endswith("PostToolUse")
        yield Row(
            f"hooks latency {name} p50 / p95 (ms, n={figures['count']})",
            f"{figures['p50']:.0f} / {figures['p95']:.0f}",
            "<= 50 p95" if posttool else "",
            status=_verdict(figures["p95"], 50.0, higher=False) if posttool else "",
        )


def _consolidation_rows(consolidation: dict[str, Any]) -> Iterator[Row]:
    """The consolidation jobs on labelled pairs (bench/consolidation.py): each task and split against its targets."""
    names = {"tune": "tune", "untouched": "untouched", "existing": "tests/data"}
    runs = consolidation.get("shared") or {"": consolidation}  # issue 36: one run per background size
    for size, run in runs.items():
        around = f", {size} around" if size else ""
        for split, name in names.items():
            figures = (run.get("contradiction") or {}).get(split)
            if figures:
                yield from _contradiction_rows(name + around, figures)
        for split, name in names.items():
            figures = (run.get("dedupe") or {}).get(split)
            if figures:
                yield from _dedupe_rows(name + around, figures)
        for source, outside in (run.get("outside") or {}).items():
            yield Row(
                f"consolidation [{source}{around}] flags per 1,000 memories",
                _num(outside["flagged_per_1000"], 2),
                reference=f"{outside['flagged']} flags among {outside['namespace_memories']}; pair to another "
                f"memory {outside['flags_pair_to_other']}, merged into another {outside['merged_pair_to_other']}",
            )
    if consolidation.get("seconds") is not None:
        pace = f"{consolidation.get('pairs_per_second')} pairs/s"
        yield Row("consolidation: pairs through the node (s)", f"{consolidation['seconds']:.0f}", reference=pace)
    if consolidation.get("note"):
        yield Row("consolidation note", "-", reference=_short(consolidation["note"]))


def _contradiction_rows(name: str, figures: dict[str, Any]) -> Iterator[Row]:
    proposed = f"{figures['proposed']} proposed, rules {_rules(figures)}"
    label = f"contradictions [{name}] (n={figures['pairs']}) precision / recall"
    yield _checked(label, figures, ("precision", "recall"), proposed)
    if "updates" in figures:
        found = f"{_num(figures['update_recall_as_update'], 3)} / {_num(figures['update_recall_any_kind'], 3)}"
        yield Row(f"contradictions [{name}] updates proposed as update / at all (n={figures['updates']})", found)
    kinds = figures.get("by_kind") or {}
    if kinds:
        found = ", ".join(f"{kind} {k['proposed']}/{k['pairs']}" for kind, k in kinds.items())
        yield Row(f"contradictions [{name}] proposed per kind", found)
    related = f"related flagged: {figures['related_flagged']} of {figures['related']}"
    yield _checked(f"contradictions [{name}] duplicates flagged (of {figures['duplicates']})", figures,
                   ("duplicates_flagged",), related)  # fmt: skip


def _dedupe_rows(name: str, figures: dict[str, Any]) -> Iterator[Row]:
    merged = f"{figures['merged']} merged ({figures['merged_at_save']} at save)"
    yield _checked(
        f"dedupe [{name}] (n={figures['pairs']}) precision / recall", figures, ("precision", "recall"), merged
    )
    left = f"then flagged: {figures['duplicates_flagged']} duplicates, {figures['distinct_flagged']} distinct"
    if "updates" in figures:
        yield _checked(f"dedupe [{name}] updates merged (of {figures['updates']})", figures, ("updates_merged",), left)
        left = ""
    status = "ok" if figures["distinct_merged"] == 0 else "MISS"
    yield Row(f"dedupe [{name}] distinct merged (of {figures['distinct']})", str(figures["distinct_merged"]), "0",
              left, status)  # fmt: skip


def _checked(figure: str, figures: dict[str, Any], names: tuple[str, ...], reference: str) -> Row:
    """One row of figures with their targets (figures["checks"]); MISS when any misses."""
    checked = [figures.get("checks", {}).get(name) or {} for name in names]
    value = " / ".join(_num(figures.get(name), 3) if isinstance(figures.get(name), float) else str(figures.get(name))
                       for name in names)  # fmt: skip
    target = " / ".join(c.get("target", "") for c in checked)
    verdicts = [c.get("ok") for c in checked]
    status = "" if any(v is None for v in verdicts) else ("ok" if all(verdicts) else "MISS")
    errors = f"; {figures['errors']} errors" if figures.get("errors") else ""
    return Row(figure, value, target, reference + errors, status)


def _rules(figures: dict[str, Any]) -> str:
    return ", ".join(f"{rule} {n}" for rule, n in (figures.get("rules") or {}).items()) or "-"


def _facts_triple(figures: dict[str, Any]) -> str:
    return " / ".join(_num(figures.get(key), 3) for key in ("top1", "recall@5", "mrr"))


def _num(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _triple(latency: dict[str, Any]) -> str:
    return " / ".join(_num(latency.get(key), 1) for key in ("p50_ms", "p95_ms", "p99_ms"))


def _errors(figures: dict[str, Any]) -> str:
    return f"{figures['errors']} errors" if figures.get("errors") else ""


def _flag(mode_figures: dict[str, Any] | None) -> str:
    """Marks a figure computed while searches failed (see the JSON's error_examples)."""
    if not mode_figures or not mode_figures.get("errors"):
        return ""
    return f" ({mode_figures['errors']} errors{', UNRELIABLE' if mode_figures.get('unreliable') else ''})"


def _verdict(value: Any, target: float, *, higher: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return "ok" if (value >= target if higher else value <= target) else "MISS"


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


# --- the JSON record ----------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, OS and Python of this machine."""
    info: dict[str, Any] = {
        "cpu_model": "",
        "cores": os.cpu_count(),
        "memory_bytes": 0,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_bytes"] = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    if not info["cpu_model"]:
        info["cpu_model"] = platform.processor()
    return info


def git_state(repo: Path) -> dict[str, Any]:
    """The commit the run measured and whether the work tree had uncommitted changes."""
    try:
        commit = _git(repo, "rev-parse", "HEAD").strip()
        dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.CalledProcessError) as e:
        return {"commit": None, "dirty": None, "error": str(e)}
    return {"commit": commit, "dirty": dirty}


def source_fingerprint(repo: Path) -> str:
    """A hash of the node's source (engram/, services/, protos/): tells whether the code changed during a run."""
    digest = hashlib.sha256()
    for folder in SOURCE_DIRS:
        for path in sorted((repo / folder).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                digest.update(str(path.relative_to(repo)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30).stdout


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(results), indent=2, default=_jsonable, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _finite(value: Any) -> Any:
    """NaN (no data) becomes null, so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
