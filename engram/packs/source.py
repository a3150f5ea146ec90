"""Where a pack comes from: a git repository over https (or a local one, by path or file:// URL) or a plain folder,
fetched without running anything from it and within a byte and file budget.

A clone runs `git` with an argument list (never a shell), hooks and templates disabled, no system, global or user
configuration, only the source's protocol allowed, no terminal prompt and a time limit; it is watched while it
runs and stopped once it grows past its budget. Nothing is left in the work directory afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit, urlunsplit

from engram.errors import InvalidArgument, Unavailable
from engram.packs.format import MAX_PATH_CHARS, Pack, PackLimits, read_pack_dir

DEFAULT_LIMITS = PackLimits()
DEFAULT_CLONE_TIMEOUT = 120.0  # seconds for the whole clone
# A clone may hold this many times the pack's limits, plus the allowance: images, the .git folder, other files.
CLONE_BUDGET_FACTOR = 4
CLONE_ALLOWANCE_BYTES = 1024 * 1024
CLONE_ALLOWANCE_FILES = 100
_POLL_SECONDS = 0.1
_STDERR_LINES = 3  # of git's error output, quoted in an error
# Only what git needs to reach the network: the path (to find git's helpers), proxies and CA certificates.
_PASSED_ENV = ("PATH", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")
_SCP_LIKE = re.compile(r"^[^/:]*@?[^/:]+:")  # user@host:path and host:path, git's ssh shorthand
_HELP = "give an https:// git URL, a file:// URL or a local folder"


@dataclass(frozen=True, slots=True)
class Source:
    """A checked source: a git URL to clone, or a local folder to read as it is."""

    url: str = ""  # https:// or file://; empty for a plain folder
    folder: Path | None = None
    shown: str = ""  # how errors name it: without credentials


def fetch_pack(
    source: str,
    workdir: Path,
    *,
    subdir: str = "",
    name: str | None = None,
    limits: PackLimits = DEFAULT_LIMITS,
    timeout: float = DEFAULT_CLONE_TIMEOUT,
    local: bool = True,
) -> Pack:
    """Fetches and reads the pack at ``source`` (its root, or ``subdir`` of it) into memory.

    ``local=False`` refuses local paths and file:// URLs (a server installing for a remote caller must not read
    its own disk). Raises InvalidArgument for a source or pack that cannot be installed (saying what to do) and
    Unavailable when git is missing, fails or takes longer than ``timeout`` seconds; ``workdir`` is left as it was.
    """
    checked = parse_source(source, local=local)
    inner = _check_subdir(subdir)
    if checked.folder is not None:
        return _read_pack(checked.folder, inner, name=name, limits=limits, shown=checked.shown)
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="pack-", dir=workdir))
    try:
        checkout = scratch / "checkout"
        _clone(checked, checkout, scratch, limits=limits, timeout=timeout)
        return _read_pack(checkout, inner, name=name, limits=limits, shown=checked.shown)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def parse_source(source: str, *, local: bool = True) -> Source:
    """The source checked: an https:// URL, a file:// URL or a local path (a git repository is cloned, a plain
    folder read). Refuses every other scheme (ssh, git://, ext::, http) and anything git could take as an option."""
    text = source.strip() if isinstance(source, str) else ""
    if not text:
        raise InvalidArgument("source", f"is required: {_HELP}.")
    if text.startswith("-") or re.search(r"[\x00-\x1f\x7f]", text):
        raise InvalidArgument("source", f"'{redact(text)}' starts with '-' or has a control character; {_HELP}.")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "https":
        return _https(text)
    if scheme == "file":
        return _local(_file_path(text), local=local)
    if scheme or "::" in text or (_SCP_LIKE.match(text) and not Path(text).exists()):
        shown = redact(text)
        raise InvalidArgument(
            "source", f"'{shown}': only https:// git URLs are installed (no ssh, git:// or ext::); {_HELP}."
        )
    return _local(Path(text).expanduser(), local=local)


def redact(url: str) -> str:
    """The URL without a user name or password, for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a malformed URL>"
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _https(text: str) -> Source:
    try:
        parts = urlsplit(text)
        port = parts.port  # raises ValueError for a port that is not a number
    except ValueError as e:
        raise InvalidArgument("source", f"'{redact(text)}' is not a valid URL ({e}).") from e
    if " " in text or not parts.hostname or parts.hostname.startswith("-") or port == 0:
        raise InvalidArgument("source", f"'{redact(text)}' names no host; e.g. https://github.com/owner/pack.git")
    return Source(url=text, shown=redact(text))


def _file_path(url: str) -> Path:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise InvalidArgument("source", f"'{redact(url)}' names a host; a file:// URL is a folder of this machine.")
    return Path(unquote(parts.path))


def _local(path: Path, *, local: bool) -> Source:
    if not local:
        raise InvalidArgument("source", "local folders cannot be installed here; give an https:// git URL.")
    folder = path.resolve()
    if not folder.is_dir():
        raise InvalidArgument("source", f"{path} is not a folder; {_HELP}.")
    if (folder / ".git").exists():  # a repository's working tree: install what is committed
        return Source(url=folder.as_uri(), shown=str(path))
    if (folder / "HEAD").is_file() and (folder / "objects").is_dir():  # a bare repository
        return Source(url=folder.as_uri(), shown=str(path))
    return Source(folder=folder, shown=str(path))


def _check_subdir(subdir: str) -> str:
    """``subdir`` as a relative POSIX path inside the repository ('' for its root)."""
    raw = (subdir or "").strip().strip("/") if isinstance(subdir, str) else ""
    if not raw:
        return ""
    if len(raw) > MAX_PATH_CHARS or re.search(r"[\x00-\x1f\x7f\\]", raw):
        raise InvalidArgument("subdir", f"'{raw[:80]}' is too long or has a backslash or control character.")
    parts = [part for part in PurePosixPath(raw).parts if part != "."]
    if subdir.strip().startswith("/") or any(part == ".." or part.startswith(".") for part in parts):
        raise InvalidArgument("subdir", f"'{raw}' leaves the repository; give a folder inside it, e.g. 'packs/coach'.")
    return "/".join(parts)


def _read_pack(top: Path, inner: str, *, name: str | None, limits: PackLimits, shown: str) -> Pack:
    top = top.resolve()
    root = (top / inner).resolve() if inner else top
    if not root.is_relative_to(top):
        raise InvalidArgument("subdir", f"'{inner}' is a link that leaves {shown}.")
    if not root.is_dir():
        raise InvalidArgument("subdir", f"{shown} has no folder '{inner}'; check --subdir.")
    if not (root / "meta.json").is_file():
        where = f"its folder '{inner}'" if inner else "its top"
        raise InvalidArgument(
            "source", f"{shown} has no meta.json at {where}: not a pack. Pass --subdir if the pack is in a folder."
        )
    refuse_escaping_links(root)
    return read_pack_dir(root, name=name, limits=limits)


def refuse_escaping_links(root: Path) -> None:
    """Raises InvalidArgument for any symbolic link under ``root`` (followed or not) whose target lies outside it,
    is missing or loops: a pack is read as it is, and a link could hand over any file of the machine reading it."""
    root = root.resolve()
    for folder, dirs, files in os.walk(root, followlinks=False):
        for entry in (*dirs, *files):
            path = Path(folder, entry)
            if not path.is_symlink():
                continue
            relative = path.relative_to(root).as_posix()
            try:
                target = path.resolve()
            except (RuntimeError, OSError) as e:  # a loop (RuntimeError before Python 3.13)
                raise InvalidArgument("pack", f"{relative} is a link that leads nowhere (a loop).") from e
            if not target.is_relative_to(root):
                raise InvalidArgument("pack", f"{relative} is a link to outside the pack; packs cannot link out.")
            if not target.exists():
                raise InvalidArgument("pack", f"{relative} is a link to a file that does not exist.")


def _clone(source: Source, checkout: Path, scratch: Path, *, limits: PackLimits, timeout: float) -> None:
    """A shallow clone of the default branch into ``checkout``: no hooks, no templates, no configuration of this
    machine, only the source's own protocol, stopped when it outlasts ``timeout`` or outgrows the budget."""
    git = shutil.which("git")
    if git is None:
        raise Unavailable("git is not installed: install git (e.g. apt-get install git) to install packs from git.")
    protocol = "file" if source.url.startswith("file:") else "https"
    command = [
        git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.allow=never",
        "-c", f"protocol.{protocol}.allow=always", "-c", "http.followRedirects=initial",
        "clone", "--quiet", "--depth", "1", "--no-tags", "--single-branch", "--template=", "--",
        source.url, str(checkout),
    ]  # fmt: skip
    env = {key: value for key in _PASSED_ENV if (value := os.environ.get(key))}
    env.update(
        HOME=str(scratch), XDG_CONFIG_HOME=str(scratch), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", GIT_ALLOW_PROTOCOL=protocol, LC_ALL="C",
    )  # fmt: skip
    budget_bytes = limits.max_bytes * CLONE_BUDGET_FACTOR + CLONE_ALLOWANCE_BYTES
    budget_files = limits.max_files * CLONE_BUDGET_FACTOR + CLONE_ALLOWANCE_FILES
    log = scratch / "git-stderr.txt"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True,  # its own process group: a stop ends git's helpers too
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise Unavailable(f"Cloning {source.shown} took longer than {timeout:g} s; try again later.")
                _check_budget(checkout, budget_bytes, budget_files, source.shown)
                time.sleep(_POLL_SECONDS)
        finally:
            _stop(process)
    if process.returncode != 0:
        raise Unavailable(
            f"git could not clone {source.shown}: {_tail(log, source.url)} Check the URL and that the repository "
            "is public (or reachable from here), then try again."
        )
    _check_budget(checkout, budget_bytes, budget_files, source.shown)


def _check_budget(checkout: Path, max_bytes: int, max_files: int, shown: str) -> None:
    size, count = tree_usage(checkout)
    if size > max_bytes or count > max_files:
        raise InvalidArgument(
            "source",
            f"{shown} is too large to be a pack: its clone passed {_size(max_bytes)} or {max_files} files. "
            "Keep a pack's repository small, or point --subdir at the pack inside a smaller one.",
        )


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


def tree_usage(root: Path) -> tuple[int, int]:
    """Bytes and files under ``root`` (links not followed); (0, 0) while it does not exist yet."""
    size = count = 0
    for folder, _dirs, files in os.walk(root, followlinks=False):
        for entry in files:
            try:
                size += os.lstat(os.path.join(folder, entry)).st_size
            except OSError:  # git renames its temporary files while we look
                continue
            count += 1
    return size, count


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(log: Path, url: str) -> str:
    """The last lines git wrote to stderr, without the URL's credentials."""
    text = log.read_text(encoding="utf-8", errors="replace")
    userinfo = urlsplit(url).netloc.rpartition("@")[0]
    if userinfo:
        text = text.replace(userinfo, "***")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-_STDERR_LINES:]) + ("" if not lines or lines[-1].endswith(".") else ".")
