"""ChatClient against a real (local, fake) OpenAI-compatible server; and the enricher's answer parsing."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

from engram.models.llm import ChatClient, LlmError, redact_url
from engram.services.consolidation.enrichment import build_messages, parse_questions, skip_reason
from tests.helpers.fake_llm import FakeLlm, fake_llm_server

pytestmark = pytest.mark.anyio

API_KEY = "sk-test-0123456789abcdef"
MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "<memory>\nWe use Postgres\n</memory>"},
]


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with fake_llm_server() as server:
        yield server


async def test_complete_returns_the_assistant_text_and_sends_model_and_key(fake: FakeLlm) -> None:
    async with ChatClient(fake.url, model="tiny-model", api_key=API_KEY, timeout=5) as client:
        text = await client.complete(MESSAGES, temperature=0.1, max_tokens=123)
    assert json.loads(text) == ["What is known about We use Postgres?", "Which facts mention We use Postgres?",
                                "Why does We use Postgres matter?"]  # fmt: skip
    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {"model": "tiny-model", "messages": MESSAGES, "temperature": 0.1, "max_tokens": 123}


async def test_no_authorization_header_without_a_key(fake: FakeLlm) -> None:
    async with ChatClient(fake.url + "/", model="m", timeout=5) as client:
        await client.complete(MESSAGES)
    assert "authorization" not in fake.requests[0].headers
    assert fake.requests[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("status", [500, 502, 503, 429, 408])
async def test_server_errors_and_rate_limits_are_retryable(fake: FakeLlm, status: int) -> None:
    fake.fail_next, fake.fail_status = 1, status
    async with ChatClient(fake.url, model="m", api_key=API_KEY, timeout=5) as client:
        with pytest.raises(LlmError) as caught:
            await client.complete(MESSAGES)
        assert caught.value.retryable and caught.value.status == status
        assert API_KEY not in str(caught.value)
        assert await client.complete(MESSAGES)  # the next request succeeds


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_other_client_errors_are_not_retryable(fake: FakeLlm, status: int) -> None:
    fake.fail_next, fake.fail_status = 1, status
    async with ChatClient(fake.url, model="m", api_key=API_KEY, timeout=5) as client:
        with pytest.raises(LlmError) as caught:
            await client.complete(MESSAGES)
    assert not caught.value.retryable and caught.value.status == status
    assert f"HTTP {status}" in str(caught.value) and API_KEY not in str(caught.value)


async def test_a_hanging_server_times_out_as_retryable(fake: FakeLlm) -> None:
    fake.mode = "hang"
    started = time.monotonic()
    async with ChatClient(fake.url, model="m", api_key=API_KEY, timeout=0.3) as client:
        with pytest.raises(LlmError, match=r"did not answer within 0\.3s") as caught:
            await client.complete(MESSAGES)
    assert caught.value.retryable
    assert time.monotonic() - started < 5


async def test_an_unreachable_server_is_retryable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with ChatClient(f"http://127.0.0.1:{port}/v1", model="m", timeout=5) as client:
        with pytest.raises(LlmError, match="Cannot reach") as caught:
            await client.complete(MESSAGES)
    assert caught.value.retryable


async def test_a_200_that_is_not_a_chat_completion_is_retryable(fake: FakeLlm) -> None:
    fake.mode = "not_json"
    async with ChatClient(fake.url, model="m", timeout=5) as client:
        with pytest.raises(LlmError, match="not a chat completion") as caught:
            await client.complete(MESSAGES)
    assert caught.value.retryable


def test_credentials_in_the_url_are_never_shown() -> None:
    client_url = redact_url("https://user:hunter2@llm.example.com/v1/chat/completions")
    assert client_url == "https://llm.example.com/v1/chat/completions"
    assert redact_url("http://127.0.0.1:1234/v1") == "http://127.0.0.1:1234/v1"


async def test_repr_and_url_hide_the_key_and_url_credentials() -> None:
    async with ChatClient("https://u:pw@llm.example.com/v1", model="m", api_key=API_KEY) as client:
        assert API_KEY not in repr(client) and "pw" not in repr(client) and "pw@" not in client.url


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('["What DB do we use?", "Which Postgres version runs in prod?"]',
         ["What DB do we use?", "Which Postgres version runs in prod?"]),
        ('Sure!\n```json\n["What DB do we use?"]\n```', ["What DB do we use?"]),
        ('{"questions": ["What DB do we use?"]}', ["What DB do we use?"]),
        ("1. What DB do we use?\n2) Which version is it?\n- Who chose Postgres?",
         ["What DB do we use?", "Which version is it?", "Who chose Postgres?"]),
        ("Here you go:\nWhat DB do we use?\nthanks", ["What DB do we use?"]),
        ('["What DB do we use?", "what db do we use", "  ", 7, "' + "x" * 300 + '?", "Ok?"]', ["What DB do we use?"]),
        ('["Question one here?", "Question two here?", "Question three here?", "Question four here?", '
         '"Question five here?", "Question six here?"]',
         ["Question one here?", "Question two here?", "Question three here?", "Question four here?",
          "Question five here?"]),
        ("I am sorry, I cannot help with that.", []),
        ("[]", []),
    ],
)  # fmt: skip
def test_parse_questions_is_robust(answer: str, expected: list[str]) -> None:
    assert parse_questions(answer) == expected


def test_prompt_carries_the_memory_and_asks_for_a_json_array() -> None:
    messages = build_messages({"content": "We use PostgreSQL 16", "memory_type": "decision", "topics": ["db"]})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "<memory>\nWe use PostgreSQL 16\n</memory>" in messages[1]["content"]
    assert "JSON array" in messages[0]["content"] and "Topics: db" in messages[1]["content"]


def test_secret_memories_and_memories_with_questions_are_skipped() -> None:
    assert "never leave" in skip_reason({"content": "x", "sensitivity": "secret"})
    assert skip_reason({"content": "x", "questions": ["q?"]}) == "already has questions"
    assert skip_reason({"content": "x", "sensitivity": "private"}) == ""
