"""`engram import FILE.jsonl`: streams a JSON-lines file to the gateway's bulk import, resumably, with progress."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

DEFAULT_CHUNK_LINES = 1000
STATE_SUFFIX = ".engram-import.json"


@dataclass(slots=True)
class ImportReport:
    imported: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    last_line: int = 0
    last_seq: int = 0
    seconds: float = 0.0


def state_path(source: Path) -> Path:
    return source.with_name(source.name + STATE_SUFFIX)


def _chunks(source: Path, start_after: int, size: int) -> Iterator[tuple[int, list[str]]]:
    """(first line number, raw lines) chunks after line start_after; blank lines keep their numbers."""
    chunk: list[str] = []
    first = start_after + 1
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if number <= start_after:
                continue
            if not chunk:
                first = number
            chunk.append(line.rstrip("\n"))
            if len(chunk) >= size:
                yield first, chunk
                chunk = []
    if chunk:
        yield first, chunk


def count_lines(source: Path) -> int:
    with source.open("rb") as handle:
        return sum(1 for _ in handle)


def run_import(
    source: Path,
    base_url: str,
    *,
    api_key: str | None = None,
    restart: bool = False,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    progress: bool = True,
) -> ImportReport:
    """Imports source; after each acknowledged chunk the position is saved so a rerun resumes after it."""
    from engram.progress import progress_bar

    state = state_path(source)
    start_after = 0
    if state.exists() and not restart:
        start_after = int(json.loads(state.read_text()).get("last_line", 0))
    total = count_lines(source)
    report = ImportReport(last_line=start_after)
    headers = {"Content-Type": "application/x-ndjson"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    bar = progress_bar(total, f"importing {source.name}", unit="lines") if progress else None
    if bar is not None:
        bar.update(start_after)
    started = time.monotonic()
    with httpx.Client(base_url=base_url, headers=headers, timeout=httpx.Timeout(30, read=600)) as client:
        for first, lines in _chunks(source, start_after, chunk_lines):
            response = client.post("/v1/memories:import", params={"first_line": first}, content="\n".join(lines))
            if response.status_code >= 400:
                raise ImportFailed(_problem(response), report)
            body = response.json()
            report.imported += body["imported"]
            report.rejected.extend((r["line"], r["reason"]) for r in body["rejected"])
            report.last_line = first + len(lines) - 1
            report.last_seq = body["last_seq"] or report.last_seq
            state.write_text(json.dumps({"last_line": report.last_line, "last_seq": report.last_seq}))
            if bar is not None:
                bar.update(report.last_line)
    if bar is not None:
        bar.close()
    report.seconds = time.monotonic() - started
    state.unlink(missing_ok=True)  # finished: the next run starts from the top
    return report


class ImportFailed(RuntimeError):
    """The server refused a chunk; the report says how far the import got (a rerun resumes there)."""

    def __init__(self, detail: str, report: ImportReport) -> None:
        super().__init__(f"{detail} (imported up to line {report.last_line}; rerun the same command to resume)")
        self.report = report


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"HTTP {response.status_code}: {body.get('detail') or body.get('title') or body}"
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"


def print_summary(report: ImportReport, out=sys.stderr) -> None:  # type: ignore[no-untyped-def]
    rate = report.imported / report.seconds if report.seconds else 0.0
    print(f"imported {report.imported} memories in {report.seconds:.1f}s ({rate:.0f}/s); "
          f"rejected {len(report.rejected)}; log sequence {report.last_seq}", file=out)  # fmt: skip
    for line, reason in report.rejected[:20]:
        print(f"  line {line}: {reason}", file=out)
    if len(report.rejected) > 20:
        print(f"  … and {len(report.rejected) - 20} more", file=out)
