"""Expert packs on Engram's memory: the seed's pack tools (list_engrams, load_engram, capture_memory, ...) over
memories of the caller's namespace.

Storage. Every file of a pack is one or more memories of type ``pack-file`` (a long file is cut at its headings, so
a search finds the section it needs); metadata names the pack, the path, the part and the whitespace around it, so
``read_engram_file`` gives the file back exactly. ``meta.json`` is one such memory, tagged ``pack-meta``. What a pack
captures of its user (``capture_memory``) is an ordinary memory with ``metadata.pack`` and ``metadata.category``:
versioned, searchable, synced and seen by every agent of the namespace. The seed's ``memory/`` files (the hot index
of the latest 50, the full index, one file per category, ``-archive`` and ``-expired``) are rendered from those
memories on demand: consolidation archives with a merged-into relation, expiry is the lifecycle's expiry.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.errors import EngramError, InvalidArgument, PermissionDenied
from engram.model import PACK_FILE, Caller, Memory, MemoryInput, SearchFilter
from engram.ownership import UNOWNED, is_admin
from engram.packs.format import (
    BASE_FILES,
    EXAMPLES_INDEX,
    GLOBAL_PACK,
    KNOWLEDGE_INDEX,
    META,
    Pack,
    PackLimits,
    check_pack_name,
    check_pack_path,
    parse_meta,
)
from engram.scrub import scrub_text
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.memories import expiry_time
from engram.validation import check_storable

PACKS_SCOPE = "packs"
META_TAG = "pack-meta"
CHUNK_CHARS = 2000  # a file longer than this is cut at its headings into parts of about this size
MAX_PART_CHARS = 6000  # a part is never longer (24 KiB of UTF-8 at most: within the content limit)
EMPTY = "(empty file)"  # the content of an empty file's memory (a memory has content)
HOT_LIMIT = 50  # the seed's hot index: the latest 50 captured memories
CONSOLIDATE_HINT = 30  # the seed's hint to consolidate, from this many entries in the hot index on
THROTTLE_SECONDS = 30.0  # the seed's duplicate throttle: the same capture again within this is skipped
SEED_TYPES = ("preference", "fact", "decision", "history", "general")  # the seed's memory types that are Engram's
CONFIDENCE_TYPES = ("inferred", "stated")  # the seed's memory types that are Engram's confidence
ALL_STATUSES = ["active", "archived", "expired", "superseded"]
_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ONBOARDING = re.compile(r"^##\s+Onboarding\s*\n(.*?)(?=\n##\s|\Z)", re.DOTALL | re.MULTILINE)


class PackNotFound(EngramError):
    code = "not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"No pack named '{name}' is installed in this namespace. Call list_engrams to see the packs.")


class PackExists(EngramError):
    code = "already_exists"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"A pack named '{name}' is installed already. Install it with replace (the CLI's --replace) to update "
            "its files; what it remembered of its user is kept."
        )


class PackFileNotFound(EngramError):
    code = "not_found"

    def __init__(self, name: str, path: str) -> None:
        super().__init__(f"Pack '{name}' has no file '{path}'. The indexes in load_engram list its files.")


@dataclass(slots=True)
class StoredFile:
    """A pack file as memories: its parts in order."""

    path: str
    parts: list[Memory]

    @property
    def text(self) -> str:
        return "".join(_part_text(part) for part in self.parts)


@dataclass(slots=True)
class PackContents:
    """Everything of one pack in the index: its files and what it captured."""

    name: str
    meta: dict[str, Any]
    owner: str
    files: dict[str, StoredFile]
    captured: list[Memory]

    def file(self, path: str) -> str | None:
        stored = self.files.get(path)
        return stored.text if stored is not None else None


def split_file(text: str) -> list[str]:
    """The parts a file is stored in, whose concatenation is the file (scrubbed): a short file whole; a long one cut
    before its headings into parts of about CHUNK_CHARS (none longer than MAX_PART_CHARS). The whole text is
    scrubbed before it is cut, so that no secret is cut in two halves that each pass the scrubbing of its part."""
    text = scrub_text(text).text
    if len(text) <= CHUNK_CHARS:
        return [text]
    starts = [0, *(m.start() for m in _HEADING.finditer(text) if m.start() > 0), len(text)]
    sections = [text[a:b] for a, b in itertools.pairwise(starts) if b > a]
    parts: list[str] = []
    for section in sections:
        for piece in _cut(section):
            if parts and len(parts[-1]) + len(piece) <= CHUNK_CHARS:
                parts[-1] += piece
            else:
                parts.append(piece)
    return parts


def _cut(section: str) -> list[str]:
    """A section no longer than MAX_PART_CHARS, cut at blank lines (else anywhere) when it is longer."""
    if len(section) <= MAX_PART_CHARS:
        return [section]
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"(?<=\n\n)", section):
        while len(paragraph) > MAX_PART_CHARS:
            pieces += [current] if current else []
            current = ""
            pieces.append(paragraph[:MAX_PART_CHARS])
            paragraph = paragraph[MAX_PART_CHARS:]
        if len(current) + len(paragraph) > MAX_PART_CHARS:
            pieces.append(current)
            current = ""
        current += paragraph
    return [*pieces, current] if current else pieces


def _part_text(memory: Memory) -> str:
    meta = memory.metadata
    if meta.get("empty"):
        return str(meta.get("lead", ""))
    return f"{meta.get('lead', '')}{memory.content}{meta.get('trail', '')}"


def _part_input(name: str, path: str, index: int, count: int, text: str) -> MemoryInput:
    stripped = text.strip()
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :] if stripped else ""
    metadata: dict[str, Any] = {"pack": name, "pack_path": path, "part": index, "parts": count}
    if lead:
        metadata["lead"] = lead
    if trail:
        metadata["trail"] = trail
    if not stripped:
        metadata["empty"] = True
    heading = next((line.lstrip("# ").strip() for line in stripped.splitlines() if line.startswith("#")), "")
    if path == META:
        metadata["meta"] = json.loads(text)  # read by list_engrams without reassembling the file
    return MemoryInput(
        content=stripped or EMPTY,
        summary=f"{name}: {path}" + (f" — {heading}" if heading else ""),
        memory_type=PACK_FILE,
        tags=[META_TAG] if path == META else [],
        metadata_json=json.dumps(metadata, ensure_ascii=False),
        context=f"Expert pack {name}, file {path}" + (f", section {heading}" if heading else ""),
    )


def seed_expiry(value: str | None, *, now: float) -> float | None:
    """The seed's ``expires`` (a date: the memory leaves the load the day after) or an Engram expiry (RFC 3339 time,
    or a duration such as 30d)."""
    if value and _DATE.match(value.strip()):
        try:
            day = datetime.strptime(value.strip(), "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError as e:
            raise InvalidArgument("expires", f"'{value}' is not a date; give YYYY-MM-DD, e.g. '2026-06-01'.") from e
        return (day + timedelta(days=1)).timestamp()
    try:
        return expiry_time(value, now=now)
    except InvalidArgument as e:
        raise InvalidArgument("expires", f"'{value}' is not a date; give YYYY-MM-DD, e.g. '2026-06-01'.") from e


def _stamp(moment: float | None) -> str:
    return datetime.fromtimestamp(moment or 0, UTC).strftime("%Y-%m-%d %H:%M")


def _day(moment: float) -> str:
    """The last day a memory expiring at ``moment`` is loaded (seed_expiry's inverse: the seed's expires date)."""
    return datetime.fromtimestamp(moment - 1, UTC).strftime("%Y-%m-%d")


def file_counts(paths: Iterable[str]) -> dict[str, int]:
    """A pack's files, knowledge files and examples (the indexes not counted), from its paths."""
    paths = list(paths)
    return {
        "files": len(paths),
        "knowledge": sum(1 for p in paths if p.startswith("knowledge/") and not p.endswith("_index.md")),
        "examples": sum(1 for p in paths if p.startswith("examples/") and not p.endswith("_index.md")),
    }


