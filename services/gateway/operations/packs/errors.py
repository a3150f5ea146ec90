"""What the pack service refuses: a pack or a file that is not there, a pack installed already."""

from __future__ import annotations

from engram.errors import EngramError


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
