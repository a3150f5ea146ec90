"""Quality and speed of each embedder of the list that is here: dense-only BEIR SciFact and the embedding rate.

In the bench process, without a node: each model (at fp32 and int8) embeds the whole corpus (timed: documents per
second, as an import embeds them in chunks), then each test query alone (timed: the query's embedding, as a search
does it), and ranks the corpus by cosine (nDCG@10 and recall@10, as bench/quality.py computes them). A model that
is not in the model cache is skipped, never pulled: `engram models pull NAME` first.

    python -m bench.models --beir /work/shared/data/scifact [--models minilm-l6 bge-small-en] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.datasets import BeirSet, load_beir
from bench.metrics import ndcg_at_k, recall_at_k
from bench.reference import EMBED_CHUNK
from engram.config import default_model_cache
from engram.models import catalog
from engram.models.named import installed, open_embedder

PRECISIONS = ("int8", "fp32")  # the default precision first
TOP_K = 10


def measure(name: str, precision: str, beir: BeirSet, cache: Path) -> dict[str, Any]:
    """One row: the model's dense figures on ``beir`` and its embedding rates."""
    embedder = open_embedder(name, cache, precision=precision)
    texts = [doc.content for doc in beir.corpus]
    vectors = np.empty((len(texts), embedder.dim), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(texts), EMBED_CHUNK):
        part = texts[start : start + EMBED_CHUNK]
        vectors[start : start + len(part)] = embedder.embed(part)
    corpus_seconds = time.perf_counter() - started
    ids = [doc.doc_id for doc in beir.corpus]
    ndcgs, recalls, query_ms = [], [], []
    for qid in beir.judged:
        began = time.perf_counter()
        q = embedder.embed([beir.queries[qid]])[0]
        query_ms.append((time.perf_counter() - began) * 1000)
        scores = vectors @ q
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        ranked = [ids[i] for i in top[np.argsort(-scores[top])]]
        relevant = [doc for doc, rel in beir.qrels[qid].items() if rel > 0]
        ndcgs.append(ndcg_at_k(ranked, beir.qrels[qid], TOP_K))
        recalls.append(recall_at_k(ranked, relevant, TOP_K))
    return {
        "model": name,
        "precision": precision,
        "dim": embedder.dim,
        "ndcg@10": round(statistics.fmean(ndcgs), 4),
        "recall@10": round(statistics.fmean(recalls), 4),
        "documents": len(texts),
        "queries": len(query_ms),
        "docs_per_second": round(len(texts) / corpus_seconds, 1),
        "query_ms_p50": round(statistics.median(query_ms), 2),
        "load": round(os.getloadavg()[0], 1),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| model | precision | dims | nDCG@10 | recall@10 | docs/s (corpus) | query embed p50 ms | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['model']}` | {r['precision']} | {r['dim']} | {r['ndcg@10']:.3f} | {r['recall@10']:.3f} | "
            f"{r['docs_per_second']:.0f} | {r['query_ms_p50']:.1f} | {r['load']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.models", description=__doc__.splitlines()[0])
    parser.add_argument("--beir", type=Path, required=True, help="a BEIR folder (corpus.jsonl, queries, qrels/)")
    parser.add_argument("--models", nargs="*", default=catalog.names(catalog.EMBEDDER), help="embedders of the list")
    parser.add_argument("--model-cache", type=Path, default=None, help="default: ENGRAM_MODEL_CACHE's default")
    parser.add_argument("--precisions", nargs="*", default=PRECISIONS, choices=PRECISIONS, help="int8 and fp32")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    cache = args.model_cache or default_model_cache()
    beir = load_beir(args.beir)
    rows = []
    for name in args.models:
        model = catalog.find(name, catalog.EMBEDDER)
        if model is None or installed(model, cache) is None:
            print(f"{name}: not here (engram models pull {name}); skipped", file=sys.stderr)
            continue
        for precision in args.precisions:
            rows.append(measure(name, precision, beir, cache))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
