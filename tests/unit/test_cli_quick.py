"""`engram save|search|list|get` parse their command lines without argparse (engram.cli.quick) into what argparse
gives, leave help and mistakes to argparse (the same pages and errors), and start without argparse, re, json,
urllib.parse or pathlib (issue 34: an installed `engram search` within a bare start plus the node's answer)."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import cli, plainhttp, plainjson
from engram.cli import quick, urls

ROOT = Path(__file__).resolve().parents[2]
WHOLE = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
# What the everyday commands must not import (with what they import: enum, functools, collections, gettext, locale).
NOT_IMPORTED = (
    "argparse", "re", "json", "enum", "functools", "collections", "gettext", "locale", "urllib", "pathlib",
    "ipaddress", "unicodedata", "typing", "dataclasses", "datetime", "socket", "http", "email", "ssl",
)  # fmt: skip
EVERYDAY = (
    ["search", "redis port"],
    ["search", "redis port", "--limit", "3", "--tag", "a", "--tag", "b c", "--type", "fact", "--no-rerank", "--json"],
    ["save", "a fact", "--type", "fact", "--tag", "x", "--importance", "high"],
    ["save", "-", "--summary", "s"],
    ["list"],
    ["list", "--all", "--limit", "5", "--order", "updated", "--full-ids"],
    ["get", WHOLE],
    ["get", "3f4a5b", "--history"],
)
# Words a generated command line is made of: each command's options (exact, abbreviated, with =value, negated), help,
# values of every kind the options take (good and bad), words that begin with - and --.
WORDS = (
    "--limit", "--lim", "--limit=3", "--tag", "--topic", "--type", "--owner", "--project", "--team", "--conversation",
    "--before", "--after", "--status", "--include-archived", "--pack", "--as-of", "--explain", "--rerank",
    "--no-rerank", "--min-relevance", "--full-ids", "--json", "--home", "--url", "--agent", "--summary", "--importance",
    "--metadata", "--expires", "--sensitivity", "--order", "--all", "--history", "-h", "--help", "--", "--version",
    "x", "redis port", "3", "0", "101", "-5", "-0.5", "0.3", "-", "", "fact", "observation", "bogus", "2026-01-31",
    "2026-01-31T12:00:00Z", "yesterday", "active", "high", "secret", "updated", '{"a": 1}', "[1]", "-x", "- a b", WHOLE,
    "3f4a5b", "http://127.0.0.1:9",
)  # fmt: skip


def argparse_answer(argv: list[str]) -> tuple[dict[str, Any] | None, str, str]:
    """What the full parser makes of ``engram ARGV``: its Namespace's values (None when it exits) and what it says."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            values: dict[str, Any] | None = vars(cli.build_parser(argv[0]).parse_args(argv))
        except SystemExit as e:
            values = None
            print(f"exit {e.code}", file=err)
    return values, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", EVERYDAY, ids=" ".join)
def test_the_everyday_command_lines_are_parsed_here_as_argparse_parses_them(argv: list[str]) -> None:
    parsed = quick.parse(argv)
    assert parsed is not None, f"engram {' '.join(argv)} went to argparse"
    assert vars(parsed) == argparse_answer(argv)[0]


@pytest.mark.parametrize("argv", [["search", "x", "--lim", "3"], ["list", "--limit=3"], ["search", "-", "--tag", "-x"],
                                  ["save", "- a list item"]], ids=" ".join)  # fmt: skip
def test_a_word_argparse_might_read_otherwise_is_left_to_it(argv: list[str]) -> None:
    assert quick.parse(argv) is None


@pytest.mark.parametrize("command", cli.NODE_ONLY_COMMANDS)
def test_each_fast_command_is_read_here(command: str) -> None:
    """A new option of a kind this parser does not read sends the whole command to argparse (correct, but slow):
    this fails then, to say so."""
    assert quick.recorded(command) is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(cli.NODE_ONLY_COMMANDS), st.lists(st.sampled_from(WORDS), max_size=7))
def test_any_command_line_is_read_as_argparse_reads_it_or_left_to_argparse(command: str, words: list[str]) -> None:
    argv = [command, *words]
    parsed = quick.parse(argv)
    if parsed is not None:
        assert vars(parsed) == argparse_answer(argv)[0], argv


HELP_AND_MISTAKES = (
    ["search", "--help"], ["search", "-h"], ["save", "--help"], ["list", "--help"], ["get", "--help"], ["search"],
    ["get"], ["search", "x", "--limit", "0"], ["search", "x", "--limit"], ["search", "x", "--t", "a"],
    ["search", "x", "--type", "bogus"], ["search", "x", "--after", "yesterday"], ["save", "a", "b"],
    ["save", "x", "--metadata", "[1]"], ["list", "--order", "sideways"], ["search", "x", "--min-relevance", "2"],
    ["get", WHOLE, "--json=1"], ["search", "x", "--", "y"], ["list", "extra"],
)  # fmt: skip


