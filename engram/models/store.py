"""The model store (rerankers, and NLI models for consolidation): download from a Hugging Face-style hub or import a
directory, verify, install, select."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np

from engram.errors import EngramError
from engram.models.nli import OnnxNli, is_nli, nli_dir
from engram.models.rerank import (
    ACTIVE_FILE,
    METADATA_FILE,
    REQUIRED_FILES,
    SEQUENCE_CLASSIFIER,
    OnnxReranker,
    architectures,
    installed_at,
    installed_models,
    looks_installed,
    read_active,
    rerankers_dir,
)

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
DEFAULT_REVISION = "main"
DEFAULT_TIMEOUT_SECONDS = 30.0  # per connect/read, not for the whole download
DEFAULT_MAX_FILE_BYTES = 2 * 1024**3  # BERT-large cross-encoders are ~1.3 GB; more is not a model we run
OPTIONAL_FILES = ("tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
MODEL_FILES = (*REQUIRED_FILES, *OPTIONAL_FILES)
EXAMPLE_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
_CHUNK_BYTES = 1 << 20
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")  # branch, tag, commit or refs/pr/N
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_IMPORT_HINT = (
    "download config.json, model.safetensors and tokenizer.json on a machine that can reach the hub "
    "and run `engram models import DIR`"
)

ProgressCallback = Callable[[str, int, int | None], None]
"""Called as ``progress(file_name, bytes_done, bytes_total_or_None)``; the last call for a file has done == total."""


class ModelError(EngramError):
    """A model could not be pulled, imported or selected; the message says what to do instead."""

    code = "invalid_argument"


class InvalidModel(ModelError):
    """A model directory failed verification; nothing was installed."""


class DownloadError(ModelError):
    """The hub could not be reached or refused a file; nothing was installed."""

    code = "unavailable"


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """One directory under ``<models_dir>/rerankers``."""

    name: str
    path: Path
    model_id: str
    source: str
    installed_at: float
    size_bytes: int
    active: bool


# -- names ---------------------------------------------------------------------------------


def validate_hub_id(hub_id: str) -> str:
    """Return ``hub_id`` if it is a plain ``org/name`` id, else raise ModelError (before any request)."""
    if not _HUB_ID.fullmatch(hub_id) or ".." in hub_id:
        raise ModelError(f"{hub_id!r} is not a model id of the form org/name, e.g. {EXAMPLE_MODEL}.")
    return hub_id


def safe_name(hub_id: str) -> str:
    """Directory name for a hub id: ``org/name`` -> ``org--name`` (the Hugging Face cache convention)."""
    return validate_hub_id(hub_id).replace("/", "--")


def _validate_name(name: str) -> str:
    if not _NAME.fullmatch(name) or ".." in name or name == ACTIVE_FILE:
        raise ModelError(f"{name!r} is not a usable model name: use letters, digits, '.', '_' and '-'.")
    return name


def _name_from_dir(src: Path) -> str:
    name = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]+", "-", src.resolve().name)).strip(".-_")
    if not name:
        raise ModelError(f"Cannot derive a model name from {src}; pass one with --name.")
    return _validate_name(name)


def _validate_revision(revision: str) -> str:
    if not _REVISION.fullmatch(revision) or ".." in revision:
        raise ModelError(f"{revision!r} is not a revision: use a branch, tag or commit such as 'main'.")
    return revision


def validate_endpoint(endpoint: str) -> str:
    try:
        url = httpx.URL(endpoint)
    except httpx.InvalidURL as e:
        raise ModelError(f"{endpoint!r} is not a URL; the hub endpoint looks like {DEFAULT_HF_ENDPOINT}.") from e
    if url.scheme not in ("http", "https") or not url.host:
        raise ModelError(f"{endpoint!r} is not an http(s) URL; the hub endpoint looks like {DEFAULT_HF_ENDPOINT}.")
    return endpoint.rstrip("/")


# -- verification --------------------------------------------------------------------------


def check_config(config_path: Path, shown: str) -> None:
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidModel(f"{shown}: config.json cannot be read ({e}).") from e
    found = architectures(config) if isinstance(config, dict) else []
    if SEQUENCE_CLASSIFIER not in found:
        raise InvalidModel(
            f"{shown} is {found or 'a model without architectures'}, not a {SEQUENCE_CLASSIFIER} cross-encoder. "
            f"Use a BERT cross-encoder such as {EXAMPLE_MODEL}."
        )


def _check_layout(model_dir: Path, shown: str) -> None:
    """Cheap checks before copying or loading anything: required files and architecture."""
    if not (model_dir / "model.safetensors").is_file():
        raise InvalidModel(
            f"{shown} has no model.safetensors. Only safetensors weights are supported (pickle files such as "
            "pytorch_model.bin are never loaded); use a model that publishes model.safetensors."
        )
    missing = [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        raise InvalidModel(
            f"{shown} is missing {', '.join(missing)}. A cross-encoder directory needs "
            f"{', '.join(REQUIRED_FILES)} in Hugging Face layout."
        )
    check_config(model_dir / "config.json", shown)


def _verify(model_dir: Path, onnx_dir: Path, shown: str) -> Path:
    """Load, build and smoke-test the model; returns the ONNX file built in ``onnx_dir``."""
    _check_layout(model_dir, shown)
    try:
        reranker = OnnxReranker(model_dir, onnx_dir, threads=1)
        scores = reranker.score("q", ["d"])
    # Untrusted files go through three native loaders (safetensors, tokenizers, onnxruntime) that
    # raise unrelated exception types; any of them means "reject this model", with the cause shown.
    except Exception as e:
        raise InvalidModel(f"{shown} cannot be used as a reranker: {e}") from e
    if scores.shape != (1,) or not np.isfinite(scores).all():
        raise InvalidModel(f"{shown} produced non-finite scores {scores}; its weights are probably damaged.")
    return reranker.onnx_path


# -- installation --------------------------------------------------------------------------


@contextlib.contextmanager
def staging_dir(models_dir: Path) -> Iterator[Path]:
    """A temp dir inside ``rerankers/`` (same filesystem, so installing is a rename); always removed.

    If the block fails, directories this call created are removed too, so a rejected model leaves
    nothing behind.
    """
    root = rerankers_dir(models_dir)
    created = [d for d in (root, Path(models_dir)) if not d.exists()]
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    ok = False
    try:
        yield staging
        ok = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if not ok:
            for d in created:
                with contextlib.suppress(OSError):  # not empty: someone else is using it
                    d.rmdir()


def move_file(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(src, dest)
    except OSError:  # another filesystem: copy beside the target, then rename over it
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)


def replace_dir(staged: Path, target: Path) -> None:
    """Put ``staged`` at ``target``; an existing install is swapped out and then deleted."""
    if not target.exists():
        os.rename(staged, target)
        return
    old = target.with_name(f".old-{target.name}-{os.getpid()}-{time.monotonic_ns()}")
    os.rename(target, old)
    try:
        os.rename(staged, target)
    except OSError:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_active(models_dir: Path, name: str) -> None:
    root = rerankers_dir(models_dir)
    fd, tmp = tempfile.mkstemp(prefix=f".{ACTIVE_FILE}.", dir=root)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(name + "\n")
        os.replace(tmp, root / ACTIVE_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def install(
    staging: Path, models_dir: Path, *, name: str, metadata: dict[str, Any], cache_dir: Path, shown: str
) -> Path:
    """Verify ``staging/model``, then move its ONNX file into ``cache_dir`` and the model into place."""
    model_dir = staging / "model"
    (model_dir / METADATA_FILE).write_text(json.dumps(metadata, indent=2), encoding="utf-8")
    if is_nli(model_dir):  # contradiction/entailment/neutral: consolidation's NLI model, not a reranker
        return install_nli(model_dir, models_dir, name=name, onnx_dir=staging / "onnx", cache_dir=cache_dir,
                            shown=shown)  # fmt: skip
    onnx_path = _verify(model_dir, staging / "onnx", shown)
    # OnnxReranker names the file by model id and content hash, so the search service finds this one.
    move_file(onnx_path, Path(cache_dir) / onnx_path.name)
    target = rerankers_dir(models_dir) / name
    replace_dir(model_dir, target)
    _write_active(models_dir, name)
    return target


def install_nli(model_dir: Path, models_dir: Path, *, name: str, onnx_dir: Path, cache_dir: Path, shown: str) -> Path:
    """Verify an NLI model (three labels per pair, finite) and move it to ``<models_dir>/nli/<name>``; the newest
    installed is the one consolidation loads."""
    _check_layout(model_dir, shown)
    try:
        model = OnnxNli(model_dir, onnx_dir, threads=1)
        (found,) = model.infer([("a", "b")])
    except Exception as e:  # untrusted files through native loaders, as in _verify
        raise InvalidModel(f"{shown} cannot be used as an NLI model: {e}") from e
    if not all(np.isfinite([found.contradiction, found.entailment, found.neutral])):
        raise InvalidModel(f"{shown} produced non-finite probabilities; its weights are probably damaged.")
    move_file(model.onnx_path, Path(cache_dir) / model.onnx_path.name)
    target = nli_dir(models_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(model_dir, target)
    return target


def import_dir(src: Path, models_dir: Path, *, name: str | None = None, cache_dir: Path | None = None) -> Path:
    """Verify a local cross-encoder directory, install a copy as the active reranker, return its path.

    ``src`` needs config.json (architectures: BertForSequenceClassification), model.safetensors and
    tokenizer.json; tokenizer_config.json, special_tokens_map.json and vocab.txt are copied when
    present, nothing else. The copy is loaded, built to ONNX (kept in ``cache_dir``, default
    ``models_dir``) and smoke-tested before it lands in ``<models_dir>/rerankers/<name>`` (``name``
    defaults to the directory's name). A rejected directory leaves nothing behind.

    Raises:
        ModelError: ``src`` is not a directory or ``name`` is unusable.
        InvalidModel: the directory is not a loadable BERT cross-encoder.
    """
    src = Path(src).expanduser()
    if not src.is_dir():
        raise ModelError(f"{src} is not a directory. Pass the folder holding {', '.join(REQUIRED_FILES)}.")
    name = _validate_name(name) if name is not None else _name_from_dir(src)
    _check_layout(src, str(src))
    with staging_dir(models_dir) as staging:
        model_dir = staging / "model"
        model_dir.mkdir()
        for file_name in MODEL_FILES:
            if (src / file_name).is_file():
                shutil.copyfile(src / file_name, model_dir / file_name)
        metadata = {"model_id": name, "source": f"import:{src.resolve()}", "installed_at": time.time()}
        return install(
            staging, models_dir, name=name, metadata=metadata, cache_dir=cache_dir or models_dir, shown=str(src)
        )


# -- download ------------------------------------------------------------------------------


def _linked_sha256(response: httpx.Response) -> str | None:
    """The LFS object id (sha256 of the content) the hub announces in X-Linked-Etag, if any.

    Only that header is trusted: plain ETags are git blob hashes or CDN-specific values.
    """
    for r in (*response.history, response):
        value = r.headers.get("x-linked-etag", "").removeprefix("W/").strip('"').lower()
        if _SHA256.fullmatch(value):
            return value
    return None


def _content_length(response: httpx.Response) -> int | None:
    raw = response.headers.get("content-length")
    return int(raw) if raw is not None and raw.isdigit() else None


class Downloader:
    """Fetches ``{endpoint}/{hub_id}/resolve/{revision}/{file}`` into one directory."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        base_url: str,
        hub_id: str,
        revision: str,
        progress: ProgressCallback | None,
        max_file_bytes: int,
        offline_hint: str = _IMPORT_HINT,
    ) -> None:
        self._client = client
        self._base = f"{base_url}/{hub_id}/resolve/{quote(revision, safe='')}"
        self._hub_id = hub_id
        self._revision = revision
        self._progress = progress
        self._max = max_file_bytes
        self._offline_hint = offline_hint

    def _report(self, file_name: str, done: int, total: int | None) -> None:
        if self._progress is not None:
            self._progress(file_name, done, total)

    def fetch(self, file_name: str, dest: Path) -> bool:
        """Download one file; False if the hub has no such file (404). Other failures raise DownloadError."""
        url = f"{self._base}/{file_name}"
        try:
            with self._client.stream("GET", url) as response:
                if response.status_code == 404:
                    return False
                if response.status_code in (401, 403):
                    raise DownloadError(
                        f"The hub refused {url} (HTTP {response.status_code}). The model id {self._hub_id!r} "
                        "may be wrong, or the model is private or gated and needs a token (ENGRAM_HF_TOKEN)."
                    )
                if response.is_error:
                    raise DownloadError(f"The hub answered HTTP {response.status_code} for {url}; try again later.")
                self._save(response, file_name, dest)
        except httpx.TransportError as e:
            raise DownloadError(
                f"Could not download {url} ({type(e).__name__}: {e}). If this machine is offline or cannot "
                f"reach the hub, {self._offline_hint}."
            ) from e
        return True

    def _save(self, response: httpx.Response, file_name: str, dest: Path) -> None:
        total = _content_length(response)
        if total is not None and total > self._max:
            raise DownloadError(f"{file_name} is {total} bytes, over the {self._max}-byte limit for a model file.")
        expected = _linked_sha256(response)
        digest = hashlib.sha256()
        done = 0
        self._report(file_name, 0, total)
        with dest.open("wb") as f:
            for chunk in response.iter_bytes(_CHUNK_BYTES):
                done += len(chunk)
                if done > self._max:
                    raise DownloadError(f"{file_name} is over the {self._max}-byte limit for a model file.")
                f.write(chunk)
                digest.update(chunk)
                self._report(file_name, done, total)
        if total is not None and done != total:
            raise DownloadError(
                f"{file_name}: got {done} of {total} bytes; the connection dropped. Run the pull again."
            )
        if expected is not None and digest.hexdigest() != expected:
            raise DownloadError(f"{file_name}: the content does not match the hub's sha256. Run the pull again.")
        if total is None:
            self._report(file_name, done, done)

    def fetch_model(self, dest: Path) -> None:
        """config.json first (wrong ids and architectures fail before the weights download), then the rest."""
        where = f"{self._hub_id!r} at revision {self._revision!r}"
        if not self.fetch("config.json", dest / "config.json"):
            raise DownloadError(
                f"No model {where} on the hub (HTTP 404). Check the model id (e.g. {EXAMPLE_MODEL}); "
                "a private model needs a token (ENGRAM_HF_TOKEN)."
            )
        check_config(dest / "config.json", self._hub_id)
        if not self.fetch("tokenizer.json", dest / "tokenizer.json"):
            raise InvalidModel(f"{where} has no tokenizer.json; only models with a fast tokenizer file are supported.")
        if not self.fetch("model.safetensors", dest / "model.safetensors"):
            raise InvalidModel(
                f"{where} has no model.safetensors. Only safetensors models are supported (pickle weights "
                "such as pytorch_model.bin are never loaded); choose a model that publishes model.safetensors."
            )
        for file_name in OPTIONAL_FILES:
            self.fetch(file_name, dest / file_name)


