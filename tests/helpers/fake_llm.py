"""A small OpenAI-compatible chat-completions server for tests, with switchable failures; it records requests."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_HANG_SECONDS = 30.0
GARBAGE = "I am sorry, but I cannot help with that request today."
_MEMORY = re.compile(r"<memory>\s*(.*?)\s*</memory>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def user_text(self) -> str:
        """The content of the last user message."""
        users = [m.get("content", "") for m in self.body.get("messages", []) if m.get("role") == "user"]
        return users[-1] if users else ""


def canned_questions(user_text: str) -> list[str]:
    """Deterministic questions derived from the memory in the prompt (or the whole user message)."""
    found = _MEMORY.search(user_text)
    words = (found.group(1) if found else user_text).split()
    subject = " ".join(words[:6]) or "nothing"
    return [f"What is known about {subject}?", f"Which facts mention {subject}?", f"Why does {subject} matter?"]


@dataclass
class FakeLlm:
    """Behaviour is switched by setting attributes between requests:

    - `fail_next` > 0: that many next requests answer `fail_status` (500 by default; 429 for rate limits);
    - `mode`: "questions" (a JSON array from `questions_for`), "garbage" (prose without questions),
      "not_json" (a 200 that is not a chat completion), "hang" (no answer for `hang_seconds`).
    """

    mode: str = "questions"
    fail_next: int = 0
    fail_status: int = 500
    hang_seconds: float = DEFAULT_HANG_SECONDS
    questions_for: Callable[[str], list[str]] = canned_questions
    requests: list[RecordedRequest] = field(default_factory=list)
    url: str = ""  # the base URL clients use, ".../v1"
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _released: threading.Event = field(default_factory=threading.Event, repr=False)

    def respond(self, request: RecordedRequest) -> tuple[int, bytes]:
        """The status and body for one request (runs on the server's thread)."""
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            failing = self.fail_next > 0
            if failing:
                self.fail_next -= 1
        if failing:
            return self.fail_status, json.dumps(
                {"error": {"message": "injected failure", "type": "server_error"}}
            ).encode()
        if self.mode == "hang":
            self._released.wait(self.hang_seconds)
            return 503, b'{"error": {"message": "hung"}}'
        if self.mode == "not_json":
            return 200, b"<html>proxy error</html>"
        text = GARBAGE if self.mode == "garbage" else json.dumps(self.questions_for(request.user_text))
        return 200, json.dumps(completion(text, model=request.body.get("model", ""))).encode()

    def release(self) -> None:
        """Ends every hanging request at once (used on shutdown)."""
        self._released.set()

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Blocks until `count` requests have arrived (True) or timeout seconds have passed (False).
        From async code: `await asyncio.to_thread(fake.wait_for_requests, n, timeout)`."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)


def completion(text: str, *, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion object with one choice."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _handler(fake: FakeLlm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            recorded = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            if not self.path.endswith("/chat/completions"):
                status, payload = 404, b'{"error": {"message": "not found"}}'
            else:
                status, payload = fake.respond(recorded)
            with contextlib.suppress(OSError):  # the client may have given up (timeouts)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return None  # keep test output clean

    return Handler


@contextlib.contextmanager
def fake_llm_server(fake: FakeLlm | None = None) -> Iterator[FakeLlm]:
    """Serves `fake` on 127.0.0.1 (random port) in a background thread; fake.url is the base URL."""
    fake = fake or FakeLlm()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="fake-llm", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