def _category(memory: Memory) -> str:
    return str(memory.metadata.get("category") or "general")


def _seed_type(memory: Memory) -> str:
    if memory.metadata.get("consolidated"):
        return "consolidated"
    return str(memory.metadata.get("seed_type") or memory.memory_type)


def _expired(memory: Memory, now: float) -> bool:
    return memory.status == "expired" or (memory.expires_at is not None and memory.expires_at <= now)


def _archived(memory: Memory) -> bool:
    return memory.status in ("archived", "superseded") and any(r.kind == "merged-into" for r in memory.relations)


def index_line(memory: Memory) -> str:
    """One entry of the seed's memory index: - `memory/<category>.md` [time] [type] expires:date [tags] summary."""
    expires = f" expires:{_day(memory.expires_at)}" if memory.expires_at is not None else ""
    tags = f" [{','.join(memory.tags)}]" if memory.tags else ""
    return f"- `memory/{_category(memory)}.md` [{_stamp(memory.created_at)}] [{_seed_type(memory)}]{expires}{tags} " + (
        memory.summary or memory.content.splitlines()[0][:120]
    )


def entry_block(memory: Memory) -> str:
    """One entry of a category file: the seed's ``---`` block with its time, type, expiry, tags and conversation."""
    parts = [f"[{_stamp(memory.created_at)}]", f"type:{_seed_type(memory)}"]
    if memory.expires_at is not None:
        parts.append(f"expires:{_day(memory.expires_at)}")
    if memory.tags:
        parts.append(f"tags:{','.join(memory.tags)}")
    if memory.conversation_id:
        parts.append(f"conv:{memory.conversation_id}")
    return f"\n---\n{' '.join(parts)}\n{memory.content.strip()}\n"