@pytest.mark.parametrize("argv", HELP_AND_MISTAKES, ids=" ".join)
def test_help_and_mistakes_are_argparses_word_for_word(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert quick.parse(argv) is None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
            code = None
        except SystemExit as e:
            code = e.code
        print(f"exit {code}", file=err)
    values, expected_out, expected_err = argparse_answer(argv)
    assert values is None and (out.getvalue(), err.getvalue()) == (expected_out, expected_err)


PROBE = """
import sys
before = set(sys.modules)
from engram.cli import main
main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write("\\n".join(sorted(set(sys.modules) - before)))
"""


@pytest.mark.parametrize("argv", [*EVERYDAY[:2], *EVERYDAY[3:]], ids=" ".join)  # (--json prints through json)
def test_the_everyday_commands_start_without_argparse_re_json_or_pathlib(argv: list[str], tmp_path: Path) -> None:
    """In a bare interpreter (-S: no site, whose path hooks, such as an editable install's, import re and pathlib)
    with this checkout on the path, as an installed tool runs: the node found through node.json, a refused
    connection (port 9)."""
    home = tmp_path / "home"
    home.mkdir()
    node = {"pid": os.getpid(), "http_url": "http://127.0.0.1:9", "grpc_address": "127.0.0.1:9", "home": str(home)}
    (home / "node.json").write_text(json.dumps(node))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PYTHON"))}
    env |= {"PYTHONPATH": str(ROOT), "ENGRAM_HOME": str(home)}
    loaded = tmp_path / "loaded.txt"
    done = subprocess.run([sys.executable, "-S", "-c", PROBE, str(loaded), *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=60, input="a fact from stdin")  # fmt: skip
    assert "no Engram node answers at http://127.0.0.1:9" in done.stderr, done.stderr
    modules = loaded.read_text().split()
    assert "engram.cli.quick" in modules and "engram.cli.find" in modules
    assert [m for m in modules if m.split(".")[0] in NOT_IMPORTED] == []


# --- what stands for json, urllib.parse and http.client's checks ---

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_plainjson_writes_and_reads_as_json_does(value: Any) -> None:
    for ascii_only in (True, False):
        text = plainjson.dumps(value, ensure_ascii=ascii_only)
        assert text == json.dumps(value, ensure_ascii=ascii_only)
        assert repr(plainjson.loads(text)) == repr(json.loads(text))
    assert plainjson.dumps(value, indent=2) == json.dumps(value, indent=2)


@pytest.mark.parametrize("text", ["", " ", "{", "[1,]", "1 2", "\ufeff{}", "{'a': 1}", "nan", '"\\ud800"', " [] "])
def test_plainjson_refuses_what_json_refuses(text: str) -> None:
    try:
        expected: Any = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            plainjson.loads(text)
    else:
        assert repr(plainjson.loads(text)) == repr(expected)


URL_PARTS = (
    st.sampled_from(["http", "https", "HTTP", "ftp", " http"]),
    st.text(alphabet="abcXYZ019.-_~:@[]%/ ?#é", max_size=24),
)


def _split(url: str) -> tuple[Any, ...]:
    parts = urls.split(url)
    try:
        port: Any = parts.port
    except ValueError as e:
        port = str(e)
    return parts.scheme, parts.hostname, port, parts.path


@settings(max_examples=400, deadline=None)
@given(*URL_PARTS)
def test_urls_split_as_urlsplit_does(scheme: str, rest: str) -> None:
    url = f"{scheme}://{rest}"
    try:
        expected = urlsplit(url)
    except ValueError:
        with pytest.raises(ValueError):
            _split(url)
        return
    try:
        expected_port: Any = expected.port
    except ValueError as e:
        expected_port = str(e)
    assert _split(url) == (expected.scheme, expected.hostname, expected_port, expected.path)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.dictionaries(st.text(max_size=6), st.text(max_size=6) | st.integers() | st.lists(
    st.text(max_size=4), max_size=3) | st.booleans() | st.floats(allow_nan=False), max_size=4))  # fmt: skip
def test_urls_quote_as_urllib_does(text: str, params: dict[str, Any]) -> None:
    try:
        expected = (quote(text, safe=""), quote_plus(text), urlencode(params, doseq=True))
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            (urls.quote(text, ""), urls.quote_plus(text), urls.urlencode(params))
        return
    assert (urls.quote(text, ""), urls.quote_plus(text), urls.urlencode(params)) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \t\r\n\x00\x1f\x7f\x80é", max_size=10))
def test_plainhttp_refuses_the_characters_http_client_refuses(text: str) -> None:
    found = http.client._contains_disallowed_url_pchar_re.search(text)  # type: ignore[attr-defined]
    assert plainhttp._bad_url_char(text) == (found.group() if found else None)
    value = text.encode("latin-1", "replace")
    assert plainhttp._bad_header_value(value) == bool(http.client._is_illegal_header_value(value))  # type: ignore[attr-defined]


@pytest.mark.parametrize("home", [None, "", "~", "~/a//b/", "relative/./dir", "/abs/dir/"])
def test_the_data_dir_as_a_string_is_the_folder_settings_name(home: str | None, tmp_path: Path) -> None:
    """NodeSettings keeps the data dir as a string (node.json is read without pathlib): the folder of Settings.home."""
    from engram.cli.common import NodeSettings
    from engram.config import Settings

    env = {"HOME": str(tmp_path)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path))
        light, full = NodeSettings.from_env(env, home=home), Settings.from_env(env, home=home)
    assert Path(light.data_dir) == full.home == light.home
