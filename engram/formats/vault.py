"""The Markdown vault: a namespace's memories as one file each with YAML frontmatter (friendly to Obsidian and
basic-memory), and a folder of notes read back as import lines, idempotently. `engram export --format markdown DIR`
and `engram import DIR` move them to and from a node (engram/cli/vault.py)."""

from __future__ import annotations

import json
import os
import re
import unicodedata
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from engram import plural
from engram.formats import frontmatter
from engram.formats.importer import DEFAULT_CHUNK_BYTES

CHUNK_FILES = 200  # files per bulk-import request
MAX_FILE_BYTES = DEFAULT_CHUNK_BYTES  # a bigger note would not fit one import request
MAX_SLUG_CHARS = 60
MAX_SLUG_BYTES = 120  # a file name stays well under the 255 bytes every file system allows
SHORT_ID_CHARS = 8
VAULT_ID = "vault_id"  # the metadata key that keeps, on a memory imported elsewhere, the id it had in the vault
_PATH_NAMESPACE = uuid.UUID("6f1c9a52-3b0e-4c1e-9d7e-0e6a7b2c4d10")  # ids of notes without one, from their path
_SECRET = "secret"
_ARCHIVED_AGAIN = ("archived", "superseded")  # imported, then archived: hidden from search, as they were

# The frontmatter, in this order. Keys in ALWAYS are written even when empty; the others only when set.
FRONTMATTER_KEYS = (
    "id", "title", "namespace", "memory_type", "summary", "topics", "tags", "importance", "confidence",
    "owner_agent", "updated_by", "team", "project", "conversation_id", "sensitivity", "status", "version",
    "created_at", "updated_at", "valid_at", "invalid_at", "expires_at", "context", "metadata", "relations", "handoff",
    "source",
)  # fmt: skip
ALWAYS = frozenset({"id", "namespace", "memory_type", "summary", "topics", "tags", "importance", "status", "version"})
# What an import can set: the fields of a save (the rest of the frontmatter describes the original and is kept in
# the file only: who wrote it and when, its version, relations and status are the new namespace's own).
TEXT_FIELDS = ("summary", "memory_type", "importance", "confidence", "team", "project", "conversation_id",
               "sensitivity", "context")  # fmt: skip
TIME_FIELDS = ("valid_at", "invalid_at", "expires_at")
LABEL_FIELDS = ("tags", "topics")
# Known frontmatter keys that an import does not send; any other key of a hand-written note goes to metadata.
DESCRIBING = frozenset({"id", "title", "namespace", "owner_agent", "updated_by", "status", "version", "created_at",
                        "updated_at", "relations", "handoff", "source", "metadata"})  # fmt: skip


class VaultError(Exception):
    """A file or folder that cannot be read or written as a vault; the message says why and what to do."""


# --- export -------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ExportReport:
    folder: Path
    written: int = 0
    skipped_secret: int = 0
    moved: int = 0  # files of an earlier export whose memory now has another name or type: replaced, not kept twice

    def summary(self) -> str:
        skipped = (
            f"; skipped {plural.memories(self.skipped_secret, 'secret')} (--include-secret writes them)"
            if self.skipped_secret
            else ""
        )
        moved = f"; {self.moved} renamed since the last export" if self.moved else ""
        return f"wrote {plural.memories(self.written)} to {self.folder}{skipped}{moved}"


class VaultWriter:
    """Writes memories as the notes of a folder; a memory exported before (same id) is overwritten, wherever its
    earlier file was."""

    def __init__(self, folder: Path, *, include_secret: bool = False) -> None:
        if folder.exists() and not folder.is_dir():
            raise VaultError(f"{folder} is a file; give a folder to export to.")
        folder.mkdir(parents=True, exist_ok=True)
        self.report = ExportReport(folder)
        self._root = folder.resolve()
        self._include_secret = include_secret
        self._earlier = _exported_files(self._root)  # id -> files an earlier export wrote
        self._taken: dict[Path, str] = {path: mid for mid, paths in self._earlier.items() for path in paths}

    def write(self, memory: dict[str, Any]) -> None:
        """Writes one memory's note (a secret one only with include_secret), and counts it in the report."""
        if memory.get("sensitivity") == _SECRET and not self._include_secret:
            self.report.skipped_secret += 1
            return
        path = note_path(self._root, memory, self._taken)
        write_note(path, render_note(memory))
        self._taken[path] = str(memory["id"])
        self.report.written += 1
        self.report.moved += _drop_earlier(self._earlier.pop(str(memory["id"]), []), path)


