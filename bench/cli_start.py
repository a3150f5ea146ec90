"""How long an everyday `engram` command takes against a running node, beside what it cannot go below: a bare Python
start and the node's own answer (issue 34 point 4).

    python -m bench.cli_start --home DATA_DIR --tool before=/venv-a/bin/engram --tool after=/venv-b/bin/engram

Each round runs, in turn: `python -S -c pass` and `python -c pass` of the first tool's interpreter, the node's answer
to the command's request (one request on a fresh connection, from this process, as the command sends it), and the
command of each tool (its data dir's node found through node.json, as a user runs it). Rounds alternate the tools so
that the machine's load falls on all alike; the medians (ms) and the load average are printed as JSON."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

DEFAULT_COMMAND = ("search", "redis port")


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return elapsed


def _answer(http_url: str, query: str) -> float:
    """The node's answer to `engram search QUERY`'s request, on a fresh connection (as the command makes one)."""
    from engram import plainhttp

    host, _, port = http_url.removeprefix("http://").partition(":")
    body = json.dumps({"query": query, "filters": {}}).encode()
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    start = time.perf_counter()
    status, _, _ = plainhttp.request("POST", host, int(port), "/v1/memories:search", headers=headers, body=body,
                                     timeout=30)  # fmt: skip
    elapsed = (time.perf_counter() - start) * 1000
    if status != 200:
        raise SystemExit(f"the node answered {status}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cli_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True, help="the data dir of a running node")
    parser.add_argument("--tool", action="append", required=True, metavar="NAME=PATH", help="an engram script")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("command", nargs="*", default=list(DEFAULT_COMMAND), help="default: search 'redis port'")
    args = parser.parse_args()
    tools = dict(item.split("=", 1) for item in args.tool)
    python = str(Path(next(iter(tools.values()))).parent / "python")
    http_url = json.loads((Path(args.home) / "node.json").read_text())["http_url"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PYTHON"))} | {"ENGRAM_HOME": args.home}
    times: dict[str, list[float]] = {"python -S -c pass": [], "python -c pass": [], "node answer": []}
    times |= {name: [] for name in tools}
    loads = [os.getloadavg()[0]]
    for run in range(args.runs):
        times["python -S -c pass"].append(_timed([python, "-S", "-c", "pass"], env))
        times["python -c pass"].append(_timed([python, "-c", "pass"], env))
        if args.command[0] == "search":
            times["node answer"].append(_answer(http_url, args.command[1]))
        order = list(tools.items()) if run % 2 == 0 else list(reversed(tools.items()))
        for name, path in order:
            times[name].append(_timed([path, *args.command], env))
    loads.append(os.getloadavg()[0])
    print(json.dumps({
        "command": ["engram", *args.command], "runs": args.runs, "load_average": loads,
        "median_ms": {name: round(statistics.median(values), 1) for name, values in times.items() if values},
        "p90_ms": {name: round(statistics.quantiles(values, n=10)[-1], 1) for name, values in times.items()
                   if len(values) > 1},
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
