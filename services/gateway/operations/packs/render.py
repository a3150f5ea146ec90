"""The seed's text forms of what a pack holds, rendered from memories: the memory/ files (hot index, full index, a
file per category, -archive and -expired), their lines, the packs prompt, the onboarding block, and the seed's
expiry dates."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.errors import InvalidArgument
from engram.model import Memory
from engram.services.gateway.operations.memories import expiry_time

HOT_LIMIT = 50  # the seed's hot index: the latest 50 captured memories

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

ONBOARDING = re.compile(r"^##\s+Onboarding\s*\n(.*?)(?=\n##\s|\Z)", re.DOTALL | re.MULTILINE)


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


def category_of(memory: Memory) -> str:
    return str(memory.metadata.get("category") or "general")


def _seed_type(memory: Memory) -> str:
    if memory.metadata.get("consolidated"):
        return "consolidated"
    return str(memory.metadata.get("seed_type") or memory.memory_type)


def expired(memory: Memory, now: float) -> bool:
    return memory.status == "expired" or (memory.expires_at is not None and memory.expires_at <= now)


def _archived(memory: Memory) -> bool:
    return memory.status in ("archived", "superseded") and any(r.kind == "merged-into" for r in memory.relations)


def index_line(memory: Memory) -> str:
    """One entry of the seed's memory index: - `memory/<category>.md` [time] [type] expires:date [tags] summary."""
    expires = f" expires:{_day(memory.expires_at)}" if memory.expires_at is not None else ""
    tags = f" [{','.join(memory.tags)}]" if memory.tags else ""
    return (
        f"- `memory/{category_of(memory)}.md` [{_stamp(memory.created_at)}] [{_seed_type(memory)}]{expires}{tags} "
        + (memory.summary or memory.content.splitlines()[0][:120])
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
        latest[category_of(memory)] = memory
    lines = ["## Categories\n"]
    lines += [f"- `{c}` [{_stamp(m.created_at)}] [{_seed_type(m)}] {m.summary}\n" for c, m in sorted(latest.items())]
    lines.append(f"\n## Latest memories (at most {HOT_LIMIT})\n")
    lines += [index_line(m) + "\n" for m in active[-HOT_LIMIT:]]
    return "".join(lines)


def render_memory_files(captured: Iterable[Memory], *, now: float) -> dict[str, str]:
    """The seed's memory/ folder, from the captured memories: _index.md (hot), _index_full.md, <category>.md,
    <category>-archive.md (replaced by a consolidation) and <category>-expired.md."""
    ordered = sorted(captured, key=lambda m: (m.created_at or 0, m.id))
    active = [m for m in ordered if m.status == "active" and not expired(m, now)]
    files: dict[str, str] = {}
    if active:
        files["memory/_index.md"] = hot_index(active)
        files["memory/_index_full.md"] = "".join(index_line(m) + "\n" for m in active)
    for memory in ordered:
        if memory in active:
            suffix = ""
        elif expired(memory, now):
            suffix = "-expired"
        elif _archived(memory):
            suffix = "-archive"
        else:
            continue  # deleted: in its history only
        path = f"memory/{category_of(memory)}{suffix}.md"
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
    match = ONBOARDING.search(rules)
    return match.group(1).strip() if match else ""