def _drop_earlier(paths: list[Path], kept: Path) -> int:
    """Removes the files an earlier export wrote for a memory that now has another file name; how many."""
    dropped = 0
    for path in paths:
        if path.exists() and not path.samefile(kept):  # samefile: a file system may spell the same name otherwise
            path.unlink()
            dropped += 1
    return dropped


def _exported_files(root: Path) -> dict[str, list[Path]]:
    """The id in the frontmatter of every note under root (notes without one, or unreadable, are left alone)."""
    found: dict[str, list[Path]] = {}
    for path in _markdown_files(root):
        if path.is_symlink():  # never removed or overwritten through: its target may be anywhere
            continue
        try:
            frontmatter, _ = split_frontmatter(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, VaultError):
            continue
        if frontmatter and frontmatter.get("id"):
            found.setdefault(str(frontmatter["id"]), []).append(path)
    return found


def slug(text: str, *, fallback: str = "memory") -> str:
    """A file-name stem from free text, safe on every OS: NFKC, lowercase, letters and digits of any script
    joined by single dashes, at most MAX_SLUG_CHARS characters and MAX_SLUG_BYTES bytes of UTF-8."""
    words = re.split(r"[^\w]+|_", unicodedata.normalize("NFKC", text).lower())
    out = ""
    for word in filter(None, words):
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > MAX_SLUG_CHARS or len(candidate.encode()) > MAX_SLUG_BYTES:
            if not out:  # one very long word: cut it
                out = _cut(word)
            break
        out = candidate
    return out or fallback


def _cut(word: str) -> str:
    cut = word[:MAX_SLUG_CHARS]
    while len(cut.encode()) > MAX_SLUG_BYTES:
        cut = cut[:-1]
    return cut


def note_path(root: Path, memory: dict[str, Any], taken: dict[Path, str]) -> Path:
    """root/<memory_type>/<slug of summary or content>-<short id>.md; the whole id when the short one would take
    the file of another memory. Raises VaultError if the path would leave root (it never should)."""
    memory_id = str(memory["id"])
    folder = slug(str(memory.get("memory_type") or "general"), fallback="general")
    stem = slug(str(memory.get("summary") or memory.get("content") or ""))
    safe_id = slug(memory_id, fallback="memory")
    path = root / folder / f"{stem}-{safe_id[:SHORT_ID_CHARS]}.md"
    if taken.get(path, memory_id) != memory_id:
        path = root / folder / f"{stem}-{safe_id}.md"
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise VaultError(f"{path} is outside {root} (a symbolic link?); export to an empty folder.")
    return resolved


def render_note(memory: dict[str, Any]) -> str:
    """The Markdown file of a memory: YAML frontmatter, then its content as the body."""
    values = {**memory, "title": _title(memory)}
    frontmatter = {
        key: values.get(key) for key in FRONTMATTER_KEYS if key in ALWAYS or values.get(key) not in (None, "", [], {})
    }
    dumped = yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**6)
    return f"---\n{dumped}---\n{memory.get('content', '')}\n"


def _title(memory: dict[str, Any]) -> str:
    """The note's title (basic-memory's `title`): the summary, else the content's first line, cut short."""
    text = str(memory.get("summary") or "").strip() or str(memory.get("content") or "").strip().split("\n")[0]
    return text if len(text) <= 80 else text[:79] + "…"


