"""`engram status`: the node's readiness, index lag, counts, disk and sync, for people (text) and scripts (--json)."""

from __future__ import annotations

import json
import sys
from typing import IO, Any

import httpx

from engram.progress import format_bytes

EXIT_READY = 0
EXIT_NOT_READY = 1
EXIT_UNREACHABLE = 2


def fetch_status(base_url: str, *, api_key: str | None = None, timeout: float = 10.0) -> dict[str, Any]:
    """GET /v1/status; raises httpx.HTTPError when the node cannot be reached, RuntimeError when it refuses."""
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


def render(status: dict[str, Any], url: str) -> str:
    """The human-readable form: one line per aspect, problems last with what to do."""
    node = status["node"]
    state = "ready" if status["ready"] else "NOT READY"
    uptime = _duration(node["uptime_seconds"]) if node.get("uptime_seconds") is not None else "?"
    lines = [f"Engram {node['version']} at {url}: {state} (pid {node['pid']}, up {uptime})"]
    services = " · ".join(f"{name} {state}" for name, state in status["services"].items())
    lines.append(f"  services  {services or 'none answer'}")
    index = status.get("index")
    if index:
        lines.append(
            f"  index     {index['applied_seq']:,} of {index['log_last_seq']:,} log entries applied "
            f"(lag {index['lag']:,}) · {index['memories']:,} active memories in your namespace"
        )
        rerank = index.get("reranker_model") or "off"
        lines.append(f"  models    embedding {index['embedding_model']} · rerank {rerank}")
    else:
        lines.append("  index     unknown (the search service does not answer)")
    disk = status.get("disk")
    if disk:
        lines.append(
            f"  disk      {format_bytes(disk['free_bytes'])} free in {disk['path']} "
            f"(writes stop below {format_bytes(disk['reserve_bytes'])})"
        )
    lines.append(f"  sync      {status['sync']['state']}")
    problems = status.get("problems") or []
    if problems:
        lines.append("  problems")
        lines.extend(f"    - {p['condition']}: {p['detail']}" for p in problems)
    return "\n".join(lines)


def run(base_url: str, *, api_key: str | None, as_json: bool, out: IO[str] = sys.stdout) -> int:
    """Prints the status; exit code 0 ready, 1 not ready, 2 unreachable or refused."""
    try:
        status = fetch_status(base_url, api_key=api_key)
    except httpx.HTTPError as e:
        print(
            f"engram: no Engram node answers at {base_url} ({type(e).__name__}). Start one with `engram serve`, "
            "or pass --url / --home.",
            file=sys.stderr,
        )
        return EXIT_UNREACHABLE
    except RuntimeError as e:
        print(f"engram: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(json.dumps(status, indent=2) if as_json else render(status, base_url), file=out)
    return EXIT_READY if status["ready"] else EXIT_NOT_READY


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