def hot_index(active: Sequence[Memory]) -> str:
    """The seed's hot index: the latest entry of each category, then the latest 50 entries (oldest first)."""
    if not active:
        return ""
    latest: dict[str, Memory] = {}
    for memory in active:
        latest[_category(memory)] = memory
    lines = ["## Categories\n"]
    lines += [f"- `{c}` [{_stamp(m.created_at)}] [{_seed_type(m)}] {m.summary}\n" for c, m in sorted(latest.items())]
    lines.append(f"\n## Latest memories (at most {HOT_LIMIT})\n")
    lines += [index_line(m) + "\n" for m in active[-HOT_LIMIT:]]
    return "".join(lines)


def render_memory_files(captured: Iterable[Memory], *, now: float) -> dict[str, str]:
    """The seed's memory/ folder, from the captured memories: _index.md (hot), _index_full.md, <category>.md,
    <category>-archive.md (replaced by a consolidation) and <category>-expired.md."""
    ordered = sorted(captured, key=lambda m: (m.created_at or 0, m.id))
    active = [m for m in ordered if m.status == "active" and not _expired(m, now)]
    files: dict[str, str] = {}
    if active:
        files["memory/_index.md"] = hot_index(active)
        files["memory/_index_full.md"] = "".join(index_line(m) + "\n" for m in active)
    for memory in ordered:
        if memory in active:
            suffix = ""
        elif _expired(memory, now):
            suffix = "-expired"
        elif _archived(memory):
            suffix = "-archive"
        else:
            continue  # deleted: in its history only
        path = f"memory/{_category(memory)}{suffix}.md"
        files[path] = files.get(path, "") + entry_block(memory)
    return files


def packs_prompt(installed: Sequence[dict[str, Any]]) -> str:
    """The seed's system prompt for expert packs, listing the installed ones (engram-system-prompt ends with it)."""
    if not installed:
        return "# Expert packs (Engrams)\n\nNo expert pack is installed yet; install_engram(source) installs one."
    entries = "\n".join(
        f"  <engram>\n    <name>{p['name']}</name>\n    <description>{p['description']}</description>\n  </engram>"
        for p in installed
    )
    return f"""# Expert packs (Engrams)

You can load an expert's pack: its persona, way of thinking and knowledge; you then think and answer as that expert.
A pack does not replace your own abilities; use it where it fits.

## Installed packs

<engrams>
{entries}
</engrams>

## How to use them

1. At the start of a conversation, call list_engrams() to see the experts.
2. When the user's question matches a pack, or the user names one with @name, call load_engram(name, query).
3. From its knowledge index (with summaries) and examples index (with the knowledge each uses), decide what to read.
4. For details, call read_engram_file(name, path); search_engram_knowledge(name, query) finds sections by meaning.
5. Answer as that expert: keep its communication style, judgement and values.
6. When the user reveals a preference, personal context or a key decision, call capture_memory(name, content,
   category, summary, memory_type, tags, conversation_id, expires, is_global). memory_type: preference, fact,
   decision, history, general, inferred (you deduced it) or stated (the user said it). expires: a date such as
   '2026-06-01', after which it leaves the load. is_global=True: the user's global memory, shared by every pack.
7. The next load_engram of the pack brings its memory and the global memory back; the user need not repeat it.
8. When a category has more than 30 entries, read it with read_engram_file, then call consolidate_memory(name,
   category, consolidated_content, summary): one dense entry replaces them, the originals are archived.
9. If the load shows an Onboarding block, learn what it lists naturally in the conversation and capture_memory it.
10. An "Inherited knowledge index" comes from the parent pack: read_engram_file(parent, path) reads its files.
"""


