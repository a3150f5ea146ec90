"""The rule-based extractor: a hook event, with the session so far, becomes the observations worth keeping (no
LLM). Files changed and why, commands with their outcome, an error followed by its fix, test results, and the
decisions and preferences a user states in a prompt. Each observation has a quality score in [0, 1]; the caller
drops those under its threshold."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from engram.hooks.payloads import PROMPT, TOOL, TURN, HookEvent
from engram.hooks.privacy import mentions_private
from engram.hooks.session import Failure, SessionState

FILE_CHANGE = "file-change"
COMMAND = "command"
TEST_RESULT = "test-result"
ERROR_FIX = "error-fix"
DECISION = "decision"
PREFERENCE = "preference"

EDIT_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit", "write"}
SHELL_TOOLS = {"Bash", "run_shell_command", "shell", "exec_command"}
SNIPPET_CHARS = 160
REASON_CHARS = 200
ERROR_CHARS = 300
MAX_CHANGES = 3  # edits and commands remembered per failure, to say what fixed it

# Commands that only look around: nothing worth keeping happened.
_LOOKING = {
    "ls", "cd", "pwd", "cat", "echo", "head", "tail", "less", "more", "which", "grep", "rg", "find", "wc", "tree",
    "stat", "file", "du", "df", "env", "printenv", "whoami", "date", "true", "sleep", "type", "realpath", "sed",
    "awk", "sort", "uniq", "diff", "jq", "history", "clear", "ps", "top",
}  # fmt: skip
_LOOKING_GIT = {"status", "diff", "log", "show", "branch", "remote", "fetch", "blame", "ls-files", "rev-parse"}
_TEST_WORDS = ("pytest", "jest", "vitest", "mocha", "rspec", "unittest", "phpunit", "ctest", "tox", "nox")
_TEST_PHRASES = ("npm test", "npm run test", "yarn test", "pnpm test", "go test", "cargo test", "make test",
                 "mvn test", "gradle test", "./gradlew test", "dotnet test", "bun test", "mix test")  # fmt: skip
_ERROR_LINE = re.compile(
    r"^.*(\b(error|exception|traceback|failed|failure|fatal|panic|cannot|could not|not found|denied|refused|"
    r"unreachable|mismatch)\b|[a-z](Error|Exception)\b).*$",
    re.IGNORECASE | re.MULTILINE,
)
# A line that names what went wrong: an exception type (dotted or not), a panic, a compiler's or tool's "error:".
_NAMED_ERROR = re.compile(
    r"\b[A-Z]\w*(Error|Exception)\b|^\s*(?:[a-z_]\w*\.)+[A-Z]\w+: |\bpanic(?:ked)?\b|\b(?i:error)(?:\[\w+\])?: |"
    r"\[emerg\]|\bfatal:|\bFailed to\b|\bcould not\b|\bunknown directive\b|\bmismatch\b",
    re.MULTILINE,
)
# Lines that only count (a recap's failed=0, "0 failed") or say nothing went wrong.
_COUNTER_LINE = re.compile(r"\b(failed|errors?)=0\b|\b0 (failed|errors?|failures)\b|\(none\)|^\s*(FAIL|FAILED)\s*$",
                           re.IGNORECASE)  # fmt: skip
# The name of a failing test in common runners' output (pytest, cargo, go, jest/vitest, rspec, phpunit, xcodebuild).
_FAILING_TEST = re.compile(
    r"^FAILED (\S+)|^test (\S+) \.\.\. FAILED|^--- FAIL: (\S+)|^\s*FAIL\s+(\S+\.(?:ts|js|tsx|jsx))\b|"
    r"^\s*\d+\) (\S+::\S+|\S+ (?:GET|POST|PUT|DELETE) \S+)|Test Case '-\[(\S+ \S+)\]' failed|"
    r"^\s*\d+\) ([\w\\]+::\w+)",
    re.MULTILINE,
)
_CD_PREFIX = re.compile(r"^(?:cd \S+ (?:&&|;) )+")  # `cd dir && make`: the command is make
_ENVIRONMENT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")
_EXIT_CODE = re.compile(r"\bexit(?:ed)?(?: with)?(?: code| status)?[: ]+([1-9][0-9]*)\b", re.IGNORECASE)
_COUNTS = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|tests?|passing|failing|pending|examples|failures)\b"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# "I always forget ..." describes the user, it asks nothing.
_HABIT = r"(?!forget|remember|wonder|mix|get|got|struggle|lose|mess)"
_PREFERENCE = re.compile(
    r"\b(i|we) (really )?(prefer|like to|want you to)\b|\b(i|we) (really )?(always|never) " + _HABIT + r"\w+|"
    r"\b(always|never|don't|do not|please don't) "
    r"(use|add|write|commit|push|run|call|put|name|mock|touch|edit|change)\b|\bfrom now on\b|\bin this (repo|project)"
    r",? (we|you) (use|write|prefer)\b|"
    # an instruction: always/never/don't at the start of a sentence or a clause, or after let's, please, should, must
    r"(?:^|[,;:]\s*|\b(?:but|and|so|please|let'?s|should|must|to)\s+)(?:please\s+)?(always|never|don't|do not)\s+"
    + _HABIT
    + r"[a-z]\w+",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(we|i)(?:'ve| have)? decided\b|\blet'?s (go with|use|switch to|keep|stick with|drop|move to|adopt)\b|"
    r"\bwe(?:'ll| will) (use|go with|switch to|keep|drop)\b|\bthe decision is\b|\bwe chose\b|\bgoing forward\b|"
    r"\buse (?:the |a |an )?[\w.-]+(?: [\w.-]+)? (?:instead of|rather than)\b|\brather than\b",
    re.IGNORECASE,
)


@dataclass(slots=True)
class Observation:
    """Something that happened in a session, worth keeping if its quality passes the threshold."""

    kind: str
    content: str
    quality: float
    key: str  # near-duplicates share a key (e.g. the file changed) or most of their words
    files: list[str] = field(default_factory=list)
    tool: str = ""
    command: str = ""
    importance: str = "normal"


def extract(event: HookEvent, state: SessionState) -> list[Observation]:
    """The observations of one event; updates the session state (prompts, files, failures)."""
    if event.kind == PROMPT and event.prompt.strip():
        state.prompts.append(event.prompt.strip())
        return stated(event.prompt)
    if event.kind == TURN:
        if event.last_message:
            state.last_message = event.last_message[-2000:]
        return stated(event.prompt) if event.prompt and event.agent == "codex" else []
    if event.kind != TOOL:
        return []
    if event.tool in EDIT_TOOLS or _edit_input(event):
        return file_change(event, state)
    if event.tool in SHELL_TOOLS or "command" in event.tool_input:
        return command_outcome(event, state)
    return []


# --- prompts ---------------------------------------------------------------------------------------------


def stated(prompt: str) -> list[Observation]:
    """The decisions and preferences a user states in a prompt, one per sentence, in the user's own words."""
    found: list[Observation] = []
    for sentence in _SENTENCE.split(prompt):
        sentence = " ".join(sentence.split())
        if not 12 <= len(sentence) <= 400 or sentence.endswith("?"):
            continue
        if _DECISION.search(sentence):
            found.append(Observation(DECISION, f"Decision stated by the user: {sentence}", 0.85, _words_key(sentence),
                                     importance="high"))  # fmt: skip
        elif _PREFERENCE.search(sentence):
            found.append(Observation(PREFERENCE, f"Preference stated by the user: {sentence}", 0.8,
                                     _words_key(sentence), importance="high"))  # fmt: skip
    return found


