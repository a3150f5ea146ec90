"""No secret reaches the hooks' local files: the held-out-style secret formats of issue 33 (a cloud key pair's secret
half written apart from its id, Braintree tokens with a mixed-case merchant, Sentry tokens that are not JWTs) are
fired through the hook commands `engram hooks install` wrote, as Claude Code runs them, with the node down, and
afterwards no distinctive slice of any of them is in any file the hooks wrote (the spool, the session state)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import engram_env
from tests.e2e.test_agent_hooks import Agent, _project, engram
from tests.helpers.secret_corpus import SecretCase, distinctive_slices, load_secrets

pytestmark = [pytest.mark.e2e]

WIDTH = 12


def held_out(case: SecretCase) -> bool:
    """The corpus lines of the classes issue 33 found reaching disk."""
    lowered = case.text.lower()
    return "aws_secret_key" in case.kinds or any(
        word in lowered for word in ("sntrys_", "access_token$", "accesskey secret", "tencent cloud secret")
    )


def _events(cases: list[SecretCase], canary: str) -> list[dict[str, Any]]:
    texts = "\n\n".join(case.text for case in cases)
    return [
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "prompt": f"{canary} I decided to rotate these keys:\n{texts}"},
        {
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_01",
            "tool_input": {"command": f"pytest tests/test_keys.py -q  # {canary}"},
            "tool_response": {"stdout": f"{canary}\n{texts}\n1 failed", "stderr": "", "interrupted": False},
        },
        {
            "hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_02",
            "tool_input": {"command": "deploy --region eu-west-1"}, "error": f"{canary} deploy failed:\n{texts}",
        },
        {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": f"{canary} {texts}"},
    ]  # fmt: skip


def test_held_out_secret_formats_never_reach_the_hooks_local_files(tmp_path: Path, model_cache: Path) -> None:
    cases = [case for case in load_secrets() if held_out(case)]
    assert len(cases) >= 12
    home, engram_home = tmp_path / "user", tmp_path / "engram-home"
    home.mkdir()
    # No node runs there: every capture stays in the spool, as on a laptop whose node is down.
    env = engram_env(model_cache, HOME=str(home), ENGRAM_HOME=str(engram_home))
    project = _project(tmp_path)
    assert engram("hooks", "install", "claude-code", env=env, cwd=project).returncode == 0
    agent = Agent(home, env, project, engram_home)
    canary = f"canary{uuid.uuid4().hex}"

    agent.replay(f"keys-{tmp_path.name}", _events(cases, canary))

    files = [p for root in (engram_home, home) for p in root.rglob("*") if p.is_file()]
    written = "\n".join(p.read_bytes().decode("utf-8", "replace") for p in files)
    assert canary in written  # what was around the secrets did reach the local files
    for case in cases:
        for secret in case.secrets:
            leaked = [piece for piece in distinctive_slices(secret, WIDTH) if piece in written]
            assert not leaked, (case.id, leaked[:3])
