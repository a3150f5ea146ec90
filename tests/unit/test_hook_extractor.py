"""The hooks' rule-based extractor (engram/hooks/extract.py): what each kind of event becomes, in the agents' payload
shapes, and what it leaves out."""

from __future__ import annotations

from typing import Any

import pytest

from engram.hooks.extract import (
    DECISION,
    ERROR_FIX,
    FILE_CHANGE,
    PREFERENCE,
    TEST_RESULT,
    command_key,
    error_excerpt,
    extract,
    failing_tests,
    stated,
)
from engram.hooks.payloads import CLAUDE_CODE, CODEX, GEMINI_CLI, parse
from engram.hooks.session import SessionState

CWD = "/home/ann/shop"


def _prompt(text: str) -> dict[str, Any]:
    return {"hook_event_name": "UserPromptSubmit", "prompt": text, "cwd": CWD}


def _bash(command: str, stdout: str = "", stderr: str = "") -> dict[str, Any]:
    response = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": response, "cwd": CWD}  # fmt: skip


def _bash_failed(command: str, output: str) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": command},
            "error": f"Exit code 1\n{output}", "cwd": CWD}  # fmt: skip


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "tool_name": "Edit", "cwd": CWD,
            "tool_input": {"file_path": f"{CWD}/{path}", "old_string": old, "new_string": new}}  # fmt: skip


def _run(*payloads: dict[str, Any], agent: str = CLAUDE_CODE) -> tuple[list[Any], SessionState]:
    state = SessionState(session_id="s1")
    found = []
    for payload in payloads:
        found += extract(parse(agent, str(payload.get("hook_event_name", "")), payload), state)
    return found, state


def test_a_failure_then_its_fix_gives_one_observation_naming_the_error_the_test_and_the_change() -> None:
    found, state = _run(
        _prompt("The cart total is wrong for three items."),
        _bash_failed(
            "npx vitest run src/cart/totals.test.ts",
            " FAIL  src/cart/totals.test.ts > sums\nAssertionError: expected 19.990000000000002 to be 19.99\n"
            " Tests  1 failed | 6 passed (7)",
        ),
        _edit("src/cart/totals.ts", "s + i.price * i.qty", "s + i.priceCents * i.qty"),
        _bash("npx vitest run src/cart/totals.test.ts", " Tests  7 passed (7)"),
    )
    fixes = [o for o in found if o.kind == ERROR_FIX]
    assert len(fixes) == 1 and not state.failures
    text = fixes[0].content
    assert "AssertionError: expected 19.990000000000002 to be 19.99" in text
    assert "src/cart/totals.test.ts" in text and "`s + i.price * i.qty` -> `s + i.priceCents * i.qty`" in text
    assert "while working on: The cart total is wrong for three items." in text
    assert fixes[0].files == ["src/cart/totals.ts"] and fixes[0].importance == "high"


def test_a_failing_test_run_waits_for_its_fix_instead_of_being_kept_alone() -> None:
    found, state = _run(_bash("pytest tests/test_login.py -q", "F..\n1 failed, 2 passed in 0.4s"))
    assert found == [] and state.failures[0].key == "pytest"
    assert not [o for o in found if o.kind == TEST_RESULT]


def test_a_command_run_between_the_failure_and_the_pass_is_named_as_part_of_the_fix() -> None:
    found, _ = _run(
        _bash_failed("cd envs/staging && terraform plan", "│ Error: Error acquiring the state lock\n│ ID: 8d1f"),
        _bash("cd envs/staging && terraform force-unlock -force 8d1f", "unlocked"),
        _bash("cd envs/staging && terraform plan", "Plan: 0 to add, 2 to change, 0 to destroy."),
    )
    (fix,) = [o for o in found if o.kind == ERROR_FIX]
    assert "Error: Error acquiring the state lock" in fix.content
    assert "running `cd envs/staging && terraform force-unlock -force 8d1f`" in fix.content


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Traceback (most recent call last):\n  File \"a.py\", line 3\nbotocore.exceptions.ReadTimeoutError: Read "
         "timeout\nFAILED", "botocore.exceptions.ReadTimeoutError: Read timeout"),
        ("django.db.migrations.exceptions.InconsistentMigrationHistory: Migration 0013 is applied before 0012",
         "django.db.migrations.exceptions.InconsistentMigrationHistory: Migration 0013 is applied before 0012"),
        ("fatal: [edge-17]: UNREACHABLE! => {\"msg\": \"Failed to connect: Host key verification failed.\"}\n"
         "edge-17 : ok=0 changed=0 unreachable=1 failed=0", "Host key verification failed"),
        ("ERROR: R8: Missing class org.slf4j.impl.StaticLoggerBinder\nBUILD FAILED in 1m 12s",
         "ERROR: R8: Missing class org.slf4j.impl.StaticLoggerBinder"),
    ],
)  # fmt: skip
def test_the_error_line_is_the_one_that_names_what_went_wrong(output: str, expected: str) -> None:
    assert expected in error_excerpt(output)


