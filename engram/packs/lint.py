"""Checks a pack before it is installed or after it was edited: what `load_engram` needs is there, every index
entry leads to a file and every file is in an index, and the examples' `uses:` name knowledge that exists.

Errors are what breaks a load (a missing role, a dangling index entry or `uses:` path, frontmatter that does not
parse, a parent that is not installed) or makes it empty (the role and description `engram packs init` wrote, left
as they were); warnings are what makes it worse (a file no index lists, an example without `uses:`, an entry without
a description, another file still the template's).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from engram.errors import InvalidArgument
from engram.formats.frontmatter import NOT_A_MAPPING, TOO_DEEP, UNCLOSED, FrontmatterError, split_frontmatter
from engram.packs.format import EXAMPLES_INDEX, KNOWLEDGE_INDEX, META, Pack, check_pack_path

Severity = Literal["error", "warning"]
KNOWLEDGE = "knowledge"
EXAMPLES = "examples"
INDEX_NAME = "_index.md"
_REFERENCE = re.compile(r"`([^`\n]+\.md)`")  # `knowledge/x.md`, as the seed's indexes list files
_BASE_FILES: tuple[tuple[str, Severity, str], ...] = (
    ("role.md", "error", "who the expert is"),
    ("workflow.md", "warning", "how the expert works through a request"),
    ("rules.md", "warning", "the rules, memory rules and an optional ## Onboarding block"),
)
_USES_LINE = re.compile(r"^\s*uses:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class LintIssue:
    severity: Severity
    path: str  # the file it is about ("meta.json", "knowledge/_index.md", ...)
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


def lint_pack(pack: Pack, *, parent: Pack | None = None, installed: Collection[str] | None = None) -> list[LintIssue]:
    """Every problem of ``pack``, errors first. ``parent`` is the pack it extends (its knowledge may be used by
    the examples); ``installed`` the names of the installed packs, to check `extends` when no parent is given."""
    issues = [
        *_meta(pack),
        *_base_files(pack),
        *_extends(pack, parent, installed),
        *_section(pack, KNOWLEDGE),
        *_section(pack, EXAMPLES),
        *_examples(pack, parent, unchecked_parent=_parent_unseen(pack, parent, installed)),
        *_knowledge_frontmatter(pack),
        *_placeholders(pack),
    ]
    return sorted(issues, key=lambda issue: (issue.severity != "error", issue.path))


def _placeholders(pack: Pack) -> list[LintIssue]:
    """Text `engram packs init` wrote and nobody replaced: an error where the expert would be nobody (role.md, the
    description), a warning elsewhere (a generic workflow or rule may be meant)."""
    from engram.packs.template import untouched

    issues = []
    description = pack.meta.get("description")
    if isinstance(description, str) and untouched("description", description):
        issues.append(LintIssue("error", META, "description is still the template's: say who this expert is."))
    for path, text in sorted(pack.files.items()):
        if untouched(path, text):
            severity: Severity = "error" if path == "role.md" else "warning"
            issues.append(LintIssue(severity, path, "is still the template's text: replace it with the expert's own."))
    return issues


def _parent_unseen(pack: Pack, parent: Pack | None, installed: Collection[str] | None) -> bool:
    """The pack extends one that may exist but was not given: what its examples use there cannot be checked."""
    return bool(pack.extends) and parent is None and (installed is None or pack.extends in installed)


def has_errors(issues: Collection[LintIssue]) -> bool:
    return any(issue.severity == "error" for issue in issues)


def _meta(pack: Pack) -> list[LintIssue]:
    issues = [
        LintIssue("error", META, f"has no {key}: add a {'name' if key == 'name' else 'one-line description'}.")
        for key in ("name", "description")
        if not isinstance(pack.meta.get(key), str) or not pack.meta[key].strip()
    ]
    if "tags" in pack.meta and not _strings(pack.meta["tags"]):
        issues.append(LintIssue("warning", META, 'tags should be a list of words, e.g. ["fitness", "nutrition"].'))
    for key, section in (("knowledge_count", KNOWLEDGE), ("examples_count", EXAMPLES)):
        actual = len(_content_files(pack, section))
        if key in pack.meta and pack.meta[key] != actual:
            issues.append(LintIssue("warning", META, f"{key} is {pack.meta[key]!r} but the pack has {actual}."))
    return issues


def _base_files(pack: Pack) -> list[LintIssue]:
    """role.md is the one file a load cannot do without (as in the seed); workflow and rules make it complete."""
    issues = []
    for path, severity, what in _BASE_FILES:
        if not pack.files.get(path, "").strip():
            state = "is empty" if path in pack.files else "is missing"
            issues.append(LintIssue(severity, path, f"{state}: write {what}."))
    return issues


def _extends(pack: Pack, parent: Pack | None, installed: Collection[str] | None) -> list[LintIssue]:
    name = pack.extends
    if not name:
        return []
    if name == pack.name:
        return [LintIssue("error", META, f"extends '{name}', itself: remove extends or name the parent pack.")]
    if parent is not None:
        if parent.extends:
            return [LintIssue("warning", META, f"'{name}' extends '{parent.extends}' too; only one level loads.")]
        return []
    if installed is None:
        return [LintIssue("warning", META, f"extends '{name}', not checked: no installed packs or folder to look in.")]
    if name not in installed:
        return [LintIssue("error", META, f"extends '{name}', which is not installed: install '{name}' first.")]
    return []


def _section(pack: Pack, section: str) -> list[LintIssue]:
    """The indexes of a section (its _index.md and nested ones) against its files, both ways."""
    files = _content_files(pack, section)
    indexes = sorted(path for path in pack.files if path.startswith(f"{section}/") and _is_index(path))
    root_index = KNOWLEDGE_INDEX if section == KNOWLEDGE else EXAMPLES_INDEX
    if root_index not in pack.files:
        if files:
            return [LintIssue("error", root_index, f"is missing: list every {section} file in it.")]
        return [LintIssue("warning", f"{section}/", f"is empty: the pack has no {section}.")]
    issues = []
    listed: set[str] = set()
    for index in indexes:
        for line_number, line in enumerate(pack.files[index].splitlines(), 1):
            for reference in _REFERENCE.findall(line):
                if not reference.startswith(f"{section}/") or _USES_LINE.match(line):
                    continue
                listed.add(reference)
                if reference not in pack.files:
                    issues.append(LintIssue("error", index, f"line {line_number} lists {reference}, which is missing."))
                elif not _is_index(reference) and not line.split(f"`{reference}`", 1)[1].strip(" -\u2013\u2014:"):
                    issues.append(LintIssue("warning", index, f"line {line_number}: add ' - a one-line description'."))
    for path in sorted(set(files) - listed):
        issues.append(LintIssue("warning", path, f"is in no index: add a line for it to {root_index}."))
    return issues


def _examples(pack: Pack, parent: Pack | None, *, unchecked_parent: bool) -> list[LintIssue]:
    """Each example's frontmatter parses and its `uses:` (and the examples index's `uses:` lines) name knowledge
    files of this pack or of its parent (a warning when the parent could not be looked at)."""
    issues: list[LintIssue] = []

    def use_issues(path: str, uses: list[str], prefix: str = "") -> list[LintIssue]:
        found = []
        for use in uses:
            if problem := _use_problem(use, pack, parent):
                if unchecked_parent and problem.endswith("not in this pack."):
                    unseen = f"{problem[:-1]}; maybe in '{pack.extends}', which was not checked."
                    found.append(LintIssue("warning", path, prefix + unseen))
                else:
                    found.append(LintIssue("error", path, prefix + problem))
        return found

    for path in _content_files(pack, EXAMPLES):
        try:
            frontmatter = parse_frontmatter(pack.files[path])
        except ValueError as e:
            issues.append(LintIssue("error", path, str(e)))
            continue
        if "uses" not in frontmatter:
            issues.append(LintIssue("warning", path, "has no uses: in its frontmatter: list the knowledge it uses."))
            continue
        uses = frontmatter["uses"]
        uses = [uses] if isinstance(uses, str) else uses
        if not _strings(uses):
            issues.append(LintIssue("error", path, "uses: must be a list of paths, e.g. [knowledge/x.md]."))
            continue
        issues += use_issues(path, uses)
    for index in (p for p in pack.files if p.startswith(f"{EXAMPLES}/") and _is_index(p)):
        for line_number, line in enumerate(pack.files[index].splitlines(), 1):
            if match := _USES_LINE.match(line):
                uses = [use for item in match.group(1).split(",") if (use := item.strip(" `"))]
                issues += use_issues(index, uses, f"line {line_number}: ")
    return issues


def _use_problem(use: str, pack: Pack, parent: Pack | None) -> str:
    try:
        path = check_pack_path(use, field_name="uses")
    except InvalidArgument as e:
        return str(e)
    if not path.startswith(f"{KNOWLEDGE}/") or _is_index(path):
        return f"uses {use}, which is not a knowledge file (knowledge/<file>.md)."
    if path in pack.files or (parent is not None and path in parent.files):
        return ""
    where = f" nor in its parent '{parent.name}'" if parent is not None else ""
    return f"uses {use}, which is not in this pack{where}."


def _knowledge_frontmatter(pack: Pack) -> list[LintIssue]:
    issues = []
    for path in _content_files(pack, KNOWLEDGE):
        try:
            parse_frontmatter(pack.files[path])
        except ValueError as e:
            issues.append(LintIssue("error", path, str(e)))
    return issues


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter of a Markdown file ({} when it has none); ValueError saying what is wrong."""
    try:
        return split_frontmatter(text)[0] or {}
    except FrontmatterError as e:
        if e.kind == UNCLOSED:
            raise ValueError("frontmatter has no closing '---' line.") from e
        if e.kind == NOT_A_MAPPING:
            raise ValueError("frontmatter must be YAML key: value pairs (e.g. uses: [knowledge/x.md]).") from e
        if e.kind == TOO_DEEP:
            raise ValueError(f"frontmatter {e.problem} (line {e.line}); flatten it.") from e
        raise ValueError(f"frontmatter is not valid YAML, {e.plain}.") from e


def _content_files(pack: Pack, section: str) -> list[str]:
    return sorted(path for path in pack.files if path.startswith(f"{section}/") and not _is_index(path))


def _is_index(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == INDEX_NAME


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