# --- edits -----------------------------------------------------------------------------------------------


def _edit_input(event: HookEvent) -> bool:
    data = event.tool_input
    return ("file_path" in data or "notebook_path" in data) and any(
        k in data for k in ("new_string", "content", "edits", "new_source")
    )


def edited_path(event: HookEvent) -> str:
    data = event.tool_input
    path = next((str(data[k]) for k in ("file_path", "notebook_path", "path", "absolute_path") if data.get(k)), "")
    return relative(path, event.cwd)


def relative(path: str, cwd: str) -> str:
    if path and cwd and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, cwd)
        except ValueError:
            return path
        return path if rel.startswith("..") else rel
    return path


def file_change(event: HookEvent, state: SessionState) -> list[Observation]:
    """An edited or written file: which, why (the prompt being worked on) and what changed, in short."""
    path = edited_path(event)
    if not path or event.failed:
        return []
    if path not in state.files:
        state.files.append(path)
    data = event.tool_input
    old, new = _change(data)
    for failure in state.failures:
        if path not in failure.edits_since:
            failure.edits_since.append(path)
            if new and len(failure.changes) < MAX_CHANGES:
                failure.changes.append(f"{path}: `{old}` -> `{new}`" if old else f"{path}: `{new}`")
    verb = "Wrote" if event.tool in {"Write", "write_file", "write"} else "Edited"
    parts = [f"{verb} {path}"]
    reason = first_sentence(state.last_prompt, REASON_CHARS)
    if reason:
        parts.append(f"while working on: {reason}")
    if new:
        added = "old_string" in data or "edits" in data or "old_source" in data
        parts.append(
            f"change: `{old}` -> `{new}`" if old else (f"added: `{new}`" if added else f"content starts: `{new}`")
        )
    quality = 0.55 + (0.15 if reason else 0.0) + (0.05 if old and new else 0.0)
    return [Observation(FILE_CHANGE, "; ".join(parts) + ".", quality, f"file:{path}", files=[path], tool=event.tool)]