def test_failing_test_names_are_read_from_common_runners() -> None:
    assert failing_tests("test config::tests::on_windows ... FAILED\ntest result: FAILED.") == [
        "config::tests::on_windows"
    ]
    assert failing_tests("--- FAIL: TestBucket (0.02s)\nFAIL") == ["TestBucket"]
    assert failing_tests("FAILED tests/test_auth.py::test_expired - assert 500 == 401") == [
        "tests/test_auth.py::test_expired"
    ]


def test_an_edit_keeps_the_file_the_reason_and_only_the_lines_it_changed() -> None:
    found, state = _run(
        _prompt("Raise the upload limit. Thanks."),
        _edit(
            "deploy/site.conf",
            "location /up {\n  proxy_pass http://api;",
            "location /up {\n  client_max_body_size 200m;\n  proxy_pass http://api;",
        ),
    )
    (change,) = found
    assert change.kind == FILE_CHANGE and change.files == ["deploy/site.conf"]
    assert "while working on: Raise the upload limit." in change.content
    assert "added: `client_max_body_size 200m;`" in change.content and "proxy_pass" not in change.content
    assert state.files == ["deploy/site.conf"]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("We decided to keep money as integer cents everywhere.", DECISION),
        ("Use the dirs crate instead of building paths from HOME by hand.", DECISION),
        ("Let's use salting on user_id rather than raising executor memory.", DECISION),
        ("Fix it properly, never disable host key checking globally.", PREFERENCE),
        ("Never return more than 100 items per page.", PREFERENCE),
        ("Let's always lock account rows in ascending id order.", PREFERENCE),
        ("I prefer guard-let early returns over nested if-lets.", PREFERENCE),
    ],
)
def test_decisions_and_preferences_are_kept_in_the_users_words(sentence: str, kind: str) -> None:
    (observation,) = stated(sentence)
    assert observation.kind == kind and sentence in observation.content


@pytest.mark.parametrize(
    "sentence",
    ["Thanks. I always forget how cobra handles persistent flags.", "Can you always add a Link header?",
     "The build never finishes on Mondays"],
)  # fmt: skip
def test_remarks_and_questions_are_not_taken_for_preferences(sentence: str) -> None:
    assert stated(sentence) == []


def test_commands_that_only_look_around_give_nothing() -> None:
    found, _ = _run(_bash("git status", "On branch main"), _bash("ls -la && cat README.md", "..."))
    assert found == []


def test_the_command_key_ignores_a_leading_cd_and_environment() -> None:
    assert command_key("cd envs/staging && terraform plan") == "terraform plan"
    assert command_key("FOO=1 python -m pytest -q tests") == "pytest"


def test_gemini_shell_output_and_exit_code_come_from_llm_content() -> None:
    def shell(command: str, output: str, code: int) -> dict[str, Any]:
        llm = f"Command: {command}\nOutput: {output}\nError: (none)\nExit Code: {code}"
        response = {"llmContent": llm, "returnDisplay": output}
        return {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "cwd": CWD,
                "tool_input": {"command": command}, "tool_response": response}  # fmt: skip

    found, _ = _run(
        shell("./backup.sh", "pg_dump: error: aborting because of server version mismatch", 1),
        shell("./backup.sh", "backup written", 0),
        agent=GEMINI_CLI,
    )
    (fix,) = found
    assert fix.kind == ERROR_FIX and "server version mismatch" in fix.content


def test_codex_turns_give_the_decisions_of_their_input_messages() -> None:
    payload = {"type": "agent-turn-complete", "thread-id": "t1", "input-messages": ["We decided to use opaque "
               "cursors, not page numbers."], "last-assistant-message": "Done."}  # fmt: skip
    found, state = _run(payload, agent=CODEX)
    assert [o.kind for o in found] == [DECISION] and state.last_message == "Done."
