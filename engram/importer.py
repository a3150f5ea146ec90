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
# Well under the server's import body limit (ENGRAM_MAX_IMPORT_BYTES, 32 MiB by default).
DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
STATE_SUFFIX = ".engram-import.json"


@dataclass(slots=True)
class ImportReport:
    imported: int = 0  # newly stored
    already_present: int = 0  # stored by an earlier import (same source_id): nothing new written
    rejected: list[tuple[int, str]] = field(default_factory=list)
    last_line: int = 0
    last_seq: int = 0
    seconds: float = 0.0


def state_path(source: Path) -> Path:
    return source.with_name(source.name + STATE_SUFFIX)


def _chunks(
    source: Path, start_after: int, size: int, max_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[tuple[int, list[str]]]:
    """(first line number, raw lines) chunks after line start_after, each at most size lines and about max_bytes
    (a single longer line is a chunk of its own); blank lines keep their numbers."""
    chunk: list[str] = []
    chunk_bytes = 0
    first = start_after + 1
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if number <= start_after:
                continue
            line = line.rstrip("\n")
            if chunk and chunk_bytes + len(line) > max_bytes:
                yield first, chunk
                chunk, chunk_bytes = [], 0
            if not chunk:
                first = number
            chunk.append(line)
            chunk_bytes += len(line) + 1
            if len(chunk) >= size:
                yield first, chunk
                chunk, chunk_bytes = [], 0
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
            body = answer_json(response)
            if response.status_code >= 400:
                if "resume_from" in body:  # the import stopped part-way: keep what was stored, resume after it
                    _count(report, body, last_line=body["last_line"])
                    state.write_text(json.dumps({"last_line": report.last_line, "last_seq": report.last_seq}))
                raise ImportFailed(problem_text(response), report)
            _count(report, body, last_line=first + len(lines) - 1)
            state.write_text(json.dumps({"last_line": report.last_line, "last_seq": report.last_seq}))
            if bar is not None:
                bar.update(report.last_line)
    if bar is not None:
        bar.close()
    report.seconds = time.monotonic() - started
    state.unlink(missing_ok=True)  # finished: the next run starts from the top
    return report


def _count(report: ImportReport, body: dict, *, last_line: int) -> None:  # type: ignore[type-arg]
    report.imported += body["imported"]
    report.already_present += body.get("already_present", 0)
    report.rejected.extend((r["line"], r["reason"]) for r in body["rejected"])
    report.last_line = max(report.last_line, last_line)
    report.last_seq = body["last_seq"] or report.last_seq


def answer_json(response: httpx.Response) -> dict:  # type: ignore[type-arg]
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


class ImportFailed(RuntimeError):
    """The server refused a chunk; the report says how far the import got (a rerun resumes there)."""

    def __init__(self, detail: str, report: ImportReport) -> None:
        super().__init__(f"{detail} (imported up to line {report.last_line}; rerun the same command to resume)")
        self.report = report


def problem_text(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"HTTP {response.status_code}: {body.get('detail') or body.get('title') or body}"
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"


def print_summary(report: ImportReport, out=sys.stderr) -> None:  # type: ignore[no-untyped-def]
    rate = report.imported / report.seconds if report.seconds else 0.0
    present = f"{report.already_present} already present (not written again); " if report.already_present else ""
    print(f"imported {report.imported} new memories in {report.seconds:.1f}s ({rate:.0f}/s); {present}"
          f"rejected {len(report.rejected)}; log sequence {report.last_seq}", file=out)  # fmt: skip
    for line, reason in report.rejected[:20]:
        print(f"  line {line}: {reason}", file=out)
    if len(report.rejected) > 20:
        print(f"  … and {len(report.rejected) - 20} more", file=out)
