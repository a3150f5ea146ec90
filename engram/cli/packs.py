"""`engram packs list|install|init|lint|export`: expert packs from a shell. A pack is fetched and linted here, on the
machine that runs the command, and sent to the node's REST API (/v1/packs); `init` and the lint of a folder work
without a node."""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from engram.cli.common import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    Call,
    fetch,
    node_options,
    node_url,
    preview,
    send,
    sub,
)
from engram.config import Settings
from engram.packs.format import Pack, read_pack_dir, write_pack_dir

_INSTALL_EPILOG = (
    "SOURCE is an https:// git URL, a file:// URL or a local folder (a git repository installs what is committed). "
    "The clone runs no hooks and reads no git configuration of this machine; a pack holds at most 500 Markdown files "
    "of 512 KiB each and 16 MiB in all, and no link out of its folder. Lint errors stop the install unless --force. "
    "Needs ENGRAM_API_KEY with the packs (or admin) scope."
)


def register(subparsers: Any) -> None:
    """Registers `engram packs` and its actions on the ``engram`` sub-command parsers."""
    packs = sub(subparsers, "packs", "expert packs: list, install, init, lint, export")
    packs.set_defaults(func=_run)
    actions = packs.add_subparsers(dest="packs_command", required=True, metavar="ACTION")
    listing = node_options(sub(actions, "list", "the packs installed in your namespace"))
    listing.set_defaults(act=_list)

    install = node_options(sub(actions, "install", "install a pack from a git repository or a folder"))
    install.add_argument("source", help="an https:// git URL, a file:// URL or a local folder")
    install.add_argument("--name", help="install under this name (default: meta.json's name)")
    install.add_argument("--subdir", default="", metavar="PATH", help="the pack's folder inside the repository")
    install.add_argument("--replace", action="store_true", help="update an installed pack (its memories are kept)")
    install.add_argument("--force", action="store_true", help="install even with lint errors")
    install.epilog = _INSTALL_EPILOG
    install.set_defaults(act=_install)

    init = sub(actions, "init", "create a new pack folder from the template")
    init.add_argument("name", help="the pack's name, e.g. contract-lawyer")
    init.add_argument("--dir", default=".", metavar="DIR", help="where to create the folder NAME (default: here)")
    init.set_defaults(act=_init)

    lint = node_options(sub(actions, "lint", "check a pack folder, an installed pack, or every installed pack"))
    lint.add_argument("target", nargs="?", metavar="NAME-OR-PATH", help="a folder, or an installed pack's name")
    lint.epilog = "Exit 1 when a pack has errors (warnings alone exit 0). A folder is linted without a node."
    lint.set_defaults(act=_lint)

    export = node_options(sub(actions, "export", "write an installed pack (with its memory) into a folder"))
    export.add_argument("name", help="the installed pack")
    export.add_argument("directory", metavar="DIR", help="an empty or new folder")
    export.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    export.set_defaults(act=_export)


class Node:
    """The node as `engram packs` reaches it: one request at a time through the commands' common send, so the
    answers, errors and hints are those of every other command."""

    def __init__(self, args: argparse.Namespace, base_url: str, api_key: str | None, err: IO[str]) -> None:
        self.args, self.base_url, self.api_key, self.err = args, base_url, api_key, err

    def get(self, path: str, *, quiet: bool = False) -> tuple[int, dict[str, Any]]:
        return self.request(Call("GET", path, _nothing), quiet=quiet)

    def request(self, call: Call, *, quiet: bool = False) -> tuple[int, dict[str, Any]]:
        """The exit code and the answer (``{}`` unless 0); ``quiet`` keeps send's error line to itself."""
        err = io.StringIO() if quiet else self.err
        return fetch(call, self.base_url, api_key=self.api_key, agent=self.args.agent, err=err)


Action = Callable[[argparse.Namespace, Node, IO[str], IO[str]], int]


def _run(args: argparse.Namespace, settings: Settings) -> int:
    return run(args, node_url(getattr(args, "url", None), settings), api_key=settings.api_key)


