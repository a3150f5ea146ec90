"""Hook latency: how long an agent waits for Engram's hook command, per event type (p50/p95 over cold processes),
measured as the agent runs it (a shell, the payload on stdin, until the process exits and its pipes close).
No node is needed: captures stay in the spool of a temporary data dir. Run: python -m bench.hooks [--runs N]."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from engram.hooks.install import command, shell

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "hooks" / "flaky_login.json"
GAP_SECONDS = 0.2  # between calls, as between an agent's tool uses: the previous capture's work is done


def measure(runs: int) -> dict[str, tuple[float, float]]:
    events = json.loads(FIXTURE.read_text())["events"]
    by_name: dict[str, dict[str, object]] = {}
    for payload in events:
        by_name.setdefault(str(payload["hook_event_name"]), payload)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "engram"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {"ENGRAM_PORT": "9"}
        results = {}
        for name, payload in by_name.items():
            if name == "SessionStart":
                continue  # waits for the node's session context by design (up to 3 s without a node)
            line = shell(command("claude-code", name, home))
            times = []
            for i in range(runs):
                body = json.dumps(payload | {"session_id": f"bench-{name}-{i % 5}", "cwd": tmp})
                time.sleep(GAP_SECONDS)
                started = time.perf_counter()
                subprocess.run(["bash", "-c", line], input=body, capture_output=True, text=True, env=env, check=True)
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            results[name] = (statistics.median(times), times[max(0, round(0.95 * len(times)) - 1)])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    baseline = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        baseline.append((time.perf_counter() - started) * 1000)
    print(f"hook latency over {args.runs} cold processes (bash itself: p50 {statistics.median(baseline):.1f} ms)")
    for name, (p50, p95) in measure(args.runs).items():
        print(f"  {name:20} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