def onboarding_block(rules: str) -> str:
    match = _ONBOARDING.search(rules)
    return match.group(1).strip() if match else ""


class PackService:
    """The pack operations for an already resolved caller (the MCP tools and REST share it)."""

    def __init__(self, backend: Backend, cursors: CursorTracker, *, limits: PackLimits | None = None) -> None:
        self._backend = backend
        self._cursors = cursors
        self._limits = limits or PackLimits()
        self._recent_captures: dict[str, float] = {}

    # -- reading -------------------------------------------------------------------------------------------

    async def _scan(self, caller: Caller, flt: SearchFilter) -> list[Memory]:
        memories: list[Memory] = []
        async for batch, _ in self._backend.search_client.scan(
            caller, flt, min_seq=self._cursors.min_seq(caller.namespace)
        ):
            memories += batch
        return memories

    async def installed(self, caller: Caller) -> list[dict[str, Any]]:
        """The installed packs, by name: their meta.json plus file counts."""
        require_scope(caller, "read")
        paths: dict[str, set[str]] = {}
        metas: list[Memory] = []
        for memory in await self._scan(caller, SearchFilter(memory_types=[PACK_FILE])):
            paths.setdefault(str(memory.metadata.get("pack", "")), set()).add(str(memory.metadata.get("pack_path")))
            if META_TAG in memory.tags:
                metas.append(memory)
        packs = []
        for memory in sorted(metas, key=lambda m: str(m.metadata.get("pack", ""))):
            meta = dict(memory.metadata.get("meta") or {})
            counts = file_counts(paths.get(str(memory.metadata.get("pack", "")), set()) - {META})
            packs.append({
                "name": memory.metadata.get("pack", ""), "description": meta.get("description", ""),
                "version": meta.get("version", ""), "extends": meta.get("extends") or "",
                "tags": meta.get("tags", []), "author": meta.get("author", ""),
                "knowledge_count": meta.get("knowledge_count", counts.get("knowledge", 0)),
                "examples_count": meta.get("examples_count", counts.get("examples", 0)),
                "files": counts.get("files", 0),
            })  # fmt: skip
        return packs

    async def contents(self, caller: Caller, name: str, *, statuses: Sequence[str] = ("active",)) -> PackContents:
        """One pack's files and captured memories (of ``statuses``); PackNotFound when it is not installed."""
        require_scope(caller, "read")
        memories = await self._scan(caller, SearchFilter(pack=name, statuses=list(statuses)))
        return self._assemble(name, memories, required=True)

    def _assemble(self, name: str, memories: Sequence[Memory], *, required: bool) -> PackContents:
        files: dict[str, list[Memory]] = {}
        captured: list[Memory] = []
        for memory in memories:
            if memory.memory_type != PACK_FILE:
                captured.append(memory)
            elif memory.status == "active":
                files.setdefault(str(memory.metadata.get("pack_path", "")), []).append(memory)
        meta_parts = files.get(META)
        if not meta_parts and required and name != GLOBAL_PACK:
            raise PackNotFound(name)
        meta = dict(meta_parts[0].metadata.get("meta") or {}) if meta_parts else {}
        stored = {
            path: StoredFile(path, sorted(parts, key=lambda m: int(m.metadata.get("part", 0))))
            for path, parts in files.items()
        }
        owner = meta_parts[0].owner_agent if meta_parts else ""
        return PackContents(name=name, meta=meta, owner=owner, files=stored, captured=captured)

    async def read_file(self, caller: Caller, name: str, path: str) -> str:
        """A file of the pack as the seed lays it out (memory/ files rendered from the captured memories)."""
        name = _pack_or_global(name)
        path = check_pack_path(path)
        if path.startswith("memory/"):
            contents = await self.contents(caller, name, statuses=ALL_STATUSES)
            text = render_memory_files(contents.captured, now=time.time()).get(path)
        else:
            contents = await self.contents(caller, name)
            text = contents.file(path)
        if text is None:
            raise PackFileNotFound(name, path)
        return text

    async def export(self, caller: Caller, name: str) -> Pack:
        """The whole pack in its folder layout, memory/ included."""
        contents = await self.contents(caller, check_pack_name(name), statuses=ALL_STATUSES)
        files = {path: stored.text for path, stored in contents.files.items() if path != META}
        files.update(render_memory_files(contents.captured, now=time.time()))
        return Pack(name=name, meta=contents.meta, files=files)

    async def load(self, caller: Caller, name: str, query: str) -> str:
        """The layered load: role, workflow and rules in full; the knowledge index (and the parent's, one level);
        the examples index; the hot memory; the global memory; the onboarding block until the pack is onboarded."""
        name = check_pack_name(name)
        contents, global_memory = await asyncio.gather(
            self.contents(caller, name, statuses=ALL_STATUSES), self._global(caller)
        )
        parent = contents.meta.get("extends")
        parent_index = ""
        if isinstance(parent, str) and parent and parent != name:
            try:
                parent_index = (await self.contents(caller, parent)).file(KNOWLEDGE_INDEX) or ""
            except PackNotFound:
                parent_index = f"(the parent pack '{parent}' is not installed)"
        now = time.time()
        sections = [f"# Loaded Engram: {name}", f"## User focus\n{query.strip()}"]
        for title, path in zip(("Role", "Workflow", "Rules"), BASE_FILES, strict=True):
            text = (contents.file(path) or "").strip()
            if path == "rules.md":
                text = _ONBOARDING.sub("", text).strip()  # shown on its own below, until the pack is onboarded
            if text:
                sections.append(f"## {title}\n{text}")
        if parent_index.strip():
            sections.append(f"## Inherited knowledge index (from {parent})\n{parent_index.strip()}")
        for title, path in (("Knowledge index", KNOWLEDGE_INDEX), ("Examples index", EXAMPLES_INDEX)):
            text = (contents.file(path) or "").strip()
            if text:
                sections.append(f"## {title}\n{text}")
        relevant = await self._relevant(caller, name, query)
        if relevant:
            sections.append("## Most relevant to the focus\n" + relevant)
        memory = render_memory_files(contents.captured, now=now).get("memory/_index.md", "").strip()
        if memory:
            count = sum(1 for line in memory.splitlines() if line.startswith("- `memory/"))
            hint = (
                f"\n💡 {count} memories, consider consolidating the categories with many entries (consolidate_memory)."
                if count >= CONSOLIDATE_HINT
                else ""
            )
            sections.append(f"## Memory\n<memory>\n{memory}\n</memory>{hint}")
        shared = render_memory_files(global_memory, now=now).get("memory/_index.md", "").strip()
        if shared:
            sections.append(f"## Global user memory\n<global_memory>\n{shared}\n</global_memory>")
        onboarding = onboarding_block(contents.file("rules.md") or "")
        if onboarding and not contents.captured:
            sections.append(
                "## Onboarding\n> This is the user's first session with this expert: learn the following naturally "
                f"in the conversation and record it with capture_memory.\n\n{onboarding}"
            )
        sections.append(
            "## Next step\nRead the summaries in the indexes and call read_engram_file(name, path) for the full "
            "knowledge or examples you need."
        )
        return "\n\n".join(sections)

    async def _global(self, caller: Caller) -> list[Memory]:
        memories = await self._scan(caller, SearchFilter(pack=GLOBAL_PACK, statuses=ALL_STATUSES))
        return [m for m in memories if m.memory_type != PACK_FILE]

    async def _relevant(self, caller: Caller, name: str, query: str, limit: int = 3) -> str:
        if not query.strip():
            return ""
        hits = await self.search_knowledge(caller, name, query, limit=limit)
        return "\n".join(f"- `{path}` — {summary}" for path, summary, _ in hits)

    async def search_knowledge(
        self, caller: Caller, name: str, query: str, *, limit: int = 5
    ) -> list[tuple[str, str, str]]:
        """The parts of the pack's files that best answer ``query``: (path, section summary, text), best first."""
        require_scope(caller, "read")
        name = check_pack_name(name)
        if not query.strip():
            raise InvalidArgument("query", "is required: what to look for in the pack's knowledge.")
        result = await self._backend.search(
            caller, query, limit=limit, flt=SearchFilter(pack=name, memory_types=[PACK_FILE]),
            min_seq=self._cursors.min_seq(caller.namespace),
        )  # fmt: skip
        hits = []
        for hit in result.hits:
            path = str(hit.memory.metadata.get("pack_path", ""))
            if path and path != META:
                hits.append((path, hit.memory.summary.partition(" — ")[2] or path, hit.memory.content))
        return hits

    # -- writing files -------------------------------------------------------------------------------------

    async def install(self, caller: Caller, pack: Pack, *, replace: bool = False) -> dict[str, Any]:
        """Stores a pack's files (the caller needs the admin or packs scope); with ``replace`` an installed pack's
        files are updated in place (new versions), files it no longer has are archived, its memories kept.

        meta.json is written last: until then the pack is not installed, and installing again (after a failure
        midway) updates the parts already written instead of writing them twice."""
        require_packs_scope(caller)
        name = check_pack_name(pack.name)
        check_storable(META, pack.meta)  # before any file is written: meta.json is stored last
        existing = self._assemble(name, await self._scan(caller, SearchFilter(pack=name)), required=False)
        installed = META in existing.files
        if installed and not replace:
            raise PackExists(name)
        files = {check_pack_path(path): text for path, text in pack.files.items() if not path.startswith("memory/")}
        writer = _elevated(caller)
        for path, text in files.items():
            await self._write_file(writer, name, path, text, existing)
        for path in set(existing.files) - set(files) - {META}:
            for part in existing.files[path].parts:
                await self._archive(writer, part)
        meta = json.dumps({**pack.meta, "name": name}, ensure_ascii=False, indent=2)
        await self._write_file(writer, name, META, meta, existing)
        return {"name": name, "files": len(files), "replaced": installed}

    async def write_file(self, caller: Caller, name: str, path: str, content: str, mode: str = "overwrite") -> str:
        """write_engram_file: creates or changes one file of the pack (each change a new version)."""
        name = check_pack_name(name)
        path = check_pack_path(path)
        if mode not in ("overwrite", "append"):
            raise InvalidArgument("mode", f"is '{mode}'; give 'overwrite' or 'append'.")
        if path.startswith("memory/"):
            raise InvalidArgument(
                "path", "memory/ files are written from the pack's memories: use capture_memory, correct_memory, "
                "delete_memory or consolidate_memory.",
            )  # fmt: skip
        contents = await self.contents(caller, name)
        writer = self._editor(caller, contents)
        text = content
        if mode == "append":
            text = (contents.file(path) or "") + content
        self._check_size(path, text)
        if path == META:
            text = json.dumps({**parse_meta(text), "name": name}, ensure_ascii=False, indent=2)
        await self._write_file(writer, name, path, text, contents)
        return path

    async def add_knowledge(self, caller: Caller, name: str, filename: str, content: str, summary: str) -> str:
        """Writes knowledge/<filename>.md and adds its line to the knowledge index (the nearest _index.md)."""
        normal = filename.strip().replace("\\", "/") if isinstance(filename, str) else ""
        if normal and not normal.endswith(".md"):
            normal += ".md"
        path = check_pack_path(f"knowledge/{normal}" if normal else "", field_name="filename")
        if not content.strip():
            raise InvalidArgument("content", "is required: the knowledge file's Markdown text.")
        await self.write_file(caller, name, path, content)
        folder_index = path.rsplit("/", 1)[0] + "/_index.md"
        contents = await self.contents(caller, check_pack_name(name))
        index = folder_index if folder_index in contents.files else KNOWLEDGE_INDEX
        current = contents.file(index) or ""
        line = f"- `{path}` - {summary.strip()}\n"
        await self.write_file(
            caller, name, index, current + ("" if not current or current.endswith("\n") else "\n") + line
        )
        return path

    def _check_size(self, path: str, text: str) -> None:
        size = len(text.encode())
        if size > self._limits.max_file_bytes:
            raise InvalidArgument("content", f"{path} would be {size} bytes; a pack file has at most "
                                  f"{self._limits.max_file_bytes}.")  # fmt: skip

    async def _write_file(self, writer: Caller, name: str, path: str, text: str, existing: PackContents) -> None:
        """Stores ``text`` as the parts of ``path``: changed parts become new versions, extra parts are archived."""
        pieces = [text] if path == META else split_file(text)  # meta.json stays whole: its part holds it parsed
        old = existing.files[path].parts if path in existing.files else []
        for index, piece in enumerate(pieces):
            draft = _part_input(name, path, index, len(pieces), piece)
            if index < len(old):
                if _part_text(old[index]) == piece and old[index].metadata.get("parts") == len(pieces):
                    continue
                outcome = await self._backend.update(
                    writer, old[index].id, draft, ["content", "summary", "metadata_json", "context", "tags"]
                )
            else:
                outcome = await self._backend.save(writer, draft)
            self._cursors.observe(writer.namespace, outcome.seq)
        for part in old[len(pieces) :]:
            await self._archive(writer, part)

    async def _archive(self, writer: Caller, memory: Memory) -> None:
        outcome = await self._backend.delete(writer, memory.id)
        self._cursors.observe(writer.namespace, outcome.seq)

    def _editor(self, caller: Caller, contents: PackContents) -> Caller:
        """Who may change a pack's files: its installer, or a caller with the packs or admin scope."""
        require_scope(caller, "write")
        # Ingest refuses a pack file from anyone else (engram.ownership.require_may_write_type, owns): the installer
        # writes its pack's files as the packs key it installed them with. A pack installed by nobody named is the
        # packs keys' alone.
        if PACKS_SCOPE in caller.scopes or is_admin(caller):
            return _elevated(caller)
        if contents.owner not in UNOWNED and contents.owner == caller.agent_id:
            return _elevated(caller)
        raise PermissionDenied(
            f"Pack '{contents.name}' was installed by '{contents.owner}', you are '{caller.agent_id}': only its "
            "installer or a key with the packs (or admin) scope changes its files. Capture what you learn with "
            "capture_memory instead."
        )

    # -- what a pack remembers -----------------------------------------------------------------------------

    async def capture(
        self, caller: Caller, name: str, content: str, category: str, summary: str, *, memory_type: str = "general",
        tags: Sequence[str] | None = None, conversation_id: str | None = None, expires: str | None = None,
        is_global: bool = False,
    ) -> tuple[str, Memory | None]:  # fmt: skip
        """capture_memory: a memory of the pack (or of every pack, ``is_global``); the same content again in the
        same category within 30 seconds is skipped (None), as the seed does."""
        require_scope(caller, "write")
        name = check_pack_name(name)
        category = _check_category(category)
        if not isinstance(content, str) or not content.strip():
            raise InvalidArgument("content", "is required: what to remember about the user.")
        kind = (memory_type or "general").strip().lower()
        if kind not in (*SEED_TYPES, *CONFIDENCE_TYPES):
            raise InvalidArgument(
                "memory_type", f"is '{memory_type}'; give one of {', '.join((*SEED_TYPES, *CONFIDENCE_TYPES))}."
            )
        pack = GLOBAL_PACK if is_global else name
        if not is_global:
            await self.contents(caller, name)  # the pack exists
        key = f"{caller.namespace}\x00{name}\x00{category}\x00{content[:120]}"
        now = time.monotonic()
        if now - self._recent_captures.get(key, -THROTTLE_SECONDS) < THROTTLE_SECONDS:
            return pack, None
        self._recent_captures = {k: t for k, t in self._recent_captures.items() if now - t < THROTTLE_SECONDS}
        self._recent_captures[key] = now
        draft = MemoryInput(
            content=content, summary=summary.strip() if isinstance(summary, str) else "",
            memory_type=kind if kind in SEED_TYPES else "general",
            confidence=kind if kind in CONFIDENCE_TYPES else "",
            tags=list(tags or []), topics=[category], conversation_id=conversation_id or "",
            expires_at=seed_expiry(expires, now=time.time()),
            metadata_json=json.dumps({"pack": pack, "category": category, "seed_type": kind}, ensure_ascii=False),
        )  # fmt: skip
        outcome = await self._backend.save(caller, draft)
        self._cursors.observe(caller.namespace, outcome.seq)
        return pack, outcome.memory

    async def find_entry(self, caller: Caller, name: str, category: str, summary: str) -> Memory:
        """The pack's active captured memory of ``category`` whose summary contains ``summary`` (the seed's match:
        delete_memory's and correct_memory's pack form)."""
        name = _pack_or_global(name)
        category = _check_category(category)
        wanted = summary.strip() if isinstance(summary, str) else ""
        if not wanted:
            raise InvalidArgument("summary", "is required: the entry's summary as the memory index shows it.")
        contents = await self.contents(caller, name)
        now = time.time()
        for memory in sorted(contents.captured, key=lambda m: m.created_at or 0):
            if _category(memory) == category and wanted in memory.summary and not _expired(memory, now):
                return memory
        raise InvalidArgument(
            "summary", f"no memory of pack '{name}' in category '{category}' has the summary '{wanted}'. Read "
            f"read_engram_file('{name}', 'memory/_index.md') for the exact summaries.",
        )  # fmt: skip

    async def correct(
        self, caller: Caller, name: str, category: str, old_summary: str, new_content: str, new_summary: str, *,
        memory_type: str = "general", tags: Sequence[str] | None = None,
    ) -> Memory:  # fmt: skip
        """correct_memory: a new version of the entry with the corrected content and summary (history keeps both)."""
        require_scope(caller, "write")
        memory = await self.find_entry(caller, name, category, old_summary)
        if not isinstance(new_content, str) or not new_content.strip():
            raise InvalidArgument("new_content", "is required: the corrected memory.")
        kind = (memory_type or "general").strip().lower()
        metadata = {**memory.metadata, "seed_type": kind}
        draft = MemoryInput(
            content=new_content, summary=new_summary.strip() if isinstance(new_summary, str) else "",
            memory_type=kind if kind in SEED_TYPES else "general", tags=list(tags or []),
            metadata_json=json.dumps(metadata, ensure_ascii=False),
        )  # fmt: skip
        fields = ["content", "summary", "memory_type", "metadata_json"] + (["tags"] if tags is not None else [])
        outcome = await self._backend.update(caller, memory.id, draft, fields, expected_version=memory.version)
        self._cursors.observe(caller.namespace, outcome.seq)
        return outcome.memory

    async def consolidate(
        self, caller: Caller, name: str, category: str, consolidated_content: str, summary: str, *, force: bool = False
    ) -> tuple[Memory, list[str]]:
        """consolidate_memory for a pack: one dense memory replaces the category's entries, which are archived with a
        merged-into relation (the seed's <category>-archive.md)."""
        require_scope(caller, "write")
        name = _pack_or_global(name)
        category = _check_category(category)
        if not isinstance(consolidated_content, str) or not consolidated_content.strip():
            raise InvalidArgument("consolidated_content", "is required: your dense summary of the category's entries.")
        contents = await self.contents(caller, name)
        now = time.time()
        ids = [m.id for m in contents.captured if _category(m) == category and not _expired(m, now)]
        if not ids:
            raise InvalidArgument(
                "category", f"pack '{name}' has no active memory in category '{category}' to consolidate."
            )
        draft = MemoryInput(
            content=consolidated_content, summary=summary.strip() if isinstance(summary, str) else "",
            topics=[category],
            metadata_json=json.dumps({"pack": name, "category": category, "consolidated": True}, ensure_ascii=False),
        )  # fmt: skip
        outcome = await self._backend.ingest.merge(
            caller, ids, replacement=draft, force=force, note=f"consolidated by {caller.agent_id}"
        )
        self._cursors.observe(caller.namespace, outcome.seq)
        return outcome.survivor, [m.id for m in outcome.merged]


