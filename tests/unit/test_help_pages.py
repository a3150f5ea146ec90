"""Every command a newcomer meets first has a help page that starts by saying what it does."""

from __future__ import annotations

import pytest

from engram.cli import build_parser


@pytest.mark.parametrize("command", ["serve", "mcp", "keys", "import", "export", "status", "sync"])
def test_the_help_page_has_a_description_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    page = capsys.readouterr().out.split("\n\n")
    assert page[0].startswith(f"usage: engram {command}")
    assert page[1].strip()[:1].isupper() and not page[1].lstrip().startswith(("positional", "options")), page[1]