def pull(
    hub_id: str,
    models_dir: Path,
    *,
    endpoint: str = DEFAULT_HF_ENDPOINT,
    revision: str = DEFAULT_REVISION,
    token: str | None = None,
    progress: ProgressCallback | None = None,
    cache_dir: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Path:
    """Download a cross-encoder from a Hugging Face-style hub, verify it, install it as the active reranker.

    Files come from ``{endpoint}/{hub_id}/resolve/{revision}/{file}`` (redirects followed, the
    LFS sha256 checked when the hub announces it) into a staging dir, are verified like
    ``import_dir`` and then moved to ``<models_dir>/rerankers/<org--name>`` in one rename;
    ``rerankers/ACTIVE`` then names it. ``progress`` gets ``(file_name, done, total)`` byte counts.

    Raises:
        ModelError: ``hub_id``, ``revision`` or ``endpoint`` is malformed (checked before any request).
        DownloadError: the hub is unreachable, refuses the model, or a transfer breaks.
        InvalidModel: the model is not a safetensors BERT cross-encoder.
    """
    name = safe_name(hub_id)
    revision = _validate_revision(revision)
    base_url = validate_endpoint(endpoint)
    headers = {"Accept-Encoding": "identity", "User-Agent": "engram"}  # identity: Content-Length = bytes on disk
    if token:
        # httpx drops this header when a redirect leaves the hub's origin (e.g. to the LFS CDN).
        headers["Authorization"] = f"Bearer {token}"
    with (
        httpx.Client(follow_redirects=True, timeout=timeout, headers=headers) as client,
        staging_dir(models_dir) as staging,
    ):
        model_dir = staging / "model"
        model_dir.mkdir()
        downloader = Downloader(
            client,
            base_url=base_url,
            hub_id=hub_id,
            revision=revision,
            progress=progress,
            max_file_bytes=max_file_bytes,
        )
        downloader.fetch_model(model_dir)
        metadata = {
            "model_id": hub_id,
            "source": f"{base_url}/{hub_id}@{revision}",
            "revision": revision,
            "installed_at": time.time(),
        }
        return install(
            staging, models_dir, name=name, metadata=metadata, cache_dir=cache_dir or models_dir, shown=hub_id
        )


# -- listing and selection -------------------------------------------------------------------


def list_installed(models_dir: Path) -> list[InstalledModel]:
    """Installed rerankers, newest first, with the active one marked."""
    active = read_active(models_dir)
    out = []
    for path in installed_models(models_dir):
        try:
            meta = json.loads((path / METADATA_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # hand-placed directory: no metadata
            meta = {}
        out.append(
            InstalledModel(
                name=path.name,
                path=path,
                model_id=str(meta.get("model_id") or path.name),
                source=str(meta.get("source") or "manual"),
                installed_at=installed_at(path),
                size_bytes=sum(f.stat().st_size for f in path.iterdir() if f.is_file()),
                active=path.name == active,
            )
        )
    return out


def activate(models_dir: Path, name: str) -> Path:
    """Make the installed model ``name`` the active reranker (rewrites ``rerankers/ACTIVE``)."""
    path = rerankers_dir(models_dir) / _validate_name(name)
    if not looks_installed(path):
        names = ", ".join(m.name for m in list_installed(models_dir)) or "none"
        raise ModelError(f"No installed reranker named {name!r} (installed: {names}). See `engram models list`.")
    _write_active(models_dir, name)
    return path