def write_note(path: Path, text: str) -> None:
    """Writes the file whole or not at all (a crash leaves the earlier version)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


# --- import -------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Note:
    """A file of the vault read as an import line."""

    path: Path  # relative to the vault
    key: str  # its stable id: the frontmatter id, else one derived from its path
    line: dict[str, Any]  # the save_memory object sent to the bulk import
    origins: frozenset[str]  # the ids this memory is known by (its key and the vault_id it carries)
    status: str = "active"

    @property
    def archived(self) -> bool:
        """Archived or superseded in the vault: imported, then archived again (hidden from search, as it was)."""
        return self.status in _ARCHIVED_AGAIN


@dataclass(slots=True)
class VaultImportReport:
    imported: int = 0
    already_present: int = 0
    archived: int = 0  # imported, then archived because the vault says archived or superseded
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (relative path, reason)
    seconds: float = 0.0

    def summary(self, folder: Path) -> str:
        archived = f" ({self.archived} archived, as in the vault)" if self.archived else ""
        lines = [
            f"imported {plural.memories(self.imported, 'new')}{archived} from {folder} in {self.seconds:.1f}s; "
            f"{self.already_present} already present (not written again); rejected {len(self.rejected)}"
        ]
        lines += [f"  {path}: {reason}" for path, reason in self.rejected[:20]]
        if len(self.rejected) > 20:
            lines.append(f"  … and {len(self.rejected) - 20} more")
        return "\n".join(lines)


def read_vault(root: Path, report: VaultImportReport) -> list[Note]:
    """The notes of the vault in path order; a file that cannot be one is added to report.rejected."""
    notes: list[Note] = []
    seen: dict[str, Path] = {}
    for path in _markdown_files(root):
        relative = path.relative_to(root)
        try:
            note = read_note(root, relative)
        except VaultError as e:
            report.rejected.append((relative.as_posix(), str(e)))
            continue
        if (other := seen.get(note.key)) is not None:
            reason = f"has the same id as {other.as_posix()}; give it an id of its own, or remove its id line"
            report.rejected.append((relative.as_posix(), reason))
            continue
        seen[note.key] = relative
        notes.append(note)
    return notes


def has_notes(folder: Path) -> bool:
    """Whether folder holds a Markdown note (*.md) to import."""
    return next(_markdown_files(folder.resolve()), None) is not None


def _markdown_files(root: Path) -> Iterator[Path]:
    """Every *.md file under root, in a stable order, skipping dot folders (.obsidian, .git, .trash)."""
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            if name.lower().endswith(".md") and not name.startswith("."):
                yield Path(directory) / name


def read_note(root: Path, relative: Path) -> Note:
    """One file as an import line; raises VaultError saying what is wrong with it."""
    path = root / relative
    if not path.resolve().is_relative_to(root):
        raise VaultError("is a link to a file outside the vault; copy the file in instead")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise VaultError(f"is {size} bytes, more than {MAX_FILE_BYTES} one memory may be; split it")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise VaultError(f"is not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise VaultError(f"cannot be read: {e.strerror or e}") from e
    frontmatter, body = split_frontmatter(text)
    return note_of(relative, frontmatter or {}, body)


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """(frontmatter, body) of a Markdown text; None when it has no frontmatter. Raises VaultError on bad YAML."""
    try:
        return frontmatter.split_frontmatter(text)
    except frontmatter.FrontmatterError as e:
        if e.kind == frontmatter.UNCLOSED:
            raise VaultError("its frontmatter opens with --- but never closes; end it with a --- line") from e
        if e.kind == frontmatter.NOT_A_MAPPING:
            raise VaultError("its frontmatter is not a set of `key: value` lines") from e
        if e.kind == frontmatter.ALIAS:
            raise VaultError(f"its frontmatter repeats a value with a YAML alias (line {e.line}): {e.problem}") from e
        if e.kind == frontmatter.TOO_DEEP:
            raise VaultError(f"its frontmatter {e.problem} (line {e.line}); flatten it") from e
        raise VaultError(f"its frontmatter is not valid YAML, {e.plain}") from e


def note_of(relative: Path, frontmatter: dict[str, Any], body: str) -> Note:
    """The import line of a note: its frontmatter's save fields, the body as content; unknown keys go to
    metadata, and metadata keeps the id the memory had in the vault (vault_id) to recognise it later."""
    data = {str(key): _plain(value) for key, value in frontmatter.items()}
    content = body.removesuffix("\n")  # an export ends the body with one newline
    line: dict[str, Any] = {"content": content}
    for name in TEXT_FIELDS:
        if data.get(name) is not None:
            line[name] = _text(name, data[name])
    if "summary" not in data and (title := data.get("title") or _heading(content)):
        line["summary"] = _text("title", title)
    for name in LABEL_FIELDS:
        if data.get(name) is not None:
            line[name] = _labels(name, data[name])
    for name in TIME_FIELDS:
        if data.get(name) is not None:
            line[name] = _text(name, data[name])
    if isinstance(handoff := data.get("handoff"), dict) and handoff.get("target_agent"):
        line["handoff_target"] = _text("handoff.target_agent", handoff["target_agent"])  # a pending handoff again
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise VaultError("metadata must be a set of `key: value` pairs")
    extra = {key: value for key, value in data.items() if key not in (*DESCRIBING, *TEXT_FIELDS, *LABEL_FIELDS,
                                                                       *TIME_FIELDS)}  # fmt: skip
    key = str(data["id"]) if data.get("id") not in (None, "") else path_id(relative)
    vault_id = str(metadata.get(VAULT_ID) or key)
    line["metadata"] = {**extra, **metadata, VAULT_ID: vault_id}
    line["source_id"] = f"vault:{vault_id}"[:256]  # a retried request within the log's duplicate window
    status = str(data.get("status") or "active")
    return Note(relative, key, line, frozenset({key, vault_id}), status)


def path_id(relative: Path) -> str:
    """A stable id for a note without one: a UUID derived from its path in the vault."""
    return str(uuid.uuid5(_PATH_NAMESPACE, relative.as_posix()))


def _plain(value: Any) -> Any:
    """A YAML value as JSON: times as RFC 3339 text (UTC when YAML gave none), other odd scalars as text."""
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00Z"
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _text(name: str, value: Any) -> str:
    if isinstance(value, dict | list):
        raise VaultError(f"{name} must be text, not a {'list' if isinstance(value, list) else 'mapping'}")
    return str(value)


def _labels(name: str, value: Any) -> list[str]:
    """Tags or topics as a list; Obsidian also writes them as one text (`tags: a, b`) and with a leading #."""
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else value
    if not isinstance(items, list) or any(isinstance(item, dict | list) for item in items):
        raise VaultError(f"{name} must be a list of labels, e.g. [billing, api]")
    return [label for item in items if (label := str(item).strip().lstrip("#"))]


def _heading(content: str) -> str | None:
    """The text of the first Markdown heading, if any."""
    match = re.search(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", content, re.MULTILINE)
    return match.group(1) if match else None


def known_ids(memories: Iterable[dict[str, Any]]) -> set[str]:
    """The ids a namespace knows its memories by: their own and the vault ids of those imported from a vault."""
    known: set[str] = set()
    for memory in memories:
        known.add(str(memory["id"]))
        if vault_id := (memory.get("metadata") or {}).get(VAULT_ID):
            known.add(str(vault_id))
    return known


def chunks(notes: list[Note]) -> Iterator[tuple[int, list[Note]]]:
    """(first line number, notes) of at most CHUNK_FILES notes and about MAX_FILE_BYTES each."""
    first, size = 1, 0
    chunk: list[Note] = []
    for number, note in enumerate(notes, start=1):
        length = len(json.dumps(note.line, ensure_ascii=False).encode())
        if chunk and (len(chunk) >= CHUNK_FILES or size + length > MAX_FILE_BYTES):
            yield first, chunk
            chunk, size = [], 0
        if not chunk:
            first = number
        chunk.append(note)
        size += length
    if chunk:
        yield first, chunk
