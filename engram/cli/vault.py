"""`engram import FILE.jsonl|DIR` and `engram export --format markdown DIR`: a namespace's memories in and out of a
node through its REST API, as JSON lines (engram/formats/importer.py) or a Markdown vault (engram/formats/vault.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from engram import plural
from engram.cli.common import URL_HELP, add_home, no_node, node_url, sub
from engram.config import Settings
from engram.formats.importer import DEFAULT_CHUNK_LINES, ImportReport

if TYPE_CHECKING:
    import httpx

    from engram.formats.vault import ExportReport, Note, VaultImportReport

EXIT_OK = 0
EXIT_FAILED = 1  # the node refused, or the folder cannot be written
EXIT_USAGE = 2  # nothing was done: no node answers, or the file or folder is unusable
EXIT_REJECTED = 3  # the import finished, but some lines or files were rejected
PAGE_SIZE = 100  # the list endpoint's maximum
NDJSON = {"Content-Type": "application/x-ndjson"}
READ_TIMEOUT = 600.0  # a bulk import request may take this long to answer
CONNECT_TIMEOUT = 30.0
JSON_HELP = "print the outcome as JSON on stdout (for scripts), without the progress bar"


def register(subparsers: Any) -> None:
    """Registers ``import`` and ``export`` on the ``engram`` sub-command parsers."""
    importing = sub(
        subparsers,
        "import",
        "bulk-import a JSON-lines file (one save_memory object per line) or a Markdown vault folder",
    )
    add_home(importing)
    importing.add_argument(
        "file", help="the .jsonl file ('-': JSON lines from stdin), or a folder of Markdown notes (as `engram export` "
        "writes)",
    )  # fmt: skip
    importing.add_argument("--url", help=URL_HELP)
    importing.add_argument("--restart", action="store_true", help="ignore saved progress and start at line 1")
    importing.add_argument("--chunk", type=int, default=DEFAULT_CHUNK_LINES, help="lines per request (default 1000)")
    importing.add_argument("--json", action="store_true", help=JSON_HELP)
    importing.set_defaults(func=_import)

    exporting = sub(
        subparsers,
        "export",
        "write every memory of your namespace to a folder: one Markdown file each, YAML frontmatter",
    )
    add_home(exporting)
    exporting.add_argument("dir", help="the folder (created if missing; files of the same memories are overwritten)")
    exporting.add_argument("--format", choices=("markdown",), default="markdown", help="the format (default: markdown)")
    exporting.add_argument("--include-secret", action="store_true", help="also write memories of sensitivity secret")
    exporting.add_argument("--url", help=URL_HELP)
    exporting.add_argument("--json", action="store_true", help=JSON_HELP)
    exporting.set_defaults(func=_export)


def _import(args: argparse.Namespace, settings: Settings) -> int:
    if args.file == "-":
        return _import_stdin(args, settings)
    source = Path(args.file)
    if source.is_dir():  # a Markdown vault (`engram export --format markdown DIR`)
        return run_vault_import(source, node_url(args.url, settings), api_key=settings.api_key, as_json=args.json)
    if not source.is_file():
        print(f"engram: no such file: {source}", file=sys.stderr)
        return EXIT_USAGE
    return run_file_import(
        source, node_url(args.url, settings), api_key=settings.api_key, restart=args.restart, chunk_lines=args.chunk,
        as_json=args.json,
    )  # fmt: skip


def _import_stdin(args: argparse.Namespace, settings: Settings) -> int:
    """`engram import -`: JSON lines from stdin, kept in a private temporary file while they are sent (the chunks and
    the progress bar read a file). A pipe cannot be read again, so there is no resuming: each run starts at line 1."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="engram-import-"))  # 0700: the lines may be private
    try:
        source = folder / "stdin.jsonl"
        with source.open("wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        return run_file_import(
            source, node_url(args.url, settings), api_key=settings.api_key, restart=True, chunk_lines=args.chunk,
            as_json=args.json, label="-",
        )  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _export(args: argparse.Namespace, settings: Settings) -> int:
    url = node_url(args.url, settings)
    return run_export(
        Path(args.dir), url, api_key=settings.api_key, include_secret=args.include_secret, as_json=args.json
    )