def _change(data: dict[str, object]) -> tuple[str, str]:
    """The lines an edit removed and added (those both sides share left out), or a written file's first lines."""
    edits = data.get("edits")
    if isinstance(edits, list) and edits and isinstance(edits[0], dict):
        data = edits[0]
    old = str(data.get("old_string") or data.get("old_source") or "")
    new = str(data.get("new_string") or data.get("new_source") or data.get("content") or "")
    if old and new:
        before = [line.strip() for line in old.splitlines() if line.strip()]
        after = [line.strip() for line in new.splitlines() if line.strip()]
        removed = [line for line in before if line not in after]
        added = [line for line in after if line not in before]
        if added:
            return snippet("\n".join(removed)), snippet("\n".join(added))
    return snippet(old), snippet(new)


# --- commands --------------------------------------------------------------------------------------------


def command_outcome(event: HookEvent, state: SessionState) -> list[Observation]:
    """A shell command and its outcome: a test run's counts, an error waiting for its fix, the fix once the same
    command passes, a commit's message; commands that only look around give nothing."""
    command = without_environment(" ".join(str(event.tool_input.get("command") or "").split()))
    if not command:
        return []
    failed, output = outcome(event)
    key = command_key(command)
    test = is_test(command)
    if failed:
        error = error_excerpt(output) or "failed"
        earlier = next((f for f in state.failures if f.key == key), None)
        state.failures = [f for f in state.failures if f.key != key]
        failure = Failure(key=key, command=command, error=error, at=event.at, tests=failing_tests(output))
        if earlier is not None:  # failing again after a change: what was tried is part of the story
            failure.edits_since, failure.changes = earlier.edits_since, earlier.changes
            failure.ran_since, failure.error = earlier.ran_since, earlier.error
            failure.tests = earlier.tests or failure.tests
        state.failures.append(failure)
        # A failure alone, a failing test run too, waits for its fix; one still failing at the end is the summary's
        # open work. Kept now, it would mostly repeat what the fix says.
        return []
    fixed = next((f for f in state.failures if f.key == key), None)
    if fixed is not None:
        state.failures.remove(fixed)
        return [fix(fixed, command, output, state, event.tool)]
    if not looking(command) and not mentions_private(command):
        for failure in state.failures:  # a command run before the fix passed may be the fix (force-unlock, --fake)
            if len(failure.ran_since) < MAX_CHANGES:
                failure.ran_since.append(snippet(command))
    if test:
        return [Observation(TEST_RESULT, f"Tests passed: `{snippet(command)}` -> {counts(output) or 'ok'}.", 0.5,
                            f"test:{key}:passed", tool=event.tool, command=command)]  # fmt: skip
    if looking(command):
        return []
    commit = re.search(r"git commit\b.*?-m\s+(\"[^\"]+\"|'[^']+'|\S+)", command)
    if commit:
        message = commit.group(1).strip("\"'")
        return [Observation(COMMAND, f"Committed: {message}", 0.6, _words_key(message), tool=event.tool,
                            command=command)]  # fmt: skip
    return [Observation(COMMAND, f"Ran `{snippet(command)}` (succeeded).", 0.4, f"cmd:{key}", tool=event.tool,
                        command=command)]  # fmt: skip


def fix(failure: Failure, command: str, output: str, state: SessionState, tool: str) -> Observation:
    """The error a command showed and what made it pass: the files changed in between and the prompt."""
    files = failure.edits_since[:5]
    steps = []
    if failure.changes:
        steps.append("changing " + "; ".join(failure.changes))
    elif files:
        steps.append("changing " + ", ".join(files))
    if failure.ran_since:
        steps.append("running " + ", ".join(f"`{c}`" for c in failure.ran_since))
    how = f" after {' and '.join(steps)}" if steps else ""
    reason = first_sentence(state.last_prompt, REASON_CHARS)
    why = f" (while working on: {reason})" if reason else ""
    tests = f" ({', '.join(failure.tests)})" if failure.tests else ""
    result = counts(output) if is_test(command) else ""
    passed = "it passed" + (f" ({result})" if result else "")
    if command_key(command) == failure.key and " ".join(command.split()) != " ".join(failure.command.split()):
        passed += f" as `{snippet(command)}`"
    content = f"Fixed: `{snippet(failure.command)}`{tests} failed with {failure.error}; {passed}{how}{why}."
    return Observation(ERROR_FIX, content, 0.9 if steps else 0.7, f"fix:{failure.key}", files=files, tool=tool,
                       command=command, importance="high")  # fmt: skip


