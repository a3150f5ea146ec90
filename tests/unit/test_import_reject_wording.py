"""Import rejects read in plain words: what is wrong with the line (or the note's frontmatter) and how to write it,
never the JSON or YAML parser's internals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engram.formats.frontmatter import FrontmatterError, split_frontmatter
from engram.services.gateway.schemas.requests import ImportLineIn
from engram.services.gateway.schemas.validation import describe_validation

PARSER_WORDS = ("Invalid JSON", "expected ident", "expected value", "EOF", "key must be", "trailing characters")


def reason(raw: bytes) -> str:
    with pytest.raises(ValidationError) as caught:
        ImportLineIn.model_validate_json(raw)
    return describe_validation(caught.value.errors()[:3], where="line")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"content": tru}', "The line is not JSON at column 16: a word outside double quotes (text goes in double "
                              "quotes; true, false and null are lowercase)."),
        (b"{'content': 'x'}", 'The line is not JSON at column 2: a field name without double quotes (write "content"'),
        (b'{"content": "x",}', "The line is not JSON at column 17: a comma before a closing } or ] (remove it)."),
        (b'{"content": "x"', "The line is not JSON at column 15: the end before the JSON closes"),
        (b'{"content": "x"} {"content": "y"}', "more text after the JSON object ends (one object per line)"),
        (b"Use pnpm, not npm", "something that is not a JSON value (a memory is one JSON object, such as"),
        (b'{"content": "a\tb"}', "a tab or line break inside a string (write it as \\t or \\n)"),
        (b'\xef\xbb\xbf{"content": "x"}', "it starts with a byte-order mark; save the file as UTF-8 without one."),
        (b'["a list"]', "The line is JSON but not an object: write {...} with at least a content field."),
    ],
)  # fmt: skip
def test_a_line_that_is_not_a_json_object_is_explained_in_plain_words(raw: bytes, expected: str) -> None:
    text = reason(raw)
    assert expected in text
    assert not any(word in text for word in PARSER_WORDS), text


def test_a_field_error_still_names_the_field() -> None:
    assert reason(b'{"content": "x", "memory_type": "fakt"}').startswith("memory_type: ")


def test_a_request_body_that_is_not_json_gives_line_and_column_when_it_spans_lines() -> None:
    with pytest.raises(ValidationError) as caught:
        ImportLineIn.model_validate_json(b'{\n"content": tru\n}')
    text = describe_validation(caught.value.errors(), where="request")
    assert text.startswith("The request is not JSON at line ") and ": a word outside double quotes" in text


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("title: Deploy: the steps", 'line 2: a ": " inside a value, or a line indented under a key that has a value'),
        ("tags: [a, b", "line 2: a [list that is never closed with ]"),
        ("\ttitle: x", "line 2: a tab (YAML indents with spaces only)"),
        ('title: "never closed', "line 2: a quoted value that is never closed"),
        ('path: "C:\\x"', "line 2: a backslash in a \"double-quoted\" value (use 'single quotes' instead)"),
        ("title: x\njust words\nnext: y", "line 4: a line that is not `key: value`"),
    ],
)
def test_frontmatter_problems_read_in_plain_words_with_their_line(frontmatter: str, expected: str) -> None:
    with pytest.raises(FrontmatterError) as caught:
        split_frontmatter(f"---\n{frontmatter}\n---\nBody.\n")
    assert caught.value.plain.startswith(expected)
    assert "<unicode string>" not in caught.value.plain and "^" not in caught.value.plain
