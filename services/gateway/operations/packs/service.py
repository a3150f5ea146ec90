"""The pack service: the operations the MCP tools and REST share (install, load, read and write files, capture and
correct what a pack remembers, search its knowledge), for an already resolved caller, and who may do them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from engram.errors import InvalidArgument, PermissionDenied
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
from engram.services.gateway.backend import Backend
from engram.services.gateway.identity import require_scope
from engram.services.gateway.operations.cursors import CursorTracker
from engram.services.gateway.operations.packs.errors import PackExists, PackFileNotFound, PackNotFound
from engram.services.gateway.operations.packs.render import (
    ONBOARDING,
    category_of,
    expired,
    onboarding_block,
    render_memory_files,
    seed_expiry,
)
from engram.services.gateway.operations.packs.storage import (
    META_TAG,
    PackContents,
    StoredFile,
    file_counts,
    part_input,
    part_text,
    split_file,
)
from engram.validation import check_storable

PACKS_SCOPE = "packs"

CONSOLIDATE_HINT = 30  # the seed's hint to consolidate, from this many entries in the hot index on

THROTTLE_SECONDS = 30.0  # the seed's duplicate throttle: the same capture again within this is skipped

SEED_TYPES = ("preference", "fact", "decision", "history", "general")  # the seed's memory types that are Engram's

CONFIDENCE_TYPES = ("inferred", "stated")  # the seed's memory types that are Engram's confidence

ALL_STATUSES = ["active", "archived", "expired", "superseded"]


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
                text = ONBOARDING.sub("", text).strip()  # shown on its own below, until the pack is onboarded
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
            draft = part_input(name, path, index, len(pieces), piece)
            if index < len(old):
                if part_text(old[index]) == piece and old[index].metadata.get("parts") == len(pieces):
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
            if category_of(memory) == category and wanted in memory.summary and not expired(memory, now):
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
        ids = [m.id for m in contents.captured if category_of(m) == category and not expired(m, now)]
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
