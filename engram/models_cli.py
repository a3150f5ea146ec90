"""The `engram models` command: pull, import, list and select cross-encoder rerankers."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from engram.modelstore import (
    DEFAULT_HF_ENDPOINT,
    DEFAULT_REVISION,
    EXAMPLE_MODEL,
    ModelError,
    activate,
    import_dir,
    list_installed,
    pull,
)
from engram.progress import ProgressBar, format_bytes, progress_bar

_RESTART_HINT = "The search service loads it at its next start."
_LABEL_WIDTH = 24  # longest model file name (special_tokens_map.json) plus a space, so bars line up


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``models pull|import|list|use`` on the ``engram`` sub-command parsers; dest ``models_command``."""
    models = subparsers.add_parser("models", help="manage the reranker model (a cross-encoder)")
    sub = models.add_subparsers(dest="models_command", required=True)

    def home(p: argparse.ArgumentParser) -> None:
        p.add_argument("--home", help="data dir (ENGRAM_HOME, default ~/.engram)")

    pulling = sub.add_parser("pull", help=f"download a cross-encoder from Hugging Face, e.g. {EXAMPLE_MODEL}")
    pulling.add_argument("hub_id", metavar="HUB-ID", help="model id, org/name")
    pulling.add_argument("--revision", default=DEFAULT_REVISION, help="branch, tag or commit (default main)")
    home(pulling)
    importing = sub.add_parser("import", help="install a cross-encoder from a local directory (offline)")
    importing.add_argument("directory", metavar="DIR", type=Path, help="holds config.json, model.safetensors, ...")
    importing.add_argument("--name", help="install name (default: the directory's name)")
    home(importing)
    listing = sub.add_parser("list", help="list installed rerankers; * marks the active one")
    home(listing)
    using = sub.add_parser("use", help="make an installed reranker the active one")
    using.add_argument("name")
    home(using)
    return models


class _DownloadProgress:
    """Turns pull's per-file ``(file, done, total)`` reports into one progress line per file."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._file: str | None = None
        self._bar: ProgressBar | None = None

    def __call__(self, file_name: str, done: int, total: int | None) -> None:
        if self._bar is None or self._file != file_name:
            self.close()
            self._file = file_name
            self._bar = progress_bar(total, file_name.ljust(_LABEL_WIDTH), stream=self._stream)
        self._bar.update(done, total)
        if total is not None and done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._file = None


def run(
    args: argparse.Namespace,
    models_dir: Path,
    *,
    endpoint: str = DEFAULT_HF_ENDPOINT,
    token: str | None = None,
    cache_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one ``engram models`` sub-command; returns the process exit code.

    ``models_dir`` is ``Settings.model_cache_dir``; ONNX files go to ``cache_dir`` (default
    ``models_dir``, as for the embedder). Errors print one line to ``err`` and return 1.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        return _run(args, Path(models_dir), endpoint=endpoint, token=token, cache_dir=cache_dir, out=out, err=err)
    except ModelError as e:
        print(f"engram: {e}", file=err)
        return 1


def _run(
    args: argparse.Namespace,
    models_dir: Path,
    *,
    endpoint: str,
    token: str | None,
    cache_dir: Path | None,
    out: TextIO,
    err: TextIO,
) -> int:
    command = args.models_command
    if command == "list":
        return _list(models_dir, out)
    if command == "use":
        path = activate(models_dir, args.name)
        print(f"{args.name} is now the active reranker ({path}). {_RESTART_HINT}", file=out)
        return 0
    if command == "pull":
        progress = _DownloadProgress(err)
        try:
            path = pull(
                args.hub_id,
                models_dir,
                endpoint=endpoint,
                revision=args.revision,
                token=token,
                progress=progress,
                cache_dir=cache_dir,
            )
        finally:
            progress.close()
    elif command == "import":
        path = import_dir(args.directory, models_dir, name=args.name, cache_dir=cache_dir)
    else:
        raise ModelError(f"unknown models command {command!r}; see `engram models --help`")
    print(
        f"Installed {path.name} at {path}; it is the active reranker. {_RESTART_HINT}",
        file=out,
    )
    return 0


def _list(models_dir: Path, out: TextIO) -> int:
    models = list_installed(models_dir)
    if not models:
        print(
            f"No reranker installed. Run `engram models pull {EXAMPLE_MODEL}`, or `engram models import DIR` offline.",
            file=out,
        )
        return 0
    for m in models:
        when = datetime.fromtimestamp(m.installed_at).strftime("%Y-%m-%d %H:%M")
        mark = "*" if m.active else " "
        print(f"{mark} {m.name}\t{m.model_id}\t{format_bytes(m.size_bytes)}\t{when}\t{m.source}", file=out)
    return 0
