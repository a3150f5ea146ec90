"""Write what a refactoring must leave byte-identical (issue 37): the MCP server's tools/list, prompts and resources,
what a client of each tool profile lists and is told (profiles.json), the REST API's OpenAPI document and every
`engram` help screen, one JSON file each.

    python tools/surfaces.py BEFORE_DIR    # before the change
    python tools/surfaces.py AFTER_DIR     # after it
    diff -r BEFORE_DIR AFTER_DIR

Help screens are formatted 100 columns wide (COLUMNS); the server is built on stand-ins (nothing is called).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any
from unittest.mock import MagicMock

from mcp import Client

from engram import cli
from engram.config import Settings
from engram.services.gateway.app import build_app
from engram.services.gateway.mcp.profiles import PROFILES
from engram.services.gateway.mcp.server import build_mcp


async def mcp_lists() -> dict[str, list[dict[str, Any]]]:
    server = build_mcp(MagicMock(), MagicMock(), MagicMock(), Settings())
    listed = {
        "tools": await server.list_tools(),
        "prompts": await server.list_prompts(),
        "resources": await server.list_resources(),
        "templates": await server.list_resource_templates(),
    }
    return {name: [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]
            for name, items in listed.items()}  # fmt: skip


async def profile_lists() -> dict[str, dict[str, Any]]:
    """What a client of each tool profile (the server's ENGRAM_MCP_TOOLS, the default included) gets over the
    initialize handshake, through the profile middleware: the server's instructions and tools/list."""
    profiles: dict[str, dict[str, Any]] = {}
    for profile in ["default", *PROFILES]:
        settings = Settings() if profile == "default" else Settings(mcp_tools=profile)
        server = build_mcp(MagicMock(), MagicMock(), MagicMock(), settings)
        async with Client(server, mode="legacy") as client:
            listed = await client.list_tools()
            profiles[profile] = {
                "instructions": client.instructions,
                "tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools],
            }
    return profiles


def help_screens(parser: argparse.ArgumentParser, path: list[str], screens: dict[str, str]) -> dict[str, str]:
    screens[" ".join(path)] = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                help_screens(sub, [*path, name], screens)
    return screens


def main() -> None:
    os.environ["COLUMNS"] = "100"  # read by the help formatter at each screen
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    (out / "mcp.json").write_text(json.dumps(asyncio.run(mcp_lists()), indent=1, ensure_ascii=False))
    (out / "profiles.json").write_text(json.dumps(asyncio.run(profile_lists()), indent=1, ensure_ascii=False))
    app = build_app(Settings(), MagicMock(), MagicMock())
    (out / "openapi.json").write_text(json.dumps(app.openapi(), indent=1, ensure_ascii=False))
    screens = help_screens(cli.build_parser(), ["engram"], {})
    (out / "cli.json").write_text(json.dumps(screens, indent=1, ensure_ascii=False))
    print(f"{out}: {len(screens)} help screens, the MCP lists (and each profile's), the OpenAPI document")


if __name__ == "__main__":
    main()