def print_json(answer: dict[str, Any], out: IO[str] | None = None) -> None:
    print(json.dumps(answer, indent=2, ensure_ascii=False), file=out or sys.stdout)


def _client(base_url: str, api_key: str | None) -> httpx.Client:
    import httpx  # here, not at the top: every `engram` command builds the parsers that import this module

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx.Timeout(CONNECT_TIMEOUT, read=READ_TIMEOUT)
    return httpx.Client(base_url=base_url, headers=headers, timeout=timeout)


def answer_json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def problem_text(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"HTTP {response.status_code}: {body.get('detail') or body.get('title') or body}"
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"


# --- a JSON-lines file --------------------------------------------------------------------------------------


class ImportFailed(RuntimeError):
    """The server refused a chunk; the report says how far the import got (a rerun resumes there)."""

    def __init__(self, detail: str, report: ImportReport) -> None:
        super().__init__(f"{detail} (imported up to line {report.last_line}; rerun the same command to resume)")
        self.report = report


def run_file_import(
    source: Path, base_url: str, *, api_key: str | None, restart: bool = False, chunk_lines: int = DEFAULT_CHUNK_LINES,
    as_json: bool = False, label: str | None = None,
) -> int:  # fmt: skip
    """`engram import FILE.jsonl`: exit 0 all imported (or present), 3 some lines rejected, 1 refused or unreachable.
    With ``as_json`` the outcome is JSON on stdout (file_import_json), the refusal included; ``label`` names the
    source there (`-` for stdin)."""
    import httpx

    try:
        report = import_file(
            source, base_url, api_key=api_key, restart=restart, chunk_lines=chunk_lines, progress=not as_json
        )
    except ImportFailed as e:
        if as_json:
            print_json({**file_import_json(source, e.report, label), "error": str(e)})
        else:
            print_summary(e.report)
        print(f"engram: {e}", file=sys.stderr)
        return EXIT_FAILED
    except httpx.TransportError as e:
        print(f"engram: cannot reach Engram at {base_url}: {e}. Is the node running (engram serve)?", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        print_json(file_import_json(source, report, label))
    else:
        print_summary(report)
    return EXIT_OK if not report.rejected else EXIT_REJECTED


def file_import_json(source: Path, report: ImportReport, label: str | None = None) -> dict[str, Any]:
    """`engram import FILE.jsonl --json`: the counts, each rejected line with its reason, where a rerun resumes."""
    return {
        "source": label or str(source), "imported": report.imported, "already_present": report.already_present,
        "rejected": [{"line": line, "reason": reason} for line, reason in report.rejected],
        "last_line": report.last_line, "last_seq": report.last_seq, "seconds": round(report.seconds, 3),
    }  # fmt: skip


def import_file(
    source: Path,
    base_url: str,
    *,
    api_key: str | None = None,
    restart: bool = False,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    progress: bool = True,
) -> ImportReport:
    """Imports source; after each acknowledged chunk the position is saved so a rerun resumes after it."""
    from engram.formats.importer import chunks, count_lines, finished, resume_after, save_position
    from engram.progress import progress_bar

    start_after = resume_after(source, restart=restart)
    report = ImportReport(last_line=start_after)
    bar = progress_bar(count_lines(source), f"importing {source.name}", unit="lines") if progress else None
    if bar is not None:
        bar.update(start_after)
    started = time.monotonic()
    with _client(base_url, api_key) as client:
        for first, lines in chunks(source, start_after, chunk_lines):
            content = "\n".join(lines)
            response = client.post("/v1/memories:import", params={"first_line": first}, content=content, headers=NDJSON)
            body = answer_json(response)
            if response.status_code >= 400:
                if "resume_from" in body:  # the import stopped part-way: keep what was stored, resume after it
                    report.count(body, last_line=body["last_line"])
                    save_position(source, report)
                raise ImportFailed(problem_text(response), report)
            report.count(body, last_line=first + len(lines) - 1)
            save_position(source, report)
            if bar is not None:
                bar.update(report.last_line)
    if bar is not None:
        bar.close()
    report.seconds = time.monotonic() - started
    finished(source)
    return report


def print_summary(report: ImportReport, out: IO[str] | None = None) -> None:
    out = out or sys.stderr
    rate = report.imported / report.seconds if report.seconds else 0.0
    present = f"{report.already_present} already present (not written again); " if report.already_present else ""
    print(f"imported {plural.memories(report.imported, 'new')} in {report.seconds:.1f}s ({rate:.0f}/s); {present}"
          f"rejected {len(report.rejected)}; log sequence {report.last_seq}", file=out)  # fmt: skip
    for line, reason in report.rejected[:20]:
        print(f"  line {line}: {reason}", file=out)
    if len(report.rejected) > 20:
        print(f"  … and {len(report.rejected) - 20} more", file=out)


# --- a Markdown vault ---------------------------------------------------------------------------------------


def run_export(
    folder: Path, base_url: str, *, api_key: str | None, include_secret: bool = False, err: IO[str] | None = None,
    as_json: bool = False,
) -> int:  # fmt: skip
    """`engram export --format markdown DIR`: exit 0 written, 1 refused or not writable, 2 no node answers."""
    import httpx

    from engram.formats.vault import VaultError

    err = err or sys.stderr
    try:
        report = export_vault(folder, base_url, api_key=api_key, include_secret=include_secret, progress=not as_json)
    except httpx.TransportError as e:
        print(no_node(base_url, e), file=err)
        return EXIT_USAGE
    except (VaultError, OSError) as e:
        print(f"engram: {e}", file=err)
        return EXIT_FAILED
    if as_json:
        print_json({"folder": str(report.folder), "written": report.written,
                    "skipped_secret": report.skipped_secret, "moved": report.moved})  # fmt: skip
    else:
        print(report.summary(), file=err)
    return EXIT_OK


def run_vault_import(
    source: Path, base_url: str, *, api_key: str | None, err: IO[str] | None = None, as_json: bool = False
) -> int:
    """`engram import DIR`: exit 0 all imported (or present), 3 some files rejected, 1 refused, 2 no node answers."""
    import httpx

    from engram.formats.vault import VaultError, VaultImportReport, has_notes

    err = err or sys.stderr
    if not has_notes(source):
        print(
            f"engram: {source} is a folder without Markdown notes (*.md) to import as a vault. To import JSON "
            f"lines, pass one file (e.g. {source / 'memories.jsonl'}), or import each: "
            f'for f in {source}/*.jsonl; do engram import "$f"; done',
            file=err,
        )
        return EXIT_USAGE
    report = VaultImportReport()
    try:
        import_vault(source, base_url, api_key=api_key, report=report, progress=not as_json)
    except httpx.TransportError as e:
        print(no_node(base_url, e), file=err)
        return EXIT_USAGE
    except VaultError as e:
        if as_json:
            print_json({**vault_import_json(source, report), "error": str(e)})
        else:
            print(report.summary(source), file=err)
        print(f"engram: {e}", file=err)
        return EXIT_FAILED
    if as_json:
        print_json(vault_import_json(source, report))
    else:
        print(report.summary(source), file=err)
    return EXIT_REJECTED if report.rejected else EXIT_OK


def vault_import_json(source: Path, report: VaultImportReport) -> dict[str, Any]:
    """`engram import DIR --json`: the counts and each rejected file with its reason."""
    return {
        "source": str(source), "imported": report.imported, "already_present": report.already_present,
        "archived": report.archived, "rejected": [{"file": path, "reason": reason} for path, reason in report.rejected],
        "seconds": round(report.seconds, 3),
    }  # fmt: skip


def export_vault(
    folder: Path, base_url: str, *, api_key: str | None, include_secret: bool = False, progress: bool = True
) -> ExportReport:
    """Writes every memory of the caller's namespace under folder (engram.formats.vault.VaultWriter)."""
    from engram.formats.vault import VaultWriter
    from engram.progress import progress_bar

    writer = VaultWriter(folder, include_secret=include_secret)
    report = writer.report
    with _client(base_url, api_key) as client:
        stated = _answer(client.get("/v1/stats")).get("total")
        total = stated if isinstance(stated, int) else 0  # the bar's total; it grows if memories arrive meanwhile
        bar = progress_bar(total or None, "exporting", unit="memories") if progress else None
        try:
            for memory in memories(client):
                writer.write(memory)
                if bar is not None:
                    done = report.written + report.skipped_secret
                    bar.update(done, max(total, done))
        finally:
            if bar is not None:
                bar.close()
    return report


def import_vault(
    folder: Path,
    base_url: str,
    *,
    api_key: str | None,
    progress: bool = True,
    report: VaultImportReport | None = None,
) -> VaultImportReport:
    """Imports every Markdown file under folder (dot folders such as .obsidian skipped) that the namespace does not
    hold yet; a file that cannot be read is rejected with the reason, and the others go on."""
    from engram.formats.vault import VaultImportReport, chunks, known_ids, read_vault
    from engram.progress import progress_bar

    report = report if report is not None else VaultImportReport()
    started = time.monotonic()
    notes = read_vault(folder.resolve(), report)
    with _client(base_url, api_key) as client:
        known = known_ids(memories(client))
        fresh = [note for note in notes if not note.origins & known]
        report.already_present += len(notes) - len(fresh)
        bar = progress_bar(len(notes), f"importing {folder.name}", unit="files") if progress else None
        if bar is not None:
            bar.update(report.already_present)
        try:
            for first, chunk in chunks(fresh):
                _import_chunk(client, first, chunk, report)
                if bar is not None:
                    bar.advance(len(chunk))
        finally:
            if bar is not None:
                bar.close()
            report.seconds = time.monotonic() - started
    return report


def memories(client: httpx.Client) -> Iterator[dict[str, Any]]:
    """Every memory of the caller's namespace, in every status, page by page (most recent first)."""
    from engram.model import STATUSES

    token: str | None = None
    while True:
        params: dict[str, Any] = {"limit": PAGE_SIZE, "status": list(STATUSES)}
        if token:
            params["page_token"] = token
        page = _answer(client.get("/v1/memories", params=params))
        yield from page.get("memories") or []
        token = page.get("next_page_token")
        if not token:
            return


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON body of a successful answer; a refusal raises VaultError with the node's problem detail."""
    from engram.formats.vault import VaultError

    if response.status_code >= 400:
        hint = " Set ENGRAM_API_KEY to a key of the namespace." if response.status_code == 401 else ""
        raise VaultError(f"the node refused: {problem_text(response)}.{hint}")
    return answer_json(response)


def _import_chunk(client: httpx.Client, first: int, chunk: list[Note], report: VaultImportReport) -> None:
    """Sends one chunk to the bulk import; rejections are reported by file, archived notes archived again."""
    import json

    body = "\n".join(json.dumps(note.line, ensure_ascii=False) for note in chunk)
    response = client.post("/v1/memories:import", params={"first_line": first}, content=body.encode(), headers=NDJSON)
    answer = _answer(response)
    by_line = {first + offset: note for offset, note in enumerate(chunk)}
    for rejection in answer.get("rejected") or []:
        report.rejected.append((by_line[rejection["line"]].path.as_posix(), str(rejection["reason"])))
    for item in answer.get("items") or []:
        if item.get("already_present"):
            report.already_present += 1
            continue
        report.imported += 1
        if by_line[item["line"]].archived:
            _answer(client.delete(f"/v1/memories/{quote(str(item['id']), safe='')}"))
            report.archived += 1
