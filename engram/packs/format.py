"""The pack directory format and its safety checks: names, paths and sizes, for every way a pack comes in (a git
clone, a local folder, a `write_engram_file` call) and goes out (`engram packs export`).

A pack is a folder: `meta.json`, `role.md`, `workflow.md`, `rules.md` (with an optional `## Onboarding` block),
`knowledge/` (files plus `_index.md`), `examples/` (cases with `uses:` frontmatter plus `_index.md`) and `memory/`
(what the pack remembered of its user; Engram keeps those as memories and renders the files on demand).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from engram.errors import InvalidArgument
from engram.validation import check_storable

GLOBAL_PACK = "_global"  # the memory shared by every pack (the seed's <packs-dir>/_global)
META = "meta.json"
BASE_FILES = ("role.md", "workflow.md", "rules.md")
KNOWLEDGE_INDEX = "knowledge/_index.md"
EXAMPLES_INDEX = "examples/_index.md"
MEMORY_DIR = "memory"
MAX_NAME_CHARS = 64
MAX_PATH_CHARS = 255
MAX_FILE_BYTES = 512 * 1024
MAX_PACK_FILES = 500
MAX_PACK_BYTES = 16 * 1024 * 1024
TEXT_SUFFIXES = (".md",)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
NAME_PATTERN = r"^[^/\\\x00-\x1f\x7f._][^/\\\x00-\x1f\x7f]*$"  # check_pack_name's rules, for JSON Schemas


@dataclass(frozen=True, slots=True)
class PackLimits:
    max_file_bytes: int = MAX_FILE_BYTES
    max_files: int = MAX_PACK_FILES
    max_bytes: int = MAX_PACK_BYTES


@dataclass(slots=True)
class Pack:
    """A pack's content: its meta.json as a dict and every Markdown file by its relative POSIX path."""

    name: str
    meta: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # "role.md", "knowledge/x.md", ... (not meta.json)

    @property
    def extends(self) -> str:
        parent = self.meta.get("extends")
        return parent if isinstance(parent, str) else ""


def check_pack_name(name: Any, *, field_name: str = "name") -> str:
    """A pack name: 1-64 characters, no slash, backslash, control character or leading dot/underscore (`_global`
    is the shared memory, not a pack). Unicode letters are fine (the seed's packs have Chinese names)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(field_name, "is required: the pack's name, e.g. 'fitness-coach' (see list_engrams).")
    name = unicodedata.normalize("NFC", name.strip())
    if len(name) > MAX_NAME_CHARS:
        raise InvalidArgument(field_name, f"is {len(name)} characters long; a pack name has at most {MAX_NAME_CHARS}.")
    if "/" in name or "\\" in name or _CONTROL.search(name) or name[0] in "._":
        raise InvalidArgument(
            field_name,
            f"'{_printable(name)}' is not a pack name: no slashes, control characters or leading '.' or '_'.",
        )
    return name


def check_pack_path(path: Any, *, field_name: str = "path") -> str:
    """A file path inside a pack, normalised to POSIX form; raises InvalidArgument for anything that could leave
    the pack (absolute paths, `..`, backslashes, NUL and other control characters) or is not a Markdown file."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidArgument(field_name, "is required: a file inside the pack, e.g. 'knowledge/_index.md'.")
    raw = unicodedata.normalize("NFC", path.strip())
    if _CONTROL.search(raw) or "\\" in raw:
        raise InvalidArgument(field_name, f"'{_printable(raw)}' has a control character or a backslash.")
    if len(raw) > MAX_PATH_CHARS:
        raise InvalidArgument(field_name, f"is {len(raw)} characters long; at most {MAX_PATH_CHARS}.")
    pure = PurePosixPath(raw)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", raw):
        raise InvalidArgument(field_name, f"'{raw}' is absolute; give a path inside the pack, e.g. 'knowledge/x.md'.")
    parts = [part for part in pure.parts if part != "."]
    if not parts or any(part == ".." for part in parts):
        raise InvalidArgument(field_name, f"'{raw}' leaves the pack; give a path inside it, e.g. 'knowledge/x.md'.")
    if any(part.startswith(".") for part in parts):
        raise InvalidArgument(field_name, f"'{raw}' names a hidden file; packs hold no dot files.")
    normal = "/".join(parts)
    if normal != META and not normal.endswith(TEXT_SUFFIXES):
        raise InvalidArgument(field_name, f"'{raw}' is not a Markdown file; packs hold .md files and meta.json.")
    return normal


def parse_meta(text: str, *, source: str = META) -> dict[str, Any]:
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidArgument(source, f"is not valid JSON ({e.msg} at line {e.lineno}).") from e
    if not isinstance(meta, dict):
        raise InvalidArgument(source, "must be a JSON object with at least a name and a description.")
    check_storable(source, meta)
    if "extends" in meta and meta["extends"] not in (None, ""):
        check_pack_name(meta["extends"], field_name=f"{source}: extends")
    return meta


def read_pack_dir(directory: Path, *, name: str | None = None, limits: PackLimits = PackLimits()) -> Pack:
    """Reads a pack folder, refusing symlinks that leave it, non-UTF-8 text and anything over the limits.

    The name is ``name``, else meta.json's name, else the folder's. Files other than Markdown and meta.json (images,
    the `.git` folder) are left out. Raises InvalidArgument naming the file and the problem; reads nothing partial.
    """
    root = directory.resolve()
    meta_file = root / META
    if not meta_file.is_file():
        raise InvalidArgument("pack", f"{directory} has no meta.json at its top: it is not a pack folder.")
    meta = parse_meta(_read_text(meta_file, root, limits), source=META)
    pack = Pack(name=check_pack_name(name or meta.get("name") or root.name), meta=meta)
    total = meta_file.stat().st_size
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root).as_posix()
        if relative.split("/", 1)[0].startswith(".") or file.is_dir() or not file.name.endswith(TEXT_SUFFIXES):
            continue
        path = check_pack_path(relative, field_name="pack file")
        if len(pack.files) >= limits.max_files:
            raise InvalidArgument("pack", f"has more than {limits.max_files} Markdown files.")
        text = _read_text(file, root, limits)
        total += len(text.encode())
        if total > limits.max_bytes:
            raise InvalidArgument("pack", f"is larger than {limits.max_bytes // (1024 * 1024)} MiB of text.")
        pack.files[path] = text
    return pack


def write_pack_dir(pack: Pack, directory: Path) -> None:
    """Writes a pack as its folder layout (meta.json plus every file); every path is checked again first."""
    checked = {check_pack_path(path): text for path, text in pack.files.items()}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / META).write_text(json.dumps(pack.meta, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    for path, text in checked.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _read_text(file: Path, root: Path, limits: PackLimits) -> str:
    try:
        resolved = file.resolve(strict=True)
    except (OSError, RuntimeError) as e:  # a link to nowhere, or a loop of links
        raise InvalidArgument("pack", f"{file.relative_to(root)} is a broken or looping link.") from e
    if not resolved.is_relative_to(root):
        raise InvalidArgument("pack", f"{file.relative_to(root)} is a link to outside the pack.")
    size = resolved.stat().st_size
    if size > limits.max_file_bytes:
        raise InvalidArgument("pack", f"{file.relative_to(root)} is {size} bytes; at most {limits.max_file_bytes}.")
    try:
        return resolved.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InvalidArgument("pack", f"{file.relative_to(root)} is not UTF-8 text.") from e


def _printable(text: str) -> str:
    return _CONTROL.sub("?", text)[:80]