def outcome(event: HookEvent) -> tuple[bool, str]:
    """Whether the command failed, and its output (stderr first)."""
    response = event.tool_response
    output = event.error
    failed = event.failed
    if isinstance(response, dict):
        keys = ("stderr", "stdout", "output", "error", "llmContent")  # llmContent: Gemini CLI's shell tool
        output = "\n".join(str(response[k]) for k in keys if response.get(k))
        output = output or event.error
        code = response.get("exit_code", response.get("exitCode", response.get("returncode", response.get("code"))))
        if isinstance(code, int) and code != 0:
            failed = True
        if response.get("is_error") or response.get("interrupted") or response.get("success") is False:
            failed = True
    elif isinstance(response, str):
        output = response or output
    if not failed and output:
        failed = bool(_EXIT_CODE.search(output)) or _tests_failed(output)
    return failed, output


def _tests_failed(output: str) -> bool:
    return any(kind in ("failed", "failing", "error", "errors") and int(n) > 0 for n, kind in _COUNTS.findall(output))


def counts(output: str) -> str:
    """A test run's counts, e.g. '2 failed, 10 passed'."""
    found = _COUNTS.findall(output[-4000:])
    seen: dict[str, str] = {}
    for number, kind in found:
        seen[kind] = number
    return ", ".join(f"{n} {k}" for k, n in seen.items())


def error_excerpt(output: str) -> str:
    """The line of the output that says what went wrong: the last one naming an error (an exception type, a panic,
    a tool's "error:"; tracebacks end with it), else the last one saying something failed; lines that only count
    (failed=0) are skipped."""
    lines = [ln for ln in output.splitlines() if ln.strip() and not _COUNTER_LINE.search(ln)]
    named = [ln for ln in lines if _NAMED_ERROR.search(ln)]
    failing = [ln for ln in lines if _ERROR_LINE.match(ln)]
    line = (named or failing or [""])[-1]
    line = " ".join(line.strip(" │╷╵|>").split())
    return line[:ERROR_CHARS]


def failing_tests(output: str) -> list[str]:
    """The failing tests a runner's output names (at most three)."""
    names: list[str] = []
    for match in _FAILING_TEST.finditer(output):
        name = next((g for g in match.groups() if g), "").rstrip(":")
        if name and name not in names:
            names.append(name)
    return names[:3]


def without_environment(command: str) -> str:
    """The command without the VAR=value words before it (settings, and often credentials, not the command)."""
    return _ENVIRONMENT.sub("", command)


def command_key(command: str) -> str:
    """What identifies a command across retries: its program and sub-command, and for a test run its runner."""
    command = _CD_PREFIX.sub("", command)
    for phrase in _TEST_PHRASES:
        if phrase in command:
            return phrase
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w or w.startswith("-")]  # VAR=value prefixes
    words = [os.path.basename(w) if i == 0 else w for i, w in enumerate(words)]
    if words and words[0] in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        words = words[2:]
    for word in _TEST_WORDS:
        if words and words[0] == word:
            return word
    return " ".join(w for w in words[:3] if not w.startswith("-"))


def is_test(command: str) -> bool:
    lowered = command.lower()
    return any(p in lowered for p in _TEST_PHRASES) or any(re.search(rf"\b{w}\b", lowered) for w in _TEST_WORDS)


def looking(command: str) -> bool:
    """Only looks around (ls, cat, git status ...): every part of a pipeline or chain does."""
    for part in re.split(r"\|\||&&|[|;]", command):
        words = part.split()
        if not words:
            continue
        program = os.path.basename(words[0])
        if program == "git" and len(words) > 1 and words[1] in _LOOKING_GIT:
            continue
        if program not in _LOOKING:
            return False
    return True


# --- text ------------------------------------------------------------------------------------------------


def first_sentence(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if not flat:
        return ""
    first = _SENTENCE.split(flat, maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def snippet(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    flat = " / ".join(lines[:3])
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def _words_key(text: str) -> str:
    return "words:" + " ".join(sorted(set(words(text))))[:200]


def words(text: str) -> list[str]:
    """The words of a text for near-duplicate comparison: lowercased, numbers folded."""
    return [re.sub(r"\d+", "#", w) for w in re.findall(r"[a-z0-9_./-]+", text.lower()) if len(w) > 1]
