"""The node the hooks deliver to: the one `engram hooks install --url URL --key KEY` named (kept in
<home>/hooks/node.json, private to the user: 0600), else ENGRAM_HOOK_URL, else the local node of the data dir.
No URL or key is ever written into an agent's settings file, which a team may commit."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.config import Settings

NODE_FILE = "node.json"


class TargetError(ValueError):
    """A node URL the hooks cannot use; the message says what to give."""


def save(hooks_dir: Path, url: str, key: str | None) -> Path:
    """Keeps the node (and its key) the hooks of this data dir deliver to; readable by the user only."""
    if not url.startswith(("http://", "https://")):
        raise TargetError(f"--url must be the node's http:// or https:// address (its gateway), got {url!r}")
    hooks_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = hooks_dir / NODE_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"url": url.rstrip("/"), "key": key}, handle)
    os.chmod(path, 0o600)  # an existing file keeps its mode through O_CREAT
    return path


def forget(hooks_dir: Path) -> bool:
    """Back to the local node; True when a node had been named."""
    path = hooks_dir / NODE_FILE
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


def saved(hooks_dir: Path) -> dict[str, Any]:
    """The node named at install ({} when none, or when the file cannot be read)."""
    try:
        data = json.loads((hooks_dir / NODE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def applied(settings: Settings) -> Settings:
    """The settings the hooks run with: the named node's URL and key over the local defaults."""
    named = saved(settings.home / "hooks")
    url, key = named.get("url"), named.get("key")
    if not isinstance(url, str) or not url:
        return settings
    return replace(settings, hook_url=url, api_key=key if isinstance(key, str) and key else settings.api_key)
