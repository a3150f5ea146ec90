"""The LLM port and its adapter for OpenAI-compatible chat-completions endpoints (OpenAI, Ollama, vLLM, ...)."""

from __future__ import annotations

import asyncio
import urllib.parse
from types import TracebackType
from typing import Any, Protocol, Self

import httpx

from engram.errors import EngramError

DEFAULT_TEMPERATURE = 0.2
DEFAULT_MAX_TOKENS = 400
DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_ERROR_DETAIL_CHARS = 200
RETRYABLE_STATUSES = frozenset({408, 425, 429})


class LlmError(EngramError):
    """The LLM did not answer usefully. `retryable` says whether asking again later may succeed."""

    code = "unavailable"

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class Llm(Protocol):
    """A chat model: messages in, the assistant's text out. Raises LlmError."""

    @property
    def model(self) -> str: ...

    async def complete(
        self, messages: list[dict[str, str]], *, temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str: ...  # fmt: skip


class ChatClient:
    """Calls `{base_url}/chat/completions` of an OpenAI-compatible server.

    The API key is only ever put in the Authorization header: it is never part of an error message,
    a log line or this object's repr.
    """

    def __init__(
        self, base_url: str, *, model: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self._url = f"{base_url.rstrip('/')}/chat/completions"
        self._shown = redact_url(self._url)
        self._model = model
        self._timeout = timeout
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout))

    def __repr__(self) -> str:
        return f"ChatClient(url={self._shown!r}, model={self._model!r})"

    @property
    def model(self) -> str:
        return self._model

    @property
    def url(self) -> str:
        """The endpoint, without any credentials the configured URL may carry (safe to log)."""
        return self._shown

    async def complete(
        self, messages: list[dict[str, str]], *, temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:  # fmt: skip
        """Returns the first choice's message content. Raises LlmError (retryable for 429, 5xx, timeouts,
        connection failures and malformed answers; not retryable for other 4xx answers)."""
        payload = {"model": self._model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        try:
            # httpx's timeout bounds each phase; this bounds the whole call, so a server that trickles
            # bytes cannot hold a worker forever.
            async with asyncio.timeout(self._timeout):
                response = await self._http.post(self._url, json=payload)
        except (TimeoutError, httpx.TimeoutException) as e:
            raise LlmError(f"The LLM at {self._shown} did not answer within {self._timeout:g}s.", retryable=True) from e
        except httpx.TransportError as e:
            raise LlmError(f"Cannot reach the LLM at {self._shown}: {type(e).__name__}.", retryable=True) from e
        _raise_for_status(response, self._shown)
        return _content(response, self._shown)

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def redact_url(url: str) -> str:
    """The URL without user:password@ (DESIGN: passwords in URLs are secrets), for messages and logs."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def is_retryable_status(status: int) -> bool:
    """Rate limits, server errors and a few transient 4xx answers are worth retrying; other 4xx are not."""
    return status >= 500 or status in RETRYABLE_STATUSES


def _raise_for_status(response: httpx.Response, url: str) -> None:
    if response.is_success:
        return
    detail = response.text[:MAX_ERROR_DETAIL_CHARS].strip()
    hint = " Check ENGRAM_LLM_API_KEY and ENGRAM_LLM_MODEL." if response.status_code in (401, 403, 404) else ""
    raise LlmError(
        f"The LLM at {url} answered HTTP {response.status_code}: {detail or response.reason_phrase}.{hint}",
        retryable=is_retryable_status(response.status_code),
        status=response.status_code,
    )


def _content(response: httpx.Response, url: str) -> str:
    try:
        data: Any = response.json()
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        # A proxy or overloaded server sometimes answers 200 with junk; another attempt may do better.
        raise LlmError(f"The LLM at {url} sent an answer that is not a chat completion.", retryable=True) from e
    if not isinstance(content, str):
        raise LlmError(f"The LLM at {url} sent a chat completion without text content.", retryable=True)
    return content
