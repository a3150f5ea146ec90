"""A new pack from the English template in engram/packs/templates/pack: every file of the format, with text that
says what to write where. `engram packs lint` fails it until that text is replaced (``untouched``)."""

from __future__ import annotations

import re
import shutil
from functools import cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from engram.errors import InvalidArgument
from engram.packs.format import META, Pack, check_pack_name, parse_meta, write_pack_dir

TEMPLATE = "pack"


def init_pack(name: str, directory: Path) -> Path:
    """Writes a new pack named ``name`` into ``directory``/``name`` and returns that folder; refuses one that exists
    (nothing is overwritten) and leaves nothing behind when writing fails."""
    name = check_pack_name(name)
    target = directory / name
    try:
        target.mkdir(parents=True)
    except FileExistsError as e:
        raise InvalidArgument("name", f"{target} exists already: choose another name or --dir.") from e
    try:
        write_pack_dir(template_pack(name), target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def template_pack(name: str) -> Pack:
    """The template filled in for ``name``: {{name}} and {{title}} (the name in words) replaced in every file."""
    root = resources.files("engram.packs").joinpath("templates", TEMPLATE)
    title = name.replace("-", " ").replace("_", " ").strip()
    title = title[:1].upper() + title[1:]

    def fill(text: str) -> str:
        return text.replace("{{name}}", name).replace("{{title}}", title)

    files = dict(_texts(root, ""))
    meta = parse_meta(files.pop(META))  # filled as values, not as JSON text: a name may hold quotes
    meta = {key: fill(value) if isinstance(value, str) else value for key, value in meta.items()}
    return Pack(name=name, meta=meta, files={path: fill(text) for path, text in files.items()})


def untouched(path: str, text: str) -> bool:
    """True when ``text`` is still the template's text for ``path``, whatever name it was filled in for (a
    description: meta.json's "description")."""
    pattern = _template_patterns().get(path)
    return pattern is not None and pattern.fullmatch(text.strip()) is not None


@cache
def _template_patterns() -> dict[str, re.Pattern[str]]:
    """Each template file's text (and meta.json's description) as a pattern, {{name}} and {{title}} matching any."""
    files = dict(_texts(resources.files("engram.packs").joinpath("templates", TEMPLATE), ""))
    texts = {path: text for path, text in files.items() if path != META}
    texts["description"] = str(parse_meta(files[META])["description"])

    def pattern(text: str) -> re.Pattern[str]:
        parts = re.split(r"\{\{(?:name|title)\}\}", text.strip())
        return re.compile(".+?".join(re.escape(part) for part in parts), re.DOTALL)

    return {path: pattern(text) for path, text in texts.items()}


def _texts(folder: Traversable, prefix: str) -> list[tuple[str, str]]:
    found = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        path = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += _texts(entry, f"{path}/")
        elif entry.name == META or entry.name.endswith(".md"):
            found.append((path, entry.read_text(encoding="utf-8")))
    return found
