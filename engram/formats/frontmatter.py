"""YAML frontmatter of Markdown files (`---` lines around `key: value` pairs), for Obsidian vaults and expert packs:
one parser, safe_load without aliases; each caller words the errors for its users."""

from __future__ import annotations

from typing import Any

import yaml

UNCLOSED = "unclosed"  # opens with --- but never closes
INVALID_YAML = "invalid_yaml"
NOT_A_MAPPING = "not_a_mapping"  # YAML, but not key: value pairs
ALIAS = "alias"  # repeats a value with *name: refused, see _NoAliasLoader
TOO_DEEP = "too_deep"  # lists and mappings nested deeper than MAX_DEPTH: refused, see _NoAliasLoader
# A memory's metadata nests at most 20 levels (engram.model.MAX_METADATA_DEPTH) and a frontmatter key is one level
# above it; nothing a note needs comes near this, while a few thousand levels exhaust Python's stack.
MAX_DEPTH = 32


# What YAML's complaints mean, for someone writing `key: value` lines by hand (PyYAML's problems start so).
YAML_PROBLEMS = (
    (
        "mapping values are not allowed",
        'a ": " inside a value, or a line indented under a key that has a value '
        '(quote such a value: title: "Deploy: the steps")',
    ),
    ("found character '\\t'", "a tab (YAML indents with spaces only)"),
    ("found character '@'", "a value starting with @ (put it in quotes)"),
    ("found character '`'", "a value starting with ` (put it in quotes)"),
    ("found unexpected end of stream", "a quoted value that is never closed"),
    ("found unknown escape character", "a backslash in a \"double-quoted\" value (use 'single quotes' instead)"),
    ("expected escape sequence", "a backslash in a \"double-quoted\" value (use 'single quotes' instead)"),
    ("expected ',' or ']'", "a [list that is never closed with ]"),
    ("expected ',' or '}'", "a {map that is never closed with }"),
    ("could not find expected ':'", "a line that is not `key: value` (or a quoted value that spans lines)"),
    ("did not find expected key", "a line indented unlike the keys around it"),
    ("expected <block end>", "a line indented unlike the keys around it"),
    ("expected '<document start>'", "a line indented unlike the keys around it"),
    ("did not find expected '-' indicator", "a list item indented unlike the items around it"),
)


class FrontmatterError(ValueError):
    """What is wrong with a frontmatter: ``kind`` (one of the constants above), YAML's own ``problem`` and the
    file's 1-based ``line`` of it when YAML gives one."""

    def __init__(self, kind: str, problem: str = "", line: int | None = None) -> None:
        super().__init__(f"{kind}: {problem}" if problem else kind)
        self.kind = kind
        self.problem = problem
        self.line = line

    @property
    def plain(self) -> str:
        """The problem in plain words and where it is, e.g. "line 3: a tab (YAML indents with spaces only)"."""
        meaning = next((text for start, text in YAML_PROBLEMS if self.problem.startswith(start)), self.problem)
        return f"line {self.line}: {meaning}" if self.line is not None else meaning


class _NoAliasLoader(yaml.SafeLoader):
    """safe_load's loader, refusing aliases and deep nesting. ``*name`` repeats an anchored value, and a few nested
    repeats (the "billion laughs") expand a few hundred bytes into gigabytes once the value is walked or copied.
    Frontmatter has no use for them, so the first alias is refused before anything is built from it. PyYAML
    composes and constructs nested values recursively, so the nesting is bounded before Python's stack is."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            problem = (
                f"the alias *{event.anchor} is not allowed (aliases can expand without bound); write the value out"
            )
            raise FrontmatterError(ALIAS, problem, event.start_mark.line + 2)
        if self._depth >= MAX_DEPTH:
            line = self.peek_event().start_mark.line + 2
            raise FrontmatterError(TOO_DEEP, f"lists and mappings nest more than {MAX_DEPTH} levels deep", line)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """(frontmatter, body) of a Markdown text; None when it has none. Raises FrontmatterError."""
    text = text.removeprefix("\ufeff")
    if text.split("\n", 1)[0].rstrip() != "---":
        return None, text
    lines = text.split("\n")
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        raise FrontmatterError(UNCLOSED)
    try:
        data = yaml.load("\n".join(lines[1:end]), Loader=_NoAliasLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or " ".join(str(e).split())
        raise FrontmatterError(INVALID_YAML, str(problem), mark.line + 2 if mark is not None else None) from e
    if data is not None and not isinstance(data, dict):
        raise FrontmatterError(NOT_A_MAPPING)
    return (data or {}), "\n".join(lines[end + 1 :])