def run(
    args: argparse.Namespace,
    base_url: str,
    *,
    api_key: str | None,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Runs one `engram packs` action; exit 0 done, 1 refused (by the node or the checks), 2 not sent."""
    from engram.errors import EngramError

    out, err = out or sys.stdout, err or sys.stderr
    node = Node(args, base_url, api_key, err)
    act: Action = args.act
    try:
        return act(args, node, out, err)
    except (EngramError, OSError) as e:
        print(f"engram: {e}", file=err)
        return EXIT_REFUSED


def _list(args: argparse.Namespace, node: Node, out: IO[str], err: IO[str]) -> int:
    return send(Call("GET", "/v1/packs", render_packs), node.base_url, api_key=node.api_key, agent=args.agent,
                as_json=args.json, out=out, err=err)  # fmt: skip


def _install(args: argparse.Namespace, node: Node, out: IO[str], err: IO[str]) -> int:
    from engram.packs.lint import has_errors, lint_pack
    from engram.packs.source import fetch_pack, parse_source

    shown = parse_source(args.source).shown
    print(f"Fetching {shown}{f' (folder {args.subdir})' if args.subdir else ''} ...", file=err)
    with tempfile.TemporaryDirectory(prefix="engram-pack-") as workdir:
        pack = fetch_pack(args.source, Path(workdir), subdir=args.subdir, name=args.name)
    print(f"Fetched pack '{pack.name}': {_counts(pack.files)}.", file=err)
    parent, installed = _parent(pack.extends, node)
    issues = lint_pack(pack, parent=parent, installed=installed)
    for issue in issues:
        print(f"  {issue}", file=err)
    if has_errors(issues) and not args.force:
        print(
            f"engram: not installed: the pack has lint errors (above). Fix them in its source (engram packs lint "
            f"FOLDER checks a folder), or pass --force to install '{pack.name}' as it is.",
            file=err,
        )
        return EXIT_REFUSED
    left_out = sorted(path for path in pack.files if path.startswith("memory/"))
    if left_out:
        print(f"  {len(left_out)} memory/ files left out: a pack's memory is captured, not installed.", file=err)
    body = {"name": pack.name, "meta": pack.meta, "files": pack.files, "replace": args.replace}
    call = Call("POST", "/v1/packs", _nothing, body=body, hint_403="Set ENGRAM_API_KEY to a key with the packs scope.")
    code, answer = node.request(call)
    if code != EXIT_OK:
        if code == EXIT_REFUSED and not args.replace:
            print(f"  If '{pack.name}' is installed already, --replace updates it (its memories are kept).", file=err)
        return code
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False), file=out)
        return EXIT_OK
    verb = "Updated" if answer.get("replaced") else "Installed"
    print(f"{verb} pack '{answer['name']}' ({answer['files']} files) from {shown}.", file=out)
    print(f'Agents load it with load_engram(name="{answer["name"]}"); `engram packs list` shows it.', file=out)
    return EXIT_OK


def _init(args: argparse.Namespace, node: Node, out: IO[str], err: IO[str]) -> int:
    from engram.packs.template import init_pack

    created = init_pack(args.name, Path(args.dir))
    folder = _shown(created)
    print(
        f"Created pack '{created.name}' in {folder}: meta.json, role.md, workflow.md, rules.md (with ## Onboarding), "
        "knowledge/ and examples/ with one file each.\n"
        "Next: describe the expert in role.md, workflow.md and rules.md, write knowledge files (one topic each, "
        "listed in knowledge/_index.md) and examples (uses: the knowledge they apply), then\n"
        f"  engram packs lint {folder}\n"
        f"  engram packs install {folder}",
        file=out,
    )
    return EXIT_OK


def _lint(args: argparse.Namespace, node: Node, out: IO[str], err: IO[str]) -> int:
    target = args.target
    if target and (Path(target).exists() or "/" in target or target.startswith(".")):
        from engram.packs.source import refuse_escaping_links

        folder = Path(target)
        if folder.is_dir():
            refuse_escaping_links(folder)
        pack = read_pack_dir(folder)
        sibling = folder.resolve().parent / pack.extends if pack.extends else None
        if sibling is not None and (sibling / "meta.json").is_file():
            return _report([(pack, read_pack_dir(sibling), None)], args, out)
        parent, installed = _parent(pack.extends, node)
        return _report([(pack, parent, installed)], args, out)
    code, listing = node.get("/v1/packs")
    if code != EXIT_OK:
        return code
    installed = {str(entry["name"]) for entry in listing.get("packs", [])}
    names = [target] if target else sorted(installed)
    if not names:
        print("No packs installed yet: nothing to lint. `engram packs lint FOLDER` checks a folder.", file=err)
        return EXIT_OK
    fetched: dict[str, Pack] = {}
    for name in {*names, *(entry.get("extends") or "" for entry in listing.get("packs", []))} - {""}:
        code, answer = node.get(f"/v1/packs/{quote(name, safe='')}", quiet=name not in names)
        if code != EXIT_OK and name in names:
            return code
        if code == EXIT_OK:
            fetched[name] = _pack(answer)
    checks = [(fetched[name], fetched.get(fetched[name].extends), installed) for name in names]
    return _report(checks, args, out)


Check = tuple[Pack, Pack | None, set[str] | None]  # a pack, its parent, the installed names


def _report(checks: Sequence[Check], args: argparse.Namespace, out: IO[str]) -> int:
    """Lints each (pack, parent, installed names) and prints what it found; exit 1 when any pack has errors."""
    from engram.packs.lint import has_errors, lint_pack

    failed = False
    results = []
    for pack, parent, installed in checks:
        issues = lint_pack(pack, parent=parent, installed=installed)
        failed = failed or has_errors(issues)
        results.append({"name": pack.name, "issues": [{"severity": i.severity, "path": i.path,
                                                        "message": i.message} for i in issues]})  # fmt: skip
        if not args.json:
            errors = sum(1 for issue in issues if issue.severity == "error")
            warnings = len(issues) - errors
            state = "ok" if not issues else f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}"
            print(f"{pack.name}: {state}", file=out)
            for issue in issues:
                print(f"  {issue}", file=out)
    if args.json:
        print(json.dumps({"packs": results}, indent=2, ensure_ascii=False), file=out)
    return EXIT_REFUSED if failed else EXIT_OK


def _export(args: argparse.Namespace, node: Node, out: IO[str], err: IO[str]) -> int:
    directory = Path(args.directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())) and not args.force:
        print(
            f"engram: {directory} is not an empty folder: choose a new or empty one, or pass --force to write into "
            "it (files of the same name are overwritten, others stay).",
            file=err,
        )
        return EXIT_USAGE
    code, answer = node.get(f"/v1/packs/{quote(args.name, safe='')}")
    if code != EXIT_OK:
        return code
    pack = _pack(answer)
    write_pack_dir(pack, directory)
    if args.json:
        print(json.dumps({"name": pack.name, "directory": str(directory), "files": len(pack.files) + 1}), file=out)
    else:
        print(f"Exported pack '{pack.name}' to {directory}: meta.json and {_counts(pack.files)}.", file=out)
    return EXIT_OK


def _parent(name: str, node: Node) -> tuple[Pack | None, set[str] | None]:
    """The installed pack ``name`` (None if it is not, or no node answers) and the installed names (None when no
    node answers): what lint needs to check `extends`. Quiet: a folder is linted without a node too."""
    if not name:
        return None, None
    code, listing = node.get("/v1/packs", quiet=True)
    if code != EXIT_OK:
        return None, None
    installed = {str(entry["name"]) for entry in listing.get("packs", [])}
    if name not in installed:
        return None, installed
    code, answer = node.get(f"/v1/packs/{quote(name, safe='')}", quiet=True)
    return (_pack(answer) if code == EXIT_OK else None), installed


def _pack(answer: dict[str, Any]) -> Pack:
    return Pack(name=str(answer["name"]), meta=dict(answer.get("meta") or {}), files=dict(answer.get("files") or {}))


def render_packs(answer: dict[str, Any]) -> str:
    packs = answer.get("packs") or []
    if not packs:
        return "No packs installed yet. Install one: engram packs install <https git URL or folder>."
    header = ("NAME", "VERSION", "KNOWLEDGE", "EXAMPLES", "FILES", "EXTENDS", "DESCRIPTION")
    rows = [
        (
            str(p["name"]), str(p.get("version") or "-"), str(p.get("knowledge_count", 0)),
            str(p.get("examples_count", 0)), str(p.get("files", 0)), str(p.get("extends") or "-"),
            preview(str(p.get("description", "")))[:60],
        )
        for p in packs
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
             for row in (header, *rows)]  # fmt: skip
    return "\n".join(line.rstrip() for line in lines)


def _counts(files: dict[str, str]) -> str:
    knowledge = sum(1 for p in files if p.startswith("knowledge/") and not p.endswith("_index.md"))
    examples = sum(1 for p in files if p.startswith("examples/") and not p.endswith("_index.md"))
    memory = sum(1 for p in files if p.startswith("memory/"))
    parts = [_plural(len(files), "file"), _plural(knowledge, "knowledge file"), _plural(examples, "example")]
    return ", ".join(parts + ([_plural(memory, "memory file")] if memory else []))


def _shown(folder: Path) -> str:
    """A folder as a command line names it: a relative one starts with ./ (else `lint` would take it for a name)."""
    text = str(folder)
    return text if folder.is_absolute() or text.startswith(".") else f"./{text}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _nothing(answer: dict[str, Any]) -> str:
    return ""
