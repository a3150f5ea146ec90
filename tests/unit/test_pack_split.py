"""A pack file is scrubbed whole before it is cut into parts (issue 22): a secret across a cut is still found."""

from __future__ import annotations

from engram.services.gateway.operations.packs.storage import MAX_PART_CHARS, split_file

TOKEN = "ghp_" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6N"


def test_a_secret_across_a_cut_is_scrubbed_before_the_file_is_cut() -> None:
    # One long paragraph (no heading, no blank line) is cut every MAX_PART_CHARS characters: put the token across.
    text = "x" * (MAX_PART_CHARS - 10) + f" {TOKEN} " + "y" * 200

    parts = split_file(text)

    assert len(parts) >= 2
    assert all(TOKEN[4:8] not in part and TOKEN[-4:] not in part for part in parts)
    assert "[REDACTED:" in "".join(parts)
