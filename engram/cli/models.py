"""`engram models pull|import|list|use`: download, import, list and select cross-encoder rerankers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from engram.cli.common import add_home
from engram.config import Settings
from engram.models.store import (
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


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Registers ``models pull|import|list|use`` on the ``engram`` sub-command parsers."""
    models = subparsers.add_parser("models", help="manage the reranker model (a cross-encoder)")
    models.set_defaults(func=_run)
    sub = models.add_subparsers(dest="models_command", required=True)

    pulling = sub.add_parser("pull", help=f"download a cross-encoder from Hugging Face, e.g. {EXAMPLE_MODEL}")
    pulling.add_argument("hub_id", metavar="HUB-ID", help="model id, org/name")
    pulling.add_argument("--revision", default=DEFAULT_REVISION, help="branch, tag or commit (default main)")
    add_home(pulling).set_defaults(act=_pull)
    importing = sub.add_parser("import", help="install a cross-encoder from a local directory (offline)")
    importing.add_argument("directory", metavar="DIR", type=Path, help="holds config.json, model.safetensors, ...")
    importing.add_argument("--name", help="install name (default: the directory's name)")
    add_home(importing).set_defaults(act=_import)
    listing = sub.add_parser("list", help="list installed rerankers; * marks the active one")
    add_home(listing).set_defaults(act=_list)
    using = sub.add_parser("use", help="make an installed reranker the active one")
    using.add_argument("name")
    add_home(using).set_defaults(act=_use)
    return models


@dataclass(frozen=True, slots=True)
class Store:
    """Where an action works: the installed models, where their ONNX files go, the hub, and what it prints to."""

    models_dir: Path
    cache_dir: Path | None
    endpoint: str
    token: str | None
    out: TextIO
    err: TextIO


Action = Callable[[argparse.Namespace, Store], int]


def _run(args: argparse.Namespace, settings: Settings) -> int:
    return run(args, settings.model_cache_dir, endpoint=settings.hf_endpoint, token=settings.hf_token)


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
    store = Store(Path(models_dir), cache_dir, endpoint, token, out or sys.stdout, err or sys.stderr)
    act: Action = args.act
    try:
        return act(args, store)
    except ModelError as e:
        print(f"engram: {e}", file=store.err)
        return 1


def _list(args: argparse.Namespace, store: Store) -> int:
    models = list_installed(store.models_dir)
    if not models:
        print(
            f"No reranker installed. Run `engram models pull {EXAMPLE_MODEL}`, or `engram models import DIR` offline.",
            file=store.out,
        )
        return 0
    for m in models:
        when = datetime.fromtimestamp(m.installed_at).strftime("%Y-%m-%d %H:%M")
        mark = "*" if m.active else " "
        print(f"{mark} {m.name}\t{m.model_id}\t{format_bytes(m.size_bytes)}\t{when}\t{m.source}", file=store.out)
    return 0


def _use(args: argparse.Namespace, store: Store) -> int:
    path = activate(store.models_dir, args.name)
    print(f"{args.name} is now the active reranker ({path}). {_RESTART_HINT}", file=store.out)
    return 0


def _pull(args: argparse.Namespace, store: Store) -> int:
    progress = _DownloadProgress(store.err)
    try:
        path = pull(
            args.hub_id,
            store.models_dir,
            endpoint=store.endpoint,
            revision=args.revision,
            token=store.token,
            progress=progress,
            cache_dir=store.cache_dir,
        )
    finally:
        progress.close()
    return _installed(path, store)


def _import(args: argparse.Namespace, store: Store) -> int:
    path = import_dir(args.directory, store.models_dir, name=args.name, cache_dir=store.cache_dir)
    return _installed(path, store)


def _installed(path: Path, store: Store) -> int:
    print(f"Installed {path.name} at {path}; it is the active reranker. {_RESTART_HINT}", file=store.out)
    return 0


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