def _check_category(category: Any) -> str:
    if not isinstance(category, str) or not category.strip():
        raise InvalidArgument("category", "is required: the memory file's category, e.g. 'user-profile'.")
    category = category.strip()
    if category.endswith(("-archive", "-expired")) or category.startswith("_"):
        raise InvalidArgument("category", f"'{category}' names a file Engram writes itself; choose another name.")
    check_pack_path(f"memory/{category}.md", field_name="category")
    if "/" in category:
        raise InvalidArgument("category", f"'{category}' has a slash; a category is one file name, e.g. 'preferences'.")
    return category


def _pack_or_global(name: Any) -> str:
    return GLOBAL_PACK if name == GLOBAL_PACK else check_pack_name(name)


def require_packs_scope(caller: Caller) -> None:
    if PACKS_SCOPE in caller.scopes or is_admin(caller):
        return
    raise PermissionDenied(
        f"Installing packs needs an API key with the packs (or admin) scope; this one grants "
        f"{', '.join(sorted(caller.scopes)) or 'nothing'}. Create one with `engram keys create --scopes "
        "read,write,packs`."
    )


def _elevated(caller: Caller) -> Caller:
    """The caller as the pack's files see it: a packs scope may change files others installed."""
    return dataclasses.replace(caller, scopes=caller.scopes | {"admin"})
