"""engram.plainhttp's request, the `engram` commands' plain http client on a raw socket, sends what http.client sends
and reads every answer as http.client reads it (lengths, chunks, interim answers, cut and garbled answers), against a
stand-in server that records each request's bytes and answers canned ones."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram import cli, plainhttp

JSON = b'{"memories": []}'
ANSWERS = {
    "length": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n" + JSON,
    "chunked": b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b'6\r\n{"memo\r\na;x=1\r\nries": []}\r\n0\r\n\r\n',
    "until-close": b"HTTP/1.0 404 Not Found\r\n\r\n" + JSON,
    "interim": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n" + JSON,
    "no-content": b"HTTP/1.1 204 No Content\r\n\r\n",
    "no-reason": b"HTTP/1.1 500\r\nContent-Length: 2\r\n\r\n{}",
}
BROKEN = {
    "garbled": b"SMTP ready\r\n\r\n",
    "cut": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + JSON,
    "silent": b"",
    "bad-chunk": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}


class StandIn:
    """A one-answer-per-connection server: records each request's bytes, sends ``answer``, closes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answer = b""
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.requests.append(_read_request(conn))
                conn.sendall(self.answer)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.sock.close()


def _plain(server: StandIn, method: str = "GET", body: bytes | None = None) -> tuple[int, str, bytes]:
    headers = {"Authorization": "Bearer k", "Accept": "application/json"}
    return plainhttp.request(method, "127.0.0.1", server.port, "/v1/memories?limit=5", headers=headers, body=body,
                             timeout=5)  # fmt: skip


def _stdlib(server: StandIn, method: str = "GET", body: bytes | None = None) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        headers = {"Authorization": "Bearer k", "Accept": "application/json"}
        connection.request(method, "/v1/memories?limit=5", body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.reason, answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize(("method", "body"), [("GET", None), ("POST", b'{"query": "x"}'), ("DELETE", None),
                                              ("POST", None)])  # fmt: skip
def test_the_request_is_what_http_client_sends(stand_in: StandIn, method: str, body: bytes | None) -> None:
    stand_in.answer = ANSWERS["length"]
    _plain(stand_in, method, body)
    _stdlib(stand_in, method, body)
    assert stand_in.requests[0] == stand_in.requests[1]


@pytest.mark.parametrize("kind", ANSWERS)
def test_an_answer_is_read_as_http_client_reads_it(stand_in: StandIn, kind: str) -> None:
    stand_in.answer = ANSWERS[kind]
    assert _plain(stand_in) == _stdlib(stand_in)


@pytest.mark.parametrize("kind", BROKEN)
def test_a_cut_or_garbled_answer_is_an_oserror(stand_in: StandIn, kind: str) -> None:
    stand_in.answer = BROKEN[kind]
    with pytest.raises(OSError):
        _plain(stand_in)
    with pytest.raises((http.client.HTTPException, OSError)):
        _stdlib(stand_in)


def test_the_command_says_a_garbled_answer_as_before(stand_in: StandIn, capsys: pytest.CaptureFixture[str]) -> None:
    stand_in.answer = BROKEN["garbled"]
    url = f"http://127.0.0.1:{stand_in.port}"
    assert cli.main(["search", "x", "--url", url]) == 2
    assert capsys.readouterr().err == (
        f"engram: no Engram node answers at {url} (OSError). Start one with `engram serve`, or pass --url / --home.\n"
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["--url", "http://127.0.0.1:99999"], "engram: Port out of range 0-65535\n"),
     (["--url", "http://127.0.0.1:9", "--agent", "a\nb"], "engram: Invalid header value b'a\\nb'\n")],
)  # fmt: skip
def test_a_request_that_cannot_be_sent_is_one_line(argv: list[str], said: str, tmp_path: Path) -> None:
    """In a fresh interpreter: main's ssl-less http.client made these end in an ImportError from urllib.request."""
    run = "from engram.cli import run; run()"  # what the `engram` script runs
    env = {name: value for name, value in os.environ.items() if not name.startswith("ENGRAM_")}
    done = subprocess.run([sys.executable, "-c", run, "search", "x", *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=env | {"ENGRAM_HOME": str(tmp_path)}, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (1, "", said)


def test_the_script_leaves_quickly_with_its_whole_answer_printed_and_its_atexit_handlers_run(
    stand_in: StandIn, tmp_path: Path
) -> None:
    """engram.cli.run, the `engram` script: an everyday command ends in os._exit (no interpreter teardown) with the
    collector off, yet a long answer reaches a pipe whole and atexit handlers still run; other commands exit as
    before, collector on."""
    memories = [{"id": f"{i:08d}", "content": "x" * 200} for i in range(300)]  # ~70 KB: several buffer flushes
    body = json.dumps({"memories": memories, "next_page_token": None}).encode()
    stand_in.answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    run = ("import atexit, gc, sys; atexit.register(lambda: print('atexit, collector on:', gc.isenabled(), "
           "file=sys.stderr)); from engram.cli import run; run()")  # fmt: skip
    env = {name: value for name, value in os.environ.items() if not name.startswith("ENGRAM_")}
    env |= {"ENGRAM_HOME": str(tmp_path)}
    url = f"http://127.0.0.1:{stand_in.port}"
    done = subprocess.run([sys.executable, "-c", run, "list", "--json", "--url", url], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=60)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "atexit, collector on: False\n")
    assert json.loads(done.stdout) == json.loads(body)
    done = subprocess.run([sys.executable, "-c", run, "--version"], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, f"engram {engram.__version__}\n",
                                                           "atexit, collector on: True\n")  # fmt: skip


def test_control_characters_are_refused_as_http_client_refuses_them(stand_in: StandIn) -> None:
    with pytest.raises(ValueError, match="Invalid header value b'a\\\\nb'"):
        plainhttp.request("GET", "127.0.0.1", stand_in.port, "/", headers={"X-Engram-Agent-ID": "a\nb"}, body=None,
                          timeout=5)  # fmt: skip
    with pytest.raises(ValueError, match="URL can't contain control characters"):
        plainhttp.request("GET", "127.0.0.1", stand_in.port, "/a b", headers={}, body=None, timeout=5)
    assert stand_in.requests == []
