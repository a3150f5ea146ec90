"""The seed's pack tools, with its names, parameters and plain-text answers, so that the seed's system prompt works
unchanged: list_engrams, get_engram_info, load_engram, read_engram_file, write_engram_file, capture_memory,
correct_memory, add_knowledge, install_engram, search_engram_knowledge. delete_memory and consolidate_memory are
Engram's own tools, which also take the seed's pack form (tools/memories.py, tools/consolidation.py)."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BeforeValidator, Field

from engram.config import Settings
from engram.packs.format import MAX_NAME_CHARS, NAME_PATTERN
from engram.packs.source import fetch_pack
from engram.services.gateway.mcp.callers import CallerOf
from engram.services.gateway.mcp.descriptions import INSTALL, READ, WRITE
from engram.services.gateway.operations.packs import PackService
from engram.services.gateway.operations.packs.service import require_packs_scope
from engram.services.gateway.schemas.arguments import not_a_bool

PackName = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN,
        description="The pack's name (list_engrams).",
    ),
]  # fmt: skip

PackPath = Annotated[
    str, Field(min_length=1, max_length=255, description="A file inside the pack, e.g. 'knowledge/_index.md'.")
]

Category = Annotated[
    str, Field(min_length=1, max_length=64, description="The memory file's category, e.g. 'user-profile'.")
]

Summary = Annotated[str, Field(max_length=500, description="One line for the memory index.")]

Text = Annotated[str, Field(min_length=1, pattern=r"\S", description="Markdown text.")]

SeedType = Literal["preference", "fact", "decision", "history", "general", "inferred", "stated"]

FileName = Annotated[
    str, Field(min_length=1, max_length=200, pattern=r"\S", description="The knowledge file's name, e.g. 'squats'.")
]

WriteMode = Annotated[Literal["overwrite", "append"], Field(description="'overwrite' (default) or 'append'.")]

CorrectedType = Annotated[SeedType, Field(description="The corrected memory's type (see capture_memory).")]

Focus = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S", description="What to look for.")]

SeedTags = Annotated[list[str] | None, Field(description="Optional tags for filtering, e.g. ['fitness', 'injury'].")]


class PackTools:
    """The pack tools, each declared once as a method (its name, parameters and docstring are the tool's), with what
    they use given to the instance: the pack service, the settings and how a call's caller is resolved."""

    def __init__(self, packs: PackService, settings: Settings, caller: CallerOf) -> None:
        self._packs, self._settings, self._caller = packs, settings, caller

    async def list_engrams(self, ctx: Context) -> str:
        """List the expert packs (Engrams) installed in your namespace. Call it at the start of a conversation;
        when the user's question matches a pack's description, or the user names one with @name, call
        load_engram(name, query), then read_engram_file(name, path) for the knowledge or cases you need."""
        installed = await self._packs.installed(self._caller(ctx))
        if not installed:
            return "No packs installed yet. Install one with install_engram(source) or `engram packs install`."
        return "\n".join(
            f"- {p['name']}: {p['description']} (knowledge={p['knowledge_count']}, examples={p['examples_count']})"
            for p in installed
        )

    async def get_engram_info(self, name: PackName, ctx: Context) -> str:
        """One pack's meta.json: its name, description, version, author, tags and the pack it extends. Use it to
        tell packs apart before load_engram."""
        contents = await self._packs.contents(self._caller(ctx), name)
        return json.dumps(contents.meta, ensure_ascii=False, indent=2)

    async def load_engram(self, name: PackName, query: str, ctx: Context) -> str:
        """Load an expert pack in layers: its role, workflow and rules in full; its knowledge index with inline
        summaries (and its parent's under extends); its examples index with the knowledge each case uses; what it
        remembers of the user (<memory>) and the user's global memory (<global_memory>); and an onboarding block on
        the first session. Answer as that expert afterwards. query: what the user is asking about (the most relevant
        knowledge is listed too)."""
        return await self._packs.load(self._caller(ctx), name, query)

    async def read_engram_file(self, name: PackName, path: PackPath, ctx: Context) -> str:
        """Read one file of a pack after load_engram: knowledge/*.md, examples/*.md, or its memory files
        (memory/_index.md, memory/_index_full.md, memory/<category>.md, -archive.md, -expired.md). name '_global'
        reads the global memory. Paths outside the pack are refused."""
        text = await self._packs.read_file(self._caller(ctx), name, path)
        return f"## {path}\n{text.strip()}" if text.strip() else f"File is empty: {path}"

    async def write_engram_file(
        self,
        name: PackName,
        path: PackPath,
        content: str,
        ctx: Context,
        mode: WriteMode = "overwrite",
    ) -> str:
        """Create or change a file of a pack (role.md, workflow.md, rules.md, knowledge/*.md, examples/*.md,
        meta.json); mode 'append' adds to the end. Every change is a new version (memory history shows who changed
        what). Only the pack's installer or a key with the packs scope may; memory/ files change through
        capture_memory, correct_memory, delete_memory and consolidate_memory."""
        await self._packs.write_file(self._caller(ctx), name, path, content, mode)
        return f"{'Appended' if mode == 'append' else 'Written'}: {path}"

    async def capture_memory(
        self,
        name: PackName,
        content: Text,
        category: Category,
        summary: Summary,
        ctx: Context,
        memory_type: Annotated[
            SeedType,
            Field(
                description="preference | fact | decision | history | general | inferred (you deduced it) | "
                "stated (the user said it)."
            ),
        ] = "general",
        tags: SeedTags = None,
        conversation_id: Annotated[str | None, Field(max_length=200, description="Optional conversation id.")] = None,
        expires: Annotated[
            str | None, Field(description="Optional expiry date, e.g. '2026-06-01': afterwards it leaves the load.")
        ] = None,
        is_global: Annotated[
            bool, Field(description="True: the user's global memory, loaded with every pack (age, city, ...).")
        ] = False,
    ) -> str:
        """Remember something about the user while an expert pack is loaded: a preference, personal context, a
        decision, feedback. It is stored in memory/<category>.md, indexed, loaded by future load_engram calls and
        visible to every agent of the namespace. The same content captured again within 30 seconds is skipped."""
        _, memory = await self._packs.capture(
            self._caller(ctx), name, content, category, summary, memory_type=memory_type, tags=tags,
            conversation_id=conversation_id, expires=expires, is_global=is_global,
        )  # fmt: skip
        scope = "[global] " if is_global else ""
        kind = f"[{memory_type}] " if memory_type != "general" else ""
        until = f" (expires:{expires})" if expires else ""
        if memory is None:
            return f"Already recorded less than 30 s ago: {scope}{kind}[{category}] {summary}"
        return f"Recorded: {scope}{kind}[{category}] {summary}{until}"

    async def correct_memory(
        self,
        name: PackName,
        category: Category,
        old_summary: Summary,
        new_content: Text,
        new_summary: Summary,
        ctx: Context,
        memory_type: CorrectedType = "general",
        tags: SeedTags = None,
    ) -> str:
        """Correct a memory a pack captured, found by its category and its summary as memory/_index.md shows it:
        a new version with the corrected content and summary (its history keeps the old one)."""
        await self._packs.correct(
            self._caller(ctx), name, category, old_summary, new_content, new_summary, memory_type=memory_type, tags=tags
        )
        kind = f"[{memory_type}] " if memory_type != "general" else ""
        return f"Corrected: {kind}[{category}] {new_summary}"

    async def add_knowledge(
        self, name: PackName, filename: FileName, content: Text, summary: Summary, ctx: Context
    ) -> str:
        """Add a knowledge file to a pack (knowledge/<filename>.md; nested names like 'training/squats' work) and
        its line to the knowledge index."""
        path = await self._packs.add_knowledge(self._caller(ctx), name, filename, content, summary)
        return f"Added knowledge: {path} — {summary}"

    async def install_engram(
        self,
        source: Annotated[str, Field(min_length=1, max_length=2000, description="An https git URL of the pack.")],
        ctx: Context,
    ) -> str:
        """Install an expert pack from a git repository (https) into your namespace: its files become searchable,
        versioned memories. Needs a key with the packs (or admin) scope. Hooks never run; size and file count are
        limited."""
        who = self._caller(ctx)
        require_packs_scope(who)  # before anything is fetched for this caller
        with tempfile.TemporaryDirectory(prefix="engram-pack-") as workdir:
            pack = await asyncio.to_thread(fetch_pack, source, Path(workdir), local=self._settings.packs_local_sources)
        result = await self._packs.install(who, pack)
        description = pack.meta.get("description", "")
        return f"Installed: {result['name']} - {description} ({result['files']} files)"

    async def search_engram_knowledge(
        self,
        name: PackName,
        query: Focus,
        ctx: Context,
        limit: Annotated[
            int, Field(ge=1, le=20, description="How many sections (1-20)."), BeforeValidator(not_a_bool)
        ] = 5,
    ) -> str:
        """Search one pack's knowledge and examples (hybrid search, long files cut at their headings): the sections
        that best answer query, best first, with the file to read_engram_file for more."""
        hits = await self._packs.search_knowledge(self._caller(ctx), name, query, limit=limit)
        if not hits:
            return f"Nothing in pack '{name}' matches '{query}'."
        return "\n\n".join(f"### {path} — {section}\n{text.strip()}" for path, section, text in hits)


# The tools in the order tools/list gives them, with their annotations.
TOOLS = (
    (PackTools.list_engrams, READ),
    (PackTools.get_engram_info, READ),
    (PackTools.load_engram, READ),
    (PackTools.read_engram_file, READ),
    (PackTools.write_engram_file, WRITE),
    (PackTools.capture_memory, WRITE),
    (PackTools.correct_memory, WRITE),
    (PackTools.add_knowledge, WRITE),
    (PackTools.install_engram, INSTALL),
    (PackTools.search_engram_knowledge, READ),
)


def register(server: MCPServer, packs: PackService, settings: Settings, caller: CallerOf) -> None:
    """Adds the pack tools to ``server``."""
    tools = PackTools(packs, settings, caller)
    for method, hints in TOOLS:
        server.add_tool(getattr(tools, method.__name__), annotations=hints)
