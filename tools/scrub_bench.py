"""Time engram.scrub.scrub_text on ordinary text: a 2,000-character English text and a 50-memory sample.

    python tools/scrub_bench.py [--locomo ../shared/data/locomo/locomo_dev.json]

The English text is LoCoMo dialogue turns joined up to 2,000 characters; the sample is 25 LoCoMo session
summaries and the first 25 innocent texts of tests/data/secrets (code, config, logs). Prints medians in ms.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engram.scrub import scrub_text  # noqa: E402
from tests.helpers.secret_corpus import load_innocent  # noqa: E402


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json")
    args = parser.parse_args(argv)
    conversations = json.loads(args.locomo.read_text())
    turns = [
        turn["text"]
        for conversation in conversations
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    english = " ".join(turns)[:2000]
    summaries = [s for conversation in conversations for s in conversation["session_summary"].values()][:25]
    sample = summaries + load_innocent()[:25]
    scrub_text(english)  # compiles the rules
    print(f"2,000-character English text: median {median_ms(lambda: scrub_text(english), 300):.3f} ms")
    per_memory = [median_ms(functools.partial(scrub_text, memory), 50) for memory in sample]
    print(
        f"{len(sample)} memories (mean {statistics.mean(map(len, sample)):.0f} characters): median "
        f"{statistics.median(per_memory):.3f} ms, max {max(per_memory):.3f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
