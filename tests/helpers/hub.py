"""A real HTTP server on 127.0.0.1 (port 0) that serves model files as the Hugging Face hub does."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Hub:
    """What the test server serves and what it was asked for."""

    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # URL path -> body
    redirects: dict[str, str] = field(default_factory=dict)  # URL path -> Location
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # URL path -> extra response headers
    token: str | None = None
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, hub_id: str, model_dir: Path, *, revision: str = "main", lfs: bool = True) -> None:
        """Serve a model directory (and its sub-folders, as 1_Pooling/) like the Hugging Face hub: the weights via a
        redirect to a "CDN"."""
        for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
            relative = path.relative_to(model_dir).as_posix()
            url = f"/{hub_id}/resolve/{revision}/{relative}"
            body = path.read_bytes()
            if lfs and path.name == "model.safetensors":
                sha = hashlib.sha256(body).hexdigest()
                self.redirects[url] = f"/cdn/{sha}"
                self.headers[url] = {"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(body))}
                self.files[f"/cdn/{sha}"] = body
            else:
                self.files[url] = body


class _HubHandler(BaseHTTPRequestHandler):
    server: _HubServer

    def do_GET(self) -> None:
        hub = self.server.hub
        with hub.lock:
            hub.requests.append(self.path)
        if hub.token is not None and self.headers.get("Authorization") != f"Bearer {hub.token}":
            self._reply(401, b"unauthorized")
        elif self.path in hub.redirects:
            self._reply(302, b"", {"Location": hub.redirects[self.path], **hub.headers.get(self.path, {})})
        elif self.path in hub.files:
            self._reply(200, hub.files[self.path], hub.headers.get(self.path, {}))
        else:
            self._reply(404, b"Entry not found")

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _HubServer(ThreadingHTTPServer):
    hub: Hub


@pytest.fixture(name="hub")
def hub_fixture() -> Iterator[Hub]:
    """``hub``: a hub serving nothing yet; a test module imports it as ``hub_fixture``."""
    server = _HubServer(("127.0.0.1", 0), _HubHandler)
    server.hub = Hub(url=f"http://127.0.0.1:{server.server_address[1]}")
    # A short poll interval: shutdown() waits up to one interval, 0.5 s by default, per test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server.hub
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
